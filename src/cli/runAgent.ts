// The `run` command's work: sound (real or virtual), server (configured or a local companion), identity,
// mixer, the SpeakerAgent inside the daemon wrapper, and the --demo script.
import { projectVersion } from '../common/projectRoot.js';
import os from 'node:os';
import path from 'node:path';
import { SpeakerAgent } from '../agent/agent.js';
import { AgentError } from '../agent/errors.js';
import { ensureIdentity, fingerprint, loadIdentity } from '../agent/identity.js';
import { loadSettings, requireServerSettings, settingFromEnv, type Settings } from '../agent/settings.js';
import { refuseSecondDaemon, statusSocketCandidates } from '../agent/statusServer.js';
import { micStatePath } from '../agent/micMute.js';
import { createLogger } from '../common/logger.js';
import { isServerConfigured, startLocalCompanion } from './cliContext.js';
import { wireDevice } from '../agent/device.js';
import { attachConversationPrinter, describeFunction } from './conversation.js';
import { startDaemon } from './daemon.js';
import { runDemo } from './demo.js';
import { hasSoundSystem, startVirtualAudio } from './localSetup.js';
import { printLine } from './output.js';
import { stdoutFd } from './stdio.js';
import { processVariable } from '../common/processEnv.js';
import { VOLATILE_STATE_FIX, volatileStorage } from '../agent/stateStorage.js';

export interface RunOptions {
  demo?: boolean;
  conversation?: boolean;
  companion: boolean;
  virtualAudio: 'auto' | 'always' | 'never';
  demoTimeout: number;
}

export async function runAgent(o: RunOptions): Promise<number> {
  const human = Boolean(o.demo || o.conversation);
  // The conversation owns stdout; logs (JSON) go to stderr, quieter unless asked.
  const loaded = loadSettings();
  // The conversation is quieter (warn) unless the variable asks for a level; the daemon logs at log.level.
  const logger = createLogger(
    human
      ? { destination: 2, level: settingFromEnv('log.level') ? loaded.settings.log.level : 'warn' }
      : { destination: stdoutFd(), level: loaded.settings.log.level },
  );
  const print = human ? printLine : () => {};
  if (loaded.unknownKeys.length) {
    logger.warn({ keys: loaded.unknownKeys, file: loaded.configPath }, 'config.json has settings the agent does not know (ignored): a typo?');
  }
  let settings: Settings = loaded.settings;
  const version = projectVersion();

  // 1. sound: the real card, or the virtual one
  let audioKind: 'system' | 'virtual' = 'system';
  if (o.virtualAudio === 'always' || (o.virtualAudio === 'auto' && !hasSoundSystem())) {
    // Left running at exit (like a user's sound server): stopping it under the process's own PulseAudio
    // client threads can hang the exit, and the next run reuses it.
    const dir = processVariable('pulseDir') ?? path.join(os.tmpdir(), `speaker-agent-pulse-${process.getuid?.() ?? 0}`);
    const va = await startVirtualAudio(dir);
    audioKind = 'virtual';
    print(`audio     no sound card here: using the virtual sound card (PulseAudio, ${va.env.PULSE_SERVER})`);
    // Nobody can speak into a virtual microphone: on the README's first command (`npm start`, which shows the
    // conversation) the scripted user speaks, so a fresh machine shows a whole exchange. --no-demo keeps it quiet.
    if (o.conversation && o.demo === undefined && o.virtualAudio === 'auto') {
      o.demo = true;
      print('demo      a scripted user will speak into the virtual microphone (--no-demo to just run)');
    }
  }

  // one agent per device: before the companion, the sound card and the call
  await refuseSecondDaemon(statusSocketCandidates(loaded.stateDir));

  // 2. server: the configured one, or a local companion server with a default workspace
  let companion: Awaited<ReturnType<typeof startLocalCompanion>> | null = null;
  if (!isServerConfigured(loaded)) {
    if (!o.companion) {
      throw new AgentError('config_invalid', 'no server configured: run `speaker-agent enroll --server-url URL` (or drop --no-companion)');
    }
    companion = await startLocalCompanion(path.join(loaded.stateDir, 'companion'), logger);
    settings = { ...settings, server: { ...settings.server, url: companion.url, workspaceKey: companion.workspaceKey } };
    print(`server    no server configured: started a local companion server at ${companion.url} (workspace "${companion.workspaceName}")`);
  }
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  let agent: SpeakerAgent;
  let mixer: Awaited<ReturnType<typeof wireDevice>>['mixer'];
  try {
    requireServerSettings(settings);

    // 3. identity: created on first run against the local companion; otherwise `enroll` must have run
    const identity = companion ? (await ensureIdentity(loaded.stateDir)).identity : (await loadIdentity(loaded.stateDir)).identity;
    print(`device    client ${identity.clientId}, secret ${fingerprint(identity.clientSecret)}`);
    const volatile = volatileStorage(loaded.stateDir);
    if (volatile) logger.warn({ stateDir: loaded.stateDir, fix: VOLATILE_STATE_FIX }, `the identity and the privacy mute will not survive a reboot: ${volatile}`);

    const wired = await wireDevice(settings, identity);
    mixer = wired.mixer;
    agent = new SpeakerAgent({ settings, identity, client: wired.client, audio: wired.audio, mixer, transportFactory: wired.transportFactory, logger, micStateFile: micStatePath(loaded.stateDir) });
    if (human) attachConversationPrinter(agent, print);

    daemon = await startDaemon({
      agent,
      logger,
      version,
      statusSocket: statusSocketCandidates(loaded.stateDir)[0],
      companion,
      audio: audioKind,
    });
  } catch (err) {
    // a start that fails here may be held before the exit (under systemd): the local companion must not keep
    // serving and holding its port meanwhile (startDaemon closes it too; a second close does nothing)
    await companion?.close().catch(() => undefined);
    throw err;
  }

  if (o.demo) {
    runDemo(agent, { print, timeoutMs: o.demoTimeout * 1000 }).then(
      async (r) => {
        const vol = await mixer.get().catch(() => undefined);
        print(`demo      done: ${describeFunction(r.function).replace(/^function\s+/, '')}; mixer reads ${vol ? `${vol.volumePercent}%` : 'unknown'}`);
        await daemon.shutdown('demo finished', 0);
      },
      async (err: Error) => {
        print(`demo      FAILED: ${err.message}`);
        await daemon.shutdown('demo failed', 1);
      },
    );
  }
  return daemon.done;
}
