// A call's incoming audio with real parts end to end: Opus packets (the project's encoder) of a synthetic 100 Hz hum
// with harmonics and of flite speech -> IncomingAudio (real VAD, resampler, pre-roll) -> the real pocketsphinx
// recogniser -> a real Conversation, whose events are what the client receives on its data channel.
// The defect these guard: a steady voiced sound (a fridge's hum, music, TV) is speech to the VAD, so without a
// maximum utterance length it started an utterance that never ended while the sound went on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { loadOpus } from '../../../src/common/audio/opusBinding.js';
import { Conversation } from '../../../src/companion/realtime/conversation.js';
import { EventWriter } from '../../../src/companion/realtime/eventWriter.js';
import { IncomingAudio, MAX_UTTERANCE_MS } from '../../../src/companion/realtime/incomingAudio.js';
import { OutgoingAudio } from '../../../src/companion/realtime/outgoingAudio.js';
import { RuleBrain } from '../../../src/companion/realtime/ruleBrain.js';
import { EspeakSynthesizer } from '../../../src/companion/speech/espeakSynthesizer.js';
import { PocketsphinxRecognizer } from '../../../src/companion/speech/pocketsphinxRecognizer.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../../src/protocol/media.js';
import { fliteSpeech, harmonicHum, trimSilence, whiteNoise } from '../speech/speechFixtures.js';

type Wire = Record<string, any>;
const RATE = SAMPLE_RATE;

/** a + b (b placed at `at` samples), clipped */
function mix(a: Int16Array, b: Int16Array, at = 0): Int16Array {
  const out = Int16Array.from(a);
  for (let i = 0; i < b.length && at + i < out.length; i++) out[at + i] = Math.max(-32768, Math.min(32767, out[at + i] + b[i]));
  return out;
}

let recognizer: PocketsphinxRecognizer;
let synthesizer: EspeakSynthesizer;
const live: { close: () => void }[] = [];

beforeAll(async () => {
  recognizer = new PocketsphinxRecognizer({});
  synthesizer = new EspeakSynthesizer({ realtimeWorkers: 1, bulkWorkers: 0 });
  await Promise.all([recognizer.warmUp(), synthesizer.ready()]);
}, 60_000);
afterAll(async () => {
  for (const h of live) h.close();
  await recognizer?.close();
  await synthesizer?.close();
});

/** One call's incoming side: IncomingAudio feeding a real Conversation; `play` sends PCM as 20 ms Opus packets. */
function call(o: { ga: boolean }) {
  const wire: Wire[] = [];
  let waiters: { pred: (e: Wire) => boolean; resolve: (e: Wire) => void }[] = [];
  const events = new EventWriter((json) => {
    const e = JSON.parse(json) as Wire;
    wire.push(e);
    waiters = waiters.filter((w) => (w.pred(e) ? (w.resolve(e), false) : true));
  }, 'ga');
  let conv!: Conversation;
  let incoming!: IncomingAudio;
  const out = new OutgoingAudio(() => {}, (id) => conv.utterancePlayed(id));
  const pacer = setInterval(() => {
    for (let i = 0; i < 50; i++) out.tick();
  }, 2);
  conv = new Conversation({
    events,
    out,
    brain: new RuleBrain({ list: () => [] }),
    synthesizer,
    voice: { language: 'en-us' },
    workspaceId: 'w',
    logger: createLogger({ level: 'silent' }),
    clearInput: () => incoming.clear(),
    commitInput: () => incoming.commit(),
    ga: o.ga,
  });
  incoming = new IncomingAudio(recognizer, conv);
  const encoder = new (loadOpus().OpusEncoder)(RATE, 1);
  const h = {
    wire,
    incoming,
    play(pcm: Int16Array): void {
      for (let i = 0; i + FRAME_SAMPLES <= pcm.length; i += FRAME_SAMPLES) {
        incoming.handleOpus(encoder.encode(Buffer.from(pcm.buffer, pcm.byteOffset + i * 2, FRAME_SAMPLES * 2)));
      }
    },
    of: (type: string) => wire.filter((e) => e.type === type),
    waitFor(pred: (e: Wire) => boolean, timeoutMs = 20_000): Promise<Wire> {
      const had = wire.find(pred);
      if (had) return Promise.resolve(had);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no such event within ${timeoutMs} ms; got ${wire.map((e) => e.type).join(', ')}`)), timeoutMs);
        waiters.push({ pred, resolve: (e) => (clearTimeout(t), resolve(e)) });
      });
    },
    /** the speech_started/speech_stopped pairs, in order; throws unless every start has its stop */
    utterances(): { itemId: string; startMs: number; endMs: number }[] {
      const speech = wire.filter((e) => e.type === 'input_audio_buffer.speech_started' || e.type === 'input_audio_buffer.speech_stopped');
      const pairs: { itemId: string; startMs: number; endMs: number }[] = [];
      for (let i = 0; i < speech.length; i += 2) {
        const [start, stop] = [speech[i], speech[i + 1]];
        expect(start.type).toBe('input_audio_buffer.speech_started');
        expect(stop?.type, `speech_started at ${start.audio_start_ms} ms has no speech_stopped`).toBe('input_audio_buffer.speech_stopped');
        expect(stop.item_id).toBe(start.item_id);
        pairs.push({ itemId: start.item_id, startMs: start.audio_start_ms, endMs: stop.audio_end_ms });
      }
      return pairs;
    },
    close(): void {
      clearInterval(pacer);
      incoming.close();
      conv.close();
      out.close();
    },
  };
  live.push(h);
  return h;
}

describe('IncomingAudio: maximum utterance length', () => {
  it('a minute of a 100 Hz hum (-23 dBFS, after 2 s of room noise) gives one utterance ended at the cap, stop matching start, not one endless one', async () => {
    const c = call({ ga: true });
    const room = whiteNoise(RATE * 62, 0.003, 5);
    c.play(mix(room, harmonicHum(RATE * 60, -23, RATE), RATE * 2));

    const utterances = c.utterances(); // every speech_started has its speech_stopped
    // the hum is voiced, so the VAD takes it for speech (the premise) ...
    expect(utterances.length).toBeGreaterThanOrEqual(1);
    expect(utterances[0].startMs).toBeGreaterThan(1500);
    expect(utterances[0].startMs).toBeLessThan(2500);
    // ... and the utterance ends at the maximum length, measured as the client sees it
    expect(utterances[0].endMs - utterances[0].startMs).toBeGreaterThanOrEqual(MAX_UTTERANCE_MS);
    expect(utterances[0].endMs - utterances[0].startMs).toBeLessThanOrEqual(MAX_UTTERANCE_MS + 40);
    // the capped sound became the noise floor: the next 45 s of the same hum start no utterance
    expect(utterances).toHaveLength(1);
    expect(c.incoming.stats).toMatchObject({ utterances: 1, cappedUtterances: 1 });

    // the turn completes: committed as the user's item, its transcript empty (a capped utterance's is dropped: the
    // recogniser makes a word of garbage of this hum), so nobody answers the fridge
    const itemId = utterances[0].itemId;
    expect(c.of('input_audio_buffer.committed').map((e) => e.item_id)).toEqual([itemId]);
    const done = await c.waitFor((e) => e.type === 'conversation.item.input_audio_transcription.completed');
    expect(done).toMatchObject({ item_id: itemId, transcript: '' });
    expect(c.incoming.stats.recognizedAudioMs).toBe(0); // its stream was aborted, not decoded
    await new Promise((r) => setTimeout(r, 500));
    expect(c.of('response.created')).toEqual([]);
    expect(c.of('conversation.item.input_audio_transcription.completed')).toHaveLength(1);
  }, 60_000);

  it('after the hum was capped, "turn the volume up" spoken over it is detected, ends by its silence and is answered', async () => {
    const c = call({ ga: false });
    const speech = trimSilence(fliteSpeech('turn the volume up', RATE, 'slt'), RATE);
    const speechAt = RATE * 22; // 5 s after the hum's utterance was capped (2 s + 15 s)
    const total = speechAt + speech.length + RATE * 3;
    const room = whiteNoise(total, 0.003, 9);
    c.play(mix(mix(room, harmonicHum(total - RATE * 2, -23, RATE), RATE * 2), speech, speechAt));

    const utterances = c.utterances(); // every speech_started has its speech_stopped
    expect(utterances).toHaveLength(2);
    const [hum, command] = utterances;
    expect(hum.endMs - hum.startMs).toBeGreaterThanOrEqual(MAX_UTTERANCE_MS);
    expect(hum.endMs - hum.startMs).toBeLessThanOrEqual(MAX_UTTERANCE_MS + 40);
    // the command: starts with the speech (300 ms of pre-roll before the VAD's ~100 ms decision) and ends after its
    // hangover (300 ms), not at the cap
    const speechStartMs = (speechAt * 1000) / RATE;
    const speechEndMs = ((speechAt + speech.length) * 1000) / RATE;
    expect(command.startMs).toBeGreaterThan(speechStartMs - 400);
    expect(command.startMs).toBeLessThan(speechStartMs + 300);
    expect(command.endMs).toBeGreaterThanOrEqual(speechEndMs);
    expect(command.endMs).toBeLessThan(speechEndMs + 1000);
    expect(c.incoming.stats).toMatchObject({ utterances: 2, cappedUtterances: 1 });

    // recognised over the hum, and answered: the device is asked to turn its volume up
    const done = await c.waitFor((e) => e.type === 'conversation.item.input_audio_transcription.completed' && e.item_id === command.itemId);
    expect(done.transcript).toBe('turn the volume up');
    const fn = await c.waitFor((e) => e.type === 'response.output_item.done' && e.item?.type === 'function_call');
    expect(fn.item).toMatchObject({ name: 'adjust_device_volume' });
    expect(JSON.parse(fn.item.arguments)).toEqual({ action: 'increase' });
  }, 60_000);
});
