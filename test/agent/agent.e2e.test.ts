// End to end: a real SpeakerAgent (PortAudio on the virtual sound card, AmixerMixer on control Master, werift)
// against the TEST PEER (test/support/testAssistantPeer.ts, in its own process: real HTTP + werift answerer on
// the spec's realtime routes). Until the companion server exists, this peer is the server side.
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpeakerAgent, type AgentState } from '../../src/agent/agent.js';
import { PortAudioBackend } from '../../src/agent/audio/portAudioBackend.js';
import { ensureIdentity, type Identity } from '../../src/agent/identity.js';
import { AmixerMixer } from '../../src/agent/mixer/amixerMixer.js';
import { parseSettings } from '../../src/agent/settings.js';
import { dominantFrequency, sineWave } from '../../src/common/audio/signal.js';
import { encodeWav } from '../../src/common/audio/wav.js';
import { createLogger } from '../../src/common/logger.js';
import { startRecording } from '../support/audioCapture.js';
import { TestAssistantPeerProcess } from '../support/testAssistantPeer.js';
import { VIRTUAL } from '../support/virtualAudio.js';

const run = promisify(execFile);
const KEY = 'ws-e2e-key-0123456789';
let peer: TestAssistantPeerProcess;
let agent: SpeakerAgent;
let identity: Identity;
const logLines: string[] = [];
const states: AgentState[] = [];

async function amixerPercent(): Promise<number> {
  const { stdout } = await run('amixer', ['-D', 'default', 'sget', VIRTUAL.mixerControl], { env: process.env });
  return Number(/\[(\d+)%\]/.exec(stdout)![1]);
}

function waitAgent(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!pred()) return;
      clearInterval(poll);
      clearTimeout(t);
      resolve();
    };
    const poll = setInterval(check, 25);
    const t = setTimeout(() => {
      clearInterval(poll);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; agent: ${JSON.stringify(agent.snapshot())}`));
    }, timeoutMs);
    check();
  });
}

function eventsOfCall(callId: string) {
  return peer.events.filter((e) => e.callId === callId).map((e) => JSON.parse(e.raw) as Record<string, any>);
}

async function functionRoundTrip(callId: string, args: unknown): Promise<{ output: any; next: any }> {
  const before = peer.events.length;
  await peer.sendEvent({
    type: 'response.output_item.done',
    item: { type: 'function_call', id: `item_${callId}`, call_id: callId, name: 'set_device_volume', arguments: JSON.stringify(args) },
  });
  await peer.waitFor(() => peer.events.length >= before + 2, 5_000, 'function_call_output + response.create');
  const [out, next] = peer.events.slice(before, before + 2).map((e) => JSON.parse(e.raw));
  expect(out.type).toBe('conversation.item.create');
  expect(out.item.type).toBe('function_call_output');
  expect(out.item.call_id).toBe(callId);
  return { output: JSON.parse(out.item.output), next };
}

beforeAll(async () => {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'agent-e2e-'));
  identity = (await ensureIdentity(path.join(tmp, 'state'))).identity;
  peer = new TestAssistantPeerProcess({ workspaceKey: KEY, enrollmentFile: path.join(tmp, 'enrolled.json') });
  await peer.start();
  const settings = parseSettings({
    server: { url: peer.url, workspaceKey: KEY, appSource: 'e2e' },
    audio: { captureDevice: 'default', playbackDevice: 'default', duplex: 'half' },
    mixer: { card: 'default', control: VIRTUAL.mixerControl },
    listening: { mode: 'always' }, // the microphone on the wire all the time (test/agent/listening.e2e.test.ts: wake)
  });
  const logSink = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(String(chunk));
      cb();
    },
  });
  const mixer = new AmixerMixer({ card: 'default', control: VIRTUAL.mixerControl });
  await mixer.setMuted(false);
  await mixer.setVolume(100);
  agent = new SpeakerAgent({ settings, identity, audio: new PortAudioBackend(), mixer, logger: createLogger({ level: 'debug', destination: logSink }) });
  agent.on('state', (s: AgentState) => states.push(s));
  await agent.start();
  await waitAgent(() => agent.snapshot().state === 'connected', 15_000, 'the first call');
  await peer.waitFor(() => peer.callIds.length === 1, 5_000, 'the peer to see the call');
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await peer?.kill();
  // For diagnosing a failure: SPEAKER_AGENT_TEST_E2E_LOG=/tmp/agent.log keeps the agent's log lines.
  if (process.env.SPEAKER_AGENT_TEST_E2E_LOG) await writeFile(process.env.SPEAKER_AGENT_TEST_E2E_LOG, logLines.join(''));
});

describe('SpeakerAgent end to end (virtual sound card, real WebRTC, real mixer)', () => {
  it('sent the device headers, and the status shows the call without the secret', async () => {
    const s = agent.snapshot();
    expect(s.clientId).toBe(identity.clientId);
    expect(s.secretFingerprint).toMatch(/^sha256:[0-9a-f]{12}$/);
    expect(s.callId).toMatch(/^sess_/);
    expect(JSON.stringify(s)).not.toContain(identity.clientSecret);
    const { requests } = await peer.stats();
    expect(requests.filter((r) => r.status === 200).map((r) => r.path)).toEqual(['/v1/realtime/sessions', '/v1/realtime']);
    expect(requests[1]).toMatchObject({ contentType: 'application/sdp', clientId: identity.clientId, hadSecret: true, appSource: 'e2e' });
  });

  it('a WAV played into the virtual microphone reaches the peer', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mic-'));
    const wav = path.join(dir, 'tone.wav');
    await writeFile(wav, encodeWav(sineWave(700, 48_000, 1.5, 0.4), 48_000));
    await run('paplay', ['-d', VIRTUAL.micSink, wav], { env: process.env });
    const got = await peer.lastReceived(1_500);
    expect(got.length).toBeGreaterThan(48_000);
    expect(Math.abs(dominantFrequency(got, 48_000) - 700)).toBeLessThan(15);
  });

  it('audio the peer sends comes out of the virtual speaker', async () => {
    // The recorder first: PulseAudio re-times the sink when a low-latency monitor stream attaches, which can
    // stall the agent's playback stream until its device is reopened (reported to the audio owner). The tone is
    // played once the speaker is open again.
    const rec = startRecording(VIRTUAL.speakerMonitor);
    await new Promise((r) => setTimeout(r, 2_500));
    await waitAgent(() => agent.snapshot().audioDevices?.speaker === 'open', 15_000, 'the speaker device');
    await peer.playTone(sineWave(1_000, 48_000, 1.2, 0.4));
    await new Promise((r) => setTimeout(r, 1_800));
    const heard = await rec.stop();
    expect(Math.abs(dominantFrequency(heard, 48_000) - 1_000)).toBeLessThan(15);
  });

  it('set_device_volume {volume_level: 40} from the peer changes the real mixer; output then response.create', async () => {
    const { output, next } = await functionRoundTrip('call_e2e_40', { volume_level: 40 });
    expect(await amixerPercent()).toBe(40);
    expect(output).toEqual({ success: true, result: { volume_level: 40, muted: false, message: 'Volume is now 40%.' } });
    expect(next).toEqual({ type: 'response.create' });
    expect(agent.snapshot().volume).toEqual({ volumePercent: 40, muted: false });
  });

  it('bad events (malformed JSON, unknown type, volume_level 150) are survived; 150 gets success:false', async () => {
    await peer.sendEvent('{"type": "response.output_item.done", "item": ');
    await peer.sendEvent({ type: 'totally.unknown.event', x: 1 });
    await peer.sendEvent({ type: 'response.output_item.done', item: { type: 'function_call' } });
    const { output, next } = await functionRoundTrip('call_e2e_150', { volume_level: 150 });
    expect(output.success).toBe(false);
    expect(output.error).toMatch(/150 is out of range/);
    expect(next).toEqual({ type: 'response.create' });
    expect(await amixerPercent()).toBe(40);
    expect(agent.snapshot().state).toBe('connected');
  });

  it('keeps user and assistant transcripts (both families) for status', async () => {
    await peer.sendEvent({ type: 'conversation.item.input_audio_transcription.completed', transcript: 'how loud is it' });
    await peer.sendEvent({ type: 'response.output_audio_transcript.done', item_id: 'a1', transcript: 'It is at forty percent.' });
    await peer.sendEvent({ type: 'response.audio_transcript.delta', item_id: 'a2', delta: 'Legacy ' });
    await peer.sendEvent({ type: 'response.audio_transcript.done', item_id: 'a2', transcript: 'Legacy family.' });
    await waitAgent(() => agent.snapshot().lastTranscripts.length >= 3, 5_000, 'transcripts');
    expect(agent.snapshot().lastTranscripts.map((t) => [t.role, t.text])).toEqual([
      ['user', 'how loud is it'],
      ['assistant', 'It is at forty percent.'],
      ['assistant', 'Legacy family.'],
    ]);
  });

  it('peer killed (SIGKILL) and started again on the same port: a new call without restarting the agent', async () => {
    const firstCall = agent.snapshot().callId;
    await peer.kill();
    await waitAgent(() => agent.snapshot().state !== 'connected', 8_000, 'the agent to notice the dead peer');
    await peer.start();
    await peer.waitFor(() => peer.callIds.length === 2, 20_000, 'a new call');
    await waitAgent(() => agent.snapshot().state === 'connected', 5_000, 'connected again');
    expect(agent.snapshot().callId).not.toBe(firstCall);
    expect(agent.snapshot().reconnects).toBe(1);
    // the new call works: a function call round trip
    const { output } = await functionRoundTrip('call_after_restart', { volume_level: 55 });
    expect(output.result.volume_level).toBe(55);
  }, 40_000);

  it('a peer that vanishes silently (frozen: no close, no RTP, no RTCP) is detected by the liveness watchdog', async () => {
    const before = agent.snapshot().reconnects;
    peer.freeze();
    await waitAgent(() => agent.snapshot().state !== 'connected', 8_000, 'the watchdog');
    expect(agent.snapshot().lastError?.message).toMatch(/no audio, RTCP or data-channel message from the peer for \d+ ms/);
    await peer.kill();
    await peer.start();
    await waitAgent(() => agent.snapshot().state === 'connected', 20_000, 'connected again');
    expect(agent.snapshot().reconnects).toBe(before + 1);
  }, 40_000);

  it('server down (clean stop: the agent sees the close at once), retries fail, server back: reconnects', async () => {
    const before = agent.snapshot().reconnects;
    await peer.stop();
    await waitAgent(() => agent.snapshot().lastError?.code === 'network', 10_000, 'a failed attempt while the server is down');
    expect(['backoff', 'connecting']).toContain(agent.snapshot().state);
    await peer.start();
    await waitAgent(() => agent.snapshot().state === 'connected', 20_000, 'connected again');
    expect(agent.snapshot().reconnects).toBe(before + 1);
  }, 40_000);

  it('stop() closes the call so the peer sees it go, and logs never contained the secret or workspace key', async () => {
    await agent.stop();
    expect(agent.snapshot().state).toBe('stopped');
    await new Promise((r) => setTimeout(r, 300));
    expect((await peer.stats()).activeCalls).toBe(0);
    const log = logLines.join('');
    expect(log).toContain('call connected');
    expect(log).toContain(agent.snapshot().secretFingerprint);
    expect(log).not.toContain(identity.clientSecret);
    expect(log).not.toContain(KEY);
  });
});
