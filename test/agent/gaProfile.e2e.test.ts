// The agent's `server.protocol: openai-realtime` profile end to end against the real companion's GA routes: a
// client key from /v1/realtime/client_secrets (device headers go there only), the offer to /v1/realtime/calls with
// the key alone, then the existing scenario: the user speaks into the virtual microphone, the companion hears it
// and calls set_device_volume, the real mixer changes, the spoken confirmation comes out of the virtual speaker;
// the server goes away and comes back on the same port: a new call without restarting the agent.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpeakerAgent } from '../../src/agent/agent.js';
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';
import { ensureIdentity, type Identity } from '../../src/agent/identity.js';
import { AmixerMixer } from '../../src/agent/mixer/amixerMixer.js';
import { parseSettings } from '../../src/agent/settings.js';
import { sha256Hex } from '../../src/companion/auth/secrets.js';
import { createWorkspace } from '../../src/companion/db/workspaces.js';
import { startCompanionServer, type CompanionServer } from '../../src/companion/server.js';
import { loadCompanionSettings } from '../../src/companion/settings.js';
import { createLogger } from '../../src/common/logger.js';
import { rms, startRecording, waitUntil } from '../support/audioCapture.js';
import { speechClip } from '../support/speechWav.js';
import { VIRTUAL } from '../support/virtualAudio.js';

const run = promisify(execFile);
let dataDir: string;
let port: number;
let companion: CompanionServer;
let agent: SpeakerAgent;
let identity: Identity;
const workspaceKey = `wk_${randomBytes(24).toString('hex')}`;

async function startCompanion(p = 0): Promise<CompanionServer> {
  const settings = loadCompanionSettings({ host: '127.0.0.1', port: p, dataDir, log: { level: 'silent' } }, {});
  return startCompanionServer(settings);
}

async function amixerPercent(): Promise<number> {
  const { stdout } = await run('amixer', ['-D', 'default', 'sget', VIRTUAL.mixerControl], { env: process.env });
  return Number(/\[(\d+)%\]/.exec(stdout)![1]);
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'ga-profile-'));
  companion = await startCompanion();
  port = companion.port;
  createWorkspace(companion.context.db, 'ga-profile', sha256Hex(workspaceKey));
  identity = (await ensureIdentity(path.join(dataDir, 'state'))).identity;
  const mixer = new AmixerMixer({ card: 'default', control: VIRTUAL.mixerControl });
  await mixer.setMuted(false);
  await mixer.setVolume(100);
  const settings = parseSettings({
    server: { url: companion.url, workspaceKey, protocol: 'openai-realtime' },
    audio: { captureDevice: 'default', playbackDevice: 'default', duplex: 'half' },
    mixer: { card: 'default', control: VIRTUAL.mixerControl },
    // the microphone always open: these tests speak without the wake word (issue #16's default)
    listening: { mode: 'always' },
  });
  agent = new SpeakerAgent({ settings, identity, audio: new PortAudioBackend(), mixer, logger: createLogger({ level: 'silent' }) });
  await agent.start();
  await waitUntil(() => agent.snapshot().state === 'connected', 20_000, 'the first GA call');
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await companion?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('agent profile openai-realtime against the companion GA routes', () => {
  it('the call is a GA call (its id from Location)', () => {
    expect(agent.snapshot().callId).toMatch(/^call_/);
    expect(agent.snapshot().lastError).toBeNull();
  });

  it('spoken command -> set_device_volume on the real mixer -> the confirmation on the virtual speaker', async () => {
    const rec = startRecording(VIRTUAL.speakerMonitor);
    const clip = speechClip('set the volume to forty percent', { padBeforeMs: 300, padAfterMs: 300 });
    await run('paplay', ['-d', VIRTUAL.micSink, clip.file], { env: process.env });
    const deadline = Date.now() + 15_000;
    while ((await amixerPercent()) !== 40 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(await amixerPercent()).toBe(40);
    expect(agent.snapshot().lastTranscripts.map((t) => t.text)).toContain('set the volume to forty percent');
    // "The volume is now 40 percent." is spoken back (about 2 s of speech)
    await new Promise((r) => setTimeout(r, 4_000));
    const heard = await rec.stop();
    // the virtual speaker is digital silence unless something plays; the mixer is at 40 % now (about -24 dB)
    const levels: number[] = [];
    for (let i = 0; i + 4800 <= heard.length; i += 4800) levels.push(Math.round(rms(heard, i, i + 4800)));
    expect(levels.filter((l) => l > 20).length, `100 ms levels: ${levels.join(' ')}`).toBeGreaterThan(5);
  }, 40_000);

  it('the server stops and comes back on the same port: a new GA call without restarting the agent', async () => {
    const first = agent.snapshot().callId;
    await companion.close();
    await waitUntil(() => agent.snapshot().state !== 'connected', 8_000, 'the agent to notice');
    companion = await startCompanion(port);
    await waitUntil(() => agent.snapshot().state === 'connected', 20_000, 'connected again');
    expect(agent.snapshot().callId).toMatch(/^call_/);
    expect(agent.snapshot().callId).not.toBe(first);
  }, 40_000);
});
