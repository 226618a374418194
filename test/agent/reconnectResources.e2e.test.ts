// Issue 17: every resource a call creates (sockets, timers, handles) is released when the call ends, however it
// ends. A real SpeakerAgent (PortAudio on the virtual card, werift) against the TEST PEER in its own process, which
// is killed (SIGKILL), stopped cleanly or frozen (SIGSTOP) and started again, over and over; the agent's open
// descriptors (/proc/self/fd) and active handles and timers (process.getActiveResourcesInfo) must not grow.
// The short version runs here; the 1,000-reconnect soak is a bench row (bench/agent-soak.bench.ts).
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SpeakerAgent } from '../../src/agent/agent.js';
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';
import { ensureIdentity } from '../../src/agent/identity.js';
import { AmixerMixer } from '../../src/agent/mixer/amixerMixer.js';
import { parseSettings } from '../../src/agent/settings.js';
import { createLogger } from '../../src/common/logger.js';
import { Writable } from 'node:stream';
import { writeFileSync } from 'node:fs';
const logLines: string[] = [];
import { openDescriptors, resourceCounts, resourceGrowth } from '../support/processResources.js';
import { waitUntil } from '../support/audioCapture.js';
import { TestAssistantPeerProcess } from '../support/testAssistantPeer.js';
import { VIRTUAL } from '../support/virtualAudio.js';

const KEY = 'ws-resources-key-0123456789';
let peer: TestAssistantPeerProcess;
let agent: SpeakerAgent;

afterAll(async () => {
  await agent?.stop();
  await peer?.kill();
});

async function newCall(previous: string | null): Promise<void> {
  await waitUntil(() => agent.snapshot().state === 'connected' && agent.snapshot().callId !== previous, 20_000, 'a new call').catch((err) => {
    writeFileSync('/tmp/reconnect.log', logLines.join(''));
    throw new Error(`${(err as Error).message}; agent: ${JSON.stringify(agent.snapshot())}`);
  });
  // A call that lives a moment (audio flowing) before the next fault, as in life: a failure streak only ends
  // with a stable call, and a streak longer than the reconnect policy's fast window backs off for real.
  await new Promise((r) => setTimeout(r, 1_500));
}

describe('reconnects leave nothing open', () => {
  it('regression: 12 re-created calls (killed, stopped, frozen peer) leak no socket, descriptor, timer or handle', async () => {
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'resources-'));
    const { identity } = await ensureIdentity(path.join(tmp, 'state'));
    peer = new TestAssistantPeerProcess({ workspaceKey: KEY, enrollmentFile: path.join(tmp, 'enrolled.json') });
    await peer.start();
    const settings = parseSettings({
      server: { url: peer.url, workspaceKey: KEY, appSource: 'resources' },
      audio: { captureDevice: 'default', playbackDevice: 'default', duplex: 'half' },
      mixer: { card: 'default', control: VIRTUAL.mixerControl },
      // each call lives 1.5 s here: counted as stable, so the reconnect policy stays in its fast window
      reconnect: { stableAfterMs: 1_000 },
    });
    agent = new SpeakerAgent({ settings, identity, audio: new PortAudioBackend(), mixer: new AmixerMixer({ card: 'default', control: VIRTUAL.mixerControl }), logger: createLogger({ level: 'debug', destination: new Writable({ write(c, _e, cb) { logLines.push(String(c)); cb(); } }) }) });
    await agent.start();
    await newCall(null);
    // One full cycle first: lazily created process-wide handles (DNS, the HTTP agent...) exist from here on.
    await peer.kill();
    await peer.start();
    await newCall(agent.snapshot().callId);
    await new Promise((r) => setTimeout(r, 500));
    const fdsBefore = openDescriptors();
    const resBefore = resourceCounts();

    for (let i = 0; i < 12; i++) {
      const callId = agent.snapshot().callId;
      const mode = (['kill', 'stop', 'freeze'] as const)[i % 3];
      if (mode === 'kill') await peer.kill();
      else if (mode === 'stop') await peer.stop();
      else {
        peer.freeze();
        await waitUntil(() => agent.snapshot().state !== 'connected', 8_000, 'the frozen peer to be noticed');
        await peer.kill();
      }
      await peer.start();
      await newCall(callId);
    }
    expect(agent.snapshot().reconnects).toBeGreaterThanOrEqual(13);
    await new Promise((r) => setTimeout(r, 1_000));
    const fdsAfter = openDescriptors();
    // Before the fix: +3 UDP sockets per call (36 here).
    expect(fdsAfter.sockets - fdsBefore.sockets).toBeLessThanOrEqual(1);
    expect(fdsAfter.total - fdsBefore.total).toBeLessThanOrEqual(2);
    expect(resourceGrowth(resBefore, resourceCounts())).toEqual({});
  }, 180_000);

  it('a server frozen for 30 s (SIGSTOP) and then resumed: the call is declared dead at once, retried, and back after the thaw', async () => {
    const callId = agent.snapshot().callId;
    const fdsBefore = openDescriptors();
    peer.freeze();
    await waitUntil(() => agent.snapshot().state !== 'connected', 8_000, 'the frozen server to be noticed');
    expect(agent.snapshot().lastError?.message).toMatch(/no answer to a consent check/);
    await new Promise((r) => setTimeout(r, 30_000)); // attempts meanwhile hang on the frozen server and time out
    peer.thaw();
    await newCall(callId);
    expect(agent.snapshot().state).toBe('connected');
    await new Promise((r) => setTimeout(r, 1_000));
    expect(openDescriptors().sockets - fdsBefore.sockets).toBeLessThanOrEqual(1);
  }, 90_000);
});
