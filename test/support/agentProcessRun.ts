// The body of test/support/agentProcessMain.ts, which imports it once after setting Buffer's pool, as the CLI's
// entry (src/cli/main.ts) imports its program: one split point, so the bench's bundle has the CLI's layout.
import { SpeakerAgent } from '../../src/agent/agent.js';
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';
import { ensureIdentity } from '../../src/agent/identity.js';
import { AmixerMixer } from '../../src/agent/mixer/amixerMixer.js';
import { loadSettings, requireServerSettings } from '../../src/agent/settings.js';
import { createLogger } from '../../src/common/logger.js';
import { startAgentMemoryKeeper } from '../../src/cli/daemon.js';

const { settings, stateDir } = loadSettings();
requireServerSettings(settings);
const logger = createLogger({ level: settings.log.level, name: 'speaker-agent' });
const { identity } = await ensureIdentity(stateDir);
const agent = new SpeakerAgent({
  settings,
  identity,
  audio: new PortAudioBackend(),
  mixer: new AmixerMixer({ card: settings.mixer.card, control: settings.mixer.control }),
  logger,
});
await agent.start();
startAgentMemoryKeeper(agent, logger); // as the daemon runs it
const stop = () =>
  void agent
    .stop()
    .catch((err: unknown) => logger.error({ err }, 'stop failed'))
    .finally(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
