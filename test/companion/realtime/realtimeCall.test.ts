// End to end against the real companion server: a werift client (what a device does) speaks flite audio over
// Opus; the server's real pipeline (Opus decode, VAD, pocketsphinx, rules brain, espeak-ng, Opus encode, paced
// RTP) answers on the data channel and the audio track.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RealtimeTestClient } from '../../support/realtimeTestClient.js';
import { startRealtimeTestServer, type RealtimeTestServer } from '../../support/realtimeServer.js';
import { speechClip } from '../../support/speechWav.js';
import { assistantTranscriptOf } from '../../../src/protocol/events.js';
import { CLOCK_NOT_SET_TEXT } from '../../../src/companion/realtime/ruleBrain.js';
import { systemWallClock } from '../../../src/companion/realtime/systemClock.js';

describe('realtime call (GA transcript family)', () => {
  let srv: RealtimeTestServer;
  beforeAll(async () => {
    srv = await startRealtimeTestServer();
    srv.addStory('The Brave Little Kite', 'Once upon a time a little kite wanted to fly higher than the birds.');
  });
  afterAll(async () => srv?.close());

  it('"set the volume to forty percent": transcription, set_device_volume 40, then a spoken confirmation', async () => {
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: srv.newDevice() });
    try {
      expect(c.events[0]?.event.type).toBe('session.created');
      const clip = speechClip('set the volume to forty percent');
      const transcript = c.waitFor('conversation.item.input_audio_transcription.completed');
      const call = c.waitFor('response.output_item.done', (e) => e.item.type === 'function_call');
      await c.play(clip.pcm);
      expect((await transcript).transcript).toBe('set the volume to forty percent');
      const fc = (await call).item;
      if (fc.type !== 'function_call') throw new Error('not a function call');
      expect(fc.name).toBe('set_device_volume');
      expect(JSON.parse(fc.arguments)).toEqual({ volume_level: 40 });
      expect(fc.call_id).toMatch(/\S/);
      expect(fc.id).toMatch(/\S/);
      expect(c.eventsOf('input_audio_buffer.speech_started')).toHaveLength(1);
      expect(c.eventsOf('input_audio_buffer.speech_stopped')).toHaveLength(1);
      await c.waitFor('response.done', (e) => e.response.id === (c.eventsOf('response.created')[0]?.response.id ?? ''), 5000, true);

      // Nothing is spoken before the device answers the call.
      const audibleBefore = c.audio.audiblePackets;
      expect(c.eventsOf('response.output_audio_transcript.delta')).toHaveLength(0);

      const spokenDone = c.waitFor('response.output_audio_transcript.done');
      const finished = c.waitFor('response.done', (e) => e.response.status === 'completed' && (e.response as { output?: { type: string }[] }).output?.[0]?.type === 'message');
      c.send({
        type: 'conversation.item.create',
        item: { type: 'function_call_output', call_id: fc.call_id, output: JSON.stringify({ success: true, result: { volume_level: 40, muted: false, message: 'volume set to 40%' } }) },
      });
      c.send({ type: 'response.create' });
      const done = await spokenDone;
      expect(done.transcript).toBe('The volume is now 40 percent.');
      const deltas = c.eventsOf('response.output_audio_transcript.delta').map((d) => d.delta);
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.join('')).toBe(done.transcript);
      await finished;
      // Reply audio arrived as non-silent Opus (about a second of speech; 20 ms per packet).
      expect(c.audio.audiblePackets - audibleBefore).toBeGreaterThan(25);
      expect(c.eventsOf('response.audio_transcript.delta')).toHaveLength(0);
      expect(c.badMessages).toEqual([]);
    } finally {
      await c.close();
    }
  });

  it('answers "list the stories" from the workspace database, with audio', async () => {
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: srv.newDevice() });
    try {
      const done = c.waitFor('response.output_audio_transcript.done');
      await c.play(speechClip('list the stories').pcm);
      expect((await done).transcript).toBe('I know one story: The Brave Little Kite.');
      await c.waitFor('response.done', (e) => e.response.status === 'completed');
      expect(c.audio.audiblePackets).toBeGreaterThan(25);
    } finally {
      await c.close();
    }
  });

  it('stop_audio: the user speaking over a long reply cuts it (barge-in), the response ends cancelled', async () => {
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: srv.newDevice() });
    try {
      const created = c.waitFor('response.created');
      await c.play(speechClip('read me a story', { padAfterMs: 600 }).pcm);
      const reading = await created;
      // The story is being read; the user talks over it.
      const cancelled = c.waitFor('response.done', (e) => e.response.id === reading.response.id);
      await c.play(speechClip('stop', { padBeforeMs: 200, padAfterMs: 200 }).pcm);
      const end = await cancelled;
      expect(end.response.status).toBe('cancelled');
      // "stop" itself is recognised and answered with the server's own function, not a device one.
      const stop = await c.waitFor('response.output_item.done', (e) => e.item.type === 'function_call', 10_000);
      if (stop.item.type !== 'function_call') throw new Error('unreachable');
      expect(stop.item.name).toBe('stop_audio');
      // After the cut only silence is sent: no audible packet in the next 400 ms of frames.
      c.markAudio();
      const before = c.audio.audiblePackets;
      await c.play(new Int16Array(48_000 * 0.4));
      expect(c.audio.audiblePackets - before).toBeLessThanOrEqual(2);
    } finally {
      await c.close();
    }
  });

  it('regression: session.update on the spec route got no answer; session.updated echoes the unchanged session', async () => {
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: srv.newDevice() });
    try {
      const created = await c.waitFor('session.created', () => true, 5000, true);
      c.send({ type: 'session.update', event_id: 'u1', session: { instructions: 'Be brief.', turn_detection: { type: 'server_vad', silence_duration_ms: 100 } } });
      const updated = await c.waitFor('session.updated', () => true, 5000);
      expect(updated.session).toEqual(created.session);
      expect(c.eventsOf('error')).toEqual([]);
    } finally {
      await c.close();
    }
  });

  it('answers bad client messages with error events and keeps the call', async () => {
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: srv.newDevice() });
    try {
      c.send('this is not json');
      expect((await c.waitFor('error')).error.code).toBe('invalid_event');
      c.send({ type: 'no.such.event', event_id: 'evt_1' });
      const unknown = await c.waitFor('error', (e) => e.error.code === 'unknown_event');
      expect(unknown.error.event_id).toBe('evt_1');
      c.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: 'call_nope', output: '{}' } });
      expect((await c.waitFor('error', (e) => e.error.code !== 'unknown_event' && e.error.code !== 'invalid_event')).error.code).toBe('unknown_call_id');
      c.send({ type: 'response.create' });
      expect((await c.waitFor('error', (e) => e.error.code === 'no_pending_function_output')).error.message).toMatch(/function_call_output/);
      c.send({ type: 'conversation.item.create', item: { type: 'function_call_output' } });
      expect((await c.waitFor('error', (e) => e.error.code === 'invalid_event' && /call_id/.test(e.error.message))).error.type).toBe('invalid_request_error');
      // still answering
      const done = c.waitFor('response.output_audio_transcript.done');
      await c.play(speechClip('hello').pcm);
      expect((await done).transcript).toBe('Hello! How can I help?');
    } finally {
      await c.close();
    }
  });
});

describe('realtime call (legacy transcript family, implicit session)', () => {
  let srv: RealtimeTestServer;
  beforeAll(async () => {
    srv = await startRealtimeTestServer({ realtime: { transcriptFamily: 'legacy' } });
  });
  afterAll(async () => srv?.close());

  it('emits response.audio_transcript.* and works without POST /sessions first', async () => {
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: srv.newDevice(), createSession: false });
    try {
      const done = c.waitFor('response.audio_transcript.done');
      await c.play(speechClip('what time is it').pcm);
      const t = (await done).transcript;
      // the time, unless this machine's timesyncd has not set its clock yet (systemClock.ts)
      if (await systemWallClock().isSet()) expect(t).toMatch(/^It is \d{1,2} (o'clock|oh \d|\d\d) in the (morning|afternoon|evening)\.$/);
      else expect(t).toBe(CLOCK_NOT_SET_TEXT);
      const deltas = c.events.map((e) => assistantTranscriptOf(e.event)).filter((x) => x?.phase === 'delta');
      expect(deltas.map((d) => d!.text).join('')).toBe(t);
      expect(c.eventsOf('response.output_audio_transcript.delta')).toHaveLength(0);
    } finally {
      await c.close();
    }
  });
});

// The wall clock steps here through a spy on Date.now (a fake: the machine's real clock is not this test's to
// set). On a board without a real-time clock it steps forward when NTP first syncs, often minutes after boot.
describe('realtime call across a wall-clock step', () => {
  let srv: RealtimeTestServer;
  beforeAll(async () => {
    srv = await startRealtimeTestServer({ realtime: { idleTimeoutMs: 5_000 } });
  });
  afterAll(async () => srv?.close());

  it('regression: the wall clock stepping 90 days forward (NTP syncing on a board without an RTC) ended every quiet call as idle; the call goes on', async () => {
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: srv.newDevice() });
    const realNow = Date.now.bind(Date);
    try {
      await c.waitFor('session.created', () => true, 5000, true);
      c.sending = false; // a quiet moment: no RTP (a speaker between its keep-alives)
      await new Promise((r) => setTimeout(r, 300));
      vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 90 * 86_400_000);
      await new Promise((r) => setTimeout(r, 2_500)); // two sweeps (one a second)
      expect(c.channel.readyState).toBe('open');
      c.sending = true;
      const transcript = c.waitFor('conversation.item.input_audio_transcription.completed');
      await c.play(speechClip('set the volume to forty percent').pcm);
      expect((await transcript).transcript).toBe('set the volume to forty percent');
    } finally {
      vi.restoreAllMocks();
      await c.close();
    }
  });
});
