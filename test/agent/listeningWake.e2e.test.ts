// End to end with the REAL wake word engine (pocketsphinx, src/agent/wake/): the wake phrase followed at once by
// a tone, played into the virtual microphone; on what the TEST PEER received (its RTP, decoded): nothing before
// the wake word, and the tone whole, from its first 20 ms, although listening opened only after the engine had
// heard the phrase (the pre-roll). The tone stands in for the command so its start can be measured exactly.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpeakerAgent, type ListeningEvent } from '../../src/agent/agent.js';
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';
import { ensureIdentity } from '../../src/agent/identity.js';
import { AmixerMixer } from '../../src/agent/mixer/amixerMixer.js';
import { parseSettings } from '../../src/agent/settings.js';
import { resample } from '../../src/common/audio/resample.js';
import { dominantFrequency, sineWave } from '../../src/common/audio/signal.js';
import { decodeWav, encodeWav } from '../../src/common/audio/wav.js';
import { createLogger } from '../../src/common/logger.js';
import { TestAssistantPeerProcess } from '../support/testAssistantPeer.js';
import { VIRTUAL } from '../support/virtualAudio.js';

const run = promisify(execFile);
const KEY = 'ws-wake-e2e-key-0123456789';
let tmp: string;
let peer: TestAssistantPeerProcess;
let agent: SpeakerAgent;

function until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const poll = setInterval(() => pred() && (clearInterval(poll), clearTimeout(t), resolve()), 20);
    const t = setTimeout(() => (clearInterval(poll), reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ${JSON.stringify(agent.listeningStatus())}`))), timeoutMs);
  });
}

/** The agent in wake mode, in its call, its engine loaded. Full duplex by default: the virtual card has no echo
 *  path, nothing for a canceller to converge on, so its half-duplex fallback would hold the microphone while the
 *  assistant speaks; full duplex is right for this card. */
async function startAgent(duplex: 'full' | 'half' = 'full'): Promise<SpeakerAgent> {
  const a = new SpeakerAgent({
    settings: parseSettings({
      server: { url: peer.url, workspaceKey: KEY },
      mixer: { card: 'default', control: VIRTUAL.mixerControl },
      listening: { mode: 'wake', followUpMs: 0 },
      audio: { duplex },
    }),
    identity: (await ensureIdentity(path.join(tmp, 'state'))).identity,
    audio: new PortAudioBackend(),
    mixer: new AmixerMixer({ card: 'default', control: VIRTUAL.mixerControl }),
    logger: createLogger({ level: (process.env.SPEAKER_AGENT_TEST_E2E_LOG as 'info') ?? 'silent' }),
  });
  agent = a;
  await a.start();
  await until(() => a.snapshot().state === 'connected' && a.listeningStatus().wakeWord.engine !== 'loading', 30_000, 'the call and the engine');
  return a;
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'wake-e2e-'));
  peer = new TestAssistantPeerProcess({ workspaceKey: KEY, enrollmentFile: path.join(tmp, 'enrolled.json') });
  await peer.start();
  await startAgent();
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await peer?.kill();
  // the agent's identity (its client secret) is in there: leave nothing behind
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('the wake word opens the microphone with its pre-roll (real engine, verified on the received RTP)', () => {
  it('"hey jarvis" then at once a 1 s tone: the peer gets nothing before, then the whole tone', async () => {
    expect(agent.listeningStatus()).toMatchObject({ mode: 'wake', state: 'idle', wakeWord: { engine: 'ready' } });
    const phraseFile = path.join(tmp, 'phrase.wav');
    await run('flite', ['-voice', 'slt', '-t', 'hey jarvis', '-o', phraseFile]);
    const w = decodeWav(await readFile(phraseFile));
    let phrase = resample(w.pcm, w.sampleRate, 48_000);
    // flite ends with ~0.1-0.2 s of silence: keep it short, as in one breath
    let last = phrase.length - 1;
    while (last > 0 && Math.abs(phrase[last]) < 300) last--;
    phrase = phrase.subarray(0, last + 48 * 60);
    const tone = sineWave(700, 48_000, 1.0, 0.4);
    const clip = new Int16Array(phrase.length + tone.length + 48 * 300);
    clip.set(phrase);
    clip.set(tone, phrase.length);
    const clipFile = path.join(tmp, 'clip.wav');
    await writeFile(clipFile, encodeWav(clip, 48_000));

    const before = (await peer.stats()).packetsIn;
    await run('paplay', ['-d', VIRTUAL.micSink, clipFile], { env: process.env });
    await until(() => agent.listening.state === 'listening', 5_000, 'the wake word');
    await new Promise((r) => setTimeout(r, 1_500)); // the backlog drained and sent
    const packets = (await peer.stats()).packetsIn - before;
    const got = await peer.lastReceived(packets * 20);
    // the tone: every 20 ms block of the received audio where 700 Hz dominates
    const blocks: boolean[] = [];
    for (let i = 0; i + 960 <= got.length; i += 960) {
      const b = got.subarray(i, i + 960);
      const loud = b.reduce((m, v) => Math.max(m, Math.abs(v)), 0) > 3000;
      blocks.push(loud && Math.abs(dominantFrequency(b, 48_000) - 700) < 60);
    }
    const first = blocks.indexOf(true);
    const toneBlocks = blocks.filter(Boolean).length;
    // received: silence keep-alives, maybe the end of the phrase, then the tone; 1 s = 50 blocks
    expect(first).toBeGreaterThan(0);
    expect(toneBlocks).toBeGreaterThanOrEqual(47);
    // before the pre-roll: digital silence only (the phrase itself is not sent, at most its last syllable's tail)
    const head = got.subarray(0, Math.max(0, first * 960 - 48 * 400));
    expect(head.reduce((m, v) => Math.max(m, Math.abs(v)), 0)).toBe(0);
  }, 30_000);
});

const phraseWav = async (): Promise<string> => {
  const f = path.join(tmp, 'phrase-only.wav');
  await run('flite', ['-voice', 'slt', '-t', 'hey jarvis', '-o', f]);
  return f;
};

describe('the speaker\'s own sound does not open the microphone (half duplex: nothing cancels it)', () => {
  it('regression: "hey jarvis" in the answer, heard by the microphone, opened listening and cut the answer; now only after it', async () => {
    await agent.stop();
    const half = await startAgent('half');
    try {
      const phraseFile = await phraseWav();
      const w = decodeWav(await readFile(phraseFile));
      const phrase = resample(w.pcm, w.sampleRate, 48_000);
      // the answer: 4 s of a quiet tone with the phrase in it (the assistant saying "hey jarvis")
      const answer = sineWave(300, 48_000, 4, 0.05);
      for (let i = 0; i < phrase.length && 24_000 + i < answer.length; i++) answer[24_000 + i] += phrase[i];
      const opened: string[] = [];
      const onListening = (e: ListeningEvent) => e.state === 'listening' && opened.push(`${e.previous} -> listening (${e.reason})`);
      half.on('listening', onListening);
      const from = peer.events.length;
      await peer.sendEvent({ type: 'response.created', response: { id: 'resp_self' } });
      void peer.playTone(answer);
      await until(() => half.listening.state === 'speaking', 5_000, 'the answer to be heard');
      // the microphone hears what the speaker says (the virtual card has no echo path: played into it here)
      await new Promise((r) => setTimeout(r, 400));
      await run('paplay', ['-d', VIRTUAL.micSink, phraseFile], { env: process.env });
      await new Promise((r) => setTimeout(r, 2_500)); // the engine has long decided (~0.3 s after the phrase)
      expect(opened).toEqual([]);
      expect(peer.events.slice(from).some((e) => e.raw.includes('"response.cancel"'))).toBe(false);
      await peer.sendEvent({ type: 'response.done', response: { id: 'resp_self', status: 'completed' } });
      await until(() => half.listening.state === 'idle', 8_000, 'the answer to end');
      await new Promise((r) => setTimeout(r, 1_000)); // the phrase starts well after the answer and its tail
      // the same phrase with the speaker silent is the user's: it opens listening
      await run('paplay', ['-d', VIRTUAL.micSink, phraseFile], { env: process.env });
      await until(() => opened.length > 0, 5_000, 'the wake word after the answer');
      expect(opened[0]).toBe('idle -> listening (wake)');
      half.off('listening', onListening);
    } finally {
      await agent.stop();
      await startAgent('full');
    }
  }, 90_000);
});

describe('the wake word over an answer, and an engine that crashes (real engine)', () => {
  it('the wake word said while the assistant speaks cuts the answer (response.cancel) and opens listening', async () => {
    agent.stopListening();
    await until(() => agent.listening.state === 'idle', 5_000, 'idle');
    await peer.sendEvent({ type: 'response.created', response: { id: 'resp_long' } });
    void peer.playTone(sineWave(1_000, 48_000, 4, 0.3)); // a long answer
    await until(() => agent.listening.state === 'speaking', 5_000, 'the answer to be heard');
    const from = peer.events.length;
    const opened: string[] = [];
    const onListening = (e: ListeningEvent) => e.state === 'listening' && opened.push(`${e.previous} -> listening (${e.reason})`);
    agent.on('listening', onListening);
    await run('paplay', ['-d', VIRTUAL.micSink, await phraseWav()], { env: process.env });
    // the test peer does not act on response.cancel: its answer goes on, and makes the state "speaking" again
    await until(() => opened.length > 0, 5_000, 'the wake word');
    agent.off('listening', onListening);
    expect(opened[0]).toBe('speaking -> listening (wake)');
    await peer.waitFor(() => peer.events.slice(from).some((e) => e.raw.includes('"response.cancel"')), 3_000, 'response.cancel');
  }, 30_000);

  it('a crashed engine thread is loaded again and hears the wake word after', async () => {
    // the test peer does not act on response.cancel: its answer plays out first
    await new Promise((r) => setTimeout(r, 4_000));
    agent.stopListening();
    await until(() => agent.listening.state === 'idle', 5_000, 'idle');
    // the crash, simulated: the engine's thread ended from outside
    const engine = (agent as unknown as { wakeEngine: { worker: { terminate(): Promise<number> } } }).wakeEngine;
    await engine.worker.terminate();
    await until(() => agent.listeningStatus().wakeWord.engine === 'loading', 2_000, 'the failure to be seen');
    await until(() => agent.listeningStatus().wakeWord.engine === 'ready', 10_000, 'the engine to be loaded again');
    await run('paplay', ['-d', VIRTUAL.micSink, await phraseWav()], { env: process.env });
    await until(() => agent.listening.state === 'listening', 5_000, 'the wake word, after the restart');
  }, 30_000);

  it('without a call the engine still listens: the wake word plays the unreachable earcon, and nothing opens', async () => {
    await peer.kill();
    await until(() => agent.listening.state === 'offline', 15_000, 'the call to be lost');
    await new Promise((r) => setTimeout(r, 1_000)); // the call-lost earcon played
    const before = agent.earconTiming?.requestedNs ?? 0n;
    await run('paplay', ['-d', VIRTUAL.micSink, await phraseWav()], { env: process.env });
    await until(() => (agent.earconTiming?.requestedNs ?? 0n) > before, 5_000, 'the unreachable earcon');
    expect(agent.listening.state).toBe('offline');
  }, 40_000);
});
