// One call's incoming track: Opus -> 48 kHz PCM -> voice activity detection -> (16 kHz) a recognizer stream per
// utterance. The VAD runs on the decoded 48 kHz frames; only audio that goes to the recogniser is resampled
// (resampling every frame of every call would be the biggest per-call cost while nobody speaks). The recogniser
// decodes while the user speaks, so the end of speech costs only the tail. A short pre-roll ring feeds it the
// audio that preceded speech_start (the VAD needs ~100 ms to decide).
//
// An utterance lasts at most maxUtteranceMs. A steady voiced sound (music, TV, a fridge's hum with harmonics) is
// speech to the VAD and would otherwise be one utterance for as long as it lasts: a decoding thread held, the
// recogniser keeping all of it, the call's turn (and every turn queued behind it) waiting for ever. At the cap the
// utterance ends as silence would end it (speechStopped at that moment, so every speechStarted has its stop and the
// turn completes), but its transcript is empty: the recogniser's stream is aborted, which frees its decoding thread
// at once. A capped utterance is almost always a sound that is not speech, and what the recogniser makes of a hum or
// music is a word or two of garbage ("war" for a fridge's hum) that the brain would answer, talking at the room;
// an empty transcript is what the conversation already answers with nothing (a cough). A real dictation that long
// loses its first 15 s (its rest is the next utterance), which on a speaker is rare. Then the VAD takes the
// sound's level as its noise floor, so the same sound does not start the next utterance at once.
import { loadOpus } from '../../common/audio/opusBinding.js';
import { Resampler } from '../../common/audio/resample.js';
import { CHANNELS, FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE } from '../../protocol/media.js';
import type { Recognition, Recognizer, RecognizerStream } from '../speech/recognizer.js';
import { VoiceActivityDetector } from '../speech/vad.js';

const opus = loadOpus();

const RATE_16K = 16_000;

/** Default longest utterance. A spoken request to a speaker takes 1-5 s, a long question to an LLM brain ~10 s
 *  (15 s is ~40 words); beyond that it is far likelier to be a sound that is not speech. It bounds what one
 *  utterance costs (~0.5 MB of 16 kHz PCM in the recogniser, the grammar pass over all of it at the end) and how
 *  long a turn can be held by such a sound. */
export const MAX_UTTERANCE_MS = 15_000;

export interface IncomingAudioOptions {
  /** silence after speech before the utterance ends (default 300 ms) */
  hangoverMs?: number;
  /** audio before speech_start given to the recogniser (default 300 ms) */
  preRollMs?: number;
  /** longest utterance, audio_start_ms to audio_end_ms, ended as if speech stopped (default MAX_UTTERANCE_MS) */
  maxUtteranceMs?: number;
}

export interface IncomingAudioHandler {
  speechStarted(audioStartMs: number): void;
  /** `result` settles once the recogniser has decoded the tail (rejects if the engine failed). */
  speechStopped(audioEndMs: number, result: Promise<Recognition>): void;
}

export interface IncomingAudioStats {
  packets: number;
  corrupt: number;
  utterances: number;
  /** utterances ended by the maximum length rather than by silence (a steady sound, or a very long dictation) */
  cappedUtterances: number;
  /** audio ms fed to the recogniser and the ms spent waiting for results, for the real-time factor */
  recognizedAudioMs: number;
  recognizeWaitMs: number;
}

export class IncomingAudio {
  private readonly decoder = new opus.OpusEncoder(SAMPLE_RATE, CHANNELS);
  private readonly down = new Resampler(SAMPLE_RATE, RATE_16K);
  private readonly vad: VoiceActivityDetector;
  private readonly ring: Int16Array;
  private readonly ringFrames: number;
  private ringPos = 0; // frames written to the ring, total
  private stream: RecognizerStream | undefined;
  private streamAudioMs = 0;
  private receivedMs = 0;
  /** audio_start_ms of the utterance in progress */
  private utteranceStartMs = 0;
  private readonly maxUtteranceMs: number;
  private closed = false;
  readonly stats: IncomingAudioStats = { packets: 0, corrupt: 0, utterances: 0, cappedUtterances: 0, recognizedAudioMs: 0, recognizeWaitMs: 0 };

  /** The end-of-speech hangover (a GA session's turn_detection.silence_duration_ms). */
  setHangoverMs(ms: number): void {
    this.vad.hangoverMs = ms;
  }

  constructor(
    private readonly recognizer: Recognizer,
    private readonly handler: IncomingAudioHandler,
    opts: IncomingAudioOptions = {},
  ) {
    this.vad = new VoiceActivityDetector({ sampleRate: SAMPLE_RATE, frameMs: FRAME_MS, hangoverMs: opts.hangoverMs ?? 300 });
    this.ringFrames = Math.max(1, Math.round((opts.preRollMs ?? 300) / FRAME_MS));
    this.ring = new Int16Array(this.ringFrames * FRAME_SAMPLES);
    this.maxUtteranceMs = opts.maxUtteranceMs ?? MAX_UTTERANCE_MS;
  }

  /** ms of audio received on the call so far (the clock of audio_start_ms / audio_end_ms) */
  get audioMs(): number {
    return this.receivedMs;
  }

  /** Handles one RTP payload. Never throws: a corrupt packet is counted and skipped. */
  handleOpus(payload: Buffer): void {
    if (this.closed) return;
    this.stats.packets++;
    let pcm: Buffer;
    try {
      pcm = this.decoder.decode(payload);
    } catch {
      this.stats.corrupt++;
      return;
    }
    const samples =
      pcm.byteOffset % 2 === 0
        ? new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length >> 1)
        : new Int16Array(Uint8Array.from(pcm).buffer);
    this.receivedMs += (samples.length * 1000) / SAMPLE_RATE;
    const event = this.vad.process(samples);
    if (this.stream) {
      this.stream.write(this.down.process(samples));
      this.streamAudioMs += (samples.length * 1000) / SAMPLE_RATE;
    } else {
      this.pushRing(samples);
    }
    if (event === 'speech_start') this.startUtterance();
    else if (event === 'speech_end') this.endUtterance();
    else if (this.stream && this.receivedMs - this.utteranceStartMs >= this.maxUtteranceMs) this.capUtterance();
  }

  private pushRing(pcm: Int16Array): void {
    const n = Math.min(pcm.length, FRAME_SAMPLES);
    const slot = (this.ringPos % this.ringFrames) * FRAME_SAMPLES;
    this.ring.set(pcm.subarray(0, n), slot);
    if (n < FRAME_SAMPLES) this.ring.fill(0, slot + n, slot + FRAME_SAMPLES);
    this.ringPos++;
  }

  private startUtterance(): void {
    this.utteranceStartMs = Math.max(0, Math.round(this.receivedMs - this.ringFrames * FRAME_MS));
    this.handler.speechStarted(this.utteranceStartMs);
    try {
      this.stream = this.recognizer.createStream({ mode: 'command' });
    } catch (err) {
      // The engine could not start: the utterance still ends normally and its result reports the failure.
      this.stream = failedStream(err);
    }
    const have = Math.min(this.ringPos, this.ringFrames);
    this.down.reset(); // a new stretch of audio for the resampler
    for (let k = have; k > 0; k--) {
      const slot = ((this.ringPos - k) % this.ringFrames) * FRAME_SAMPLES;
      this.stream.write(this.down.process(this.ring.subarray(slot, slot + FRAME_SAMPLES)));
    }
    this.streamAudioMs = have * FRAME_MS;
    this.ringPos = 0;
  }

  private endUtterance(): void {
    const stream = this.stream;
    if (!stream) return;
    this.stream = undefined;
    this.stats.utterances++;
    const audioMs = this.streamAudioMs;
    const t0 = performance.now();
    const result = stream.end().then((r) => {
      this.stats.recognizedAudioMs += audioMs;
      this.stats.recognizeWaitMs += performance.now() - t0;
      return r;
    });
    result.catch(() => undefined); // the handler decides what a failure means; never an unhandled rejection
    this.handler.speechStopped(Math.round(this.receivedMs), result);
  }

  /** The utterance reached maxUtteranceMs: it ends as if speech stopped, with an empty transcript (see the top of
   *  the file; nothing is decoded), and the VAD learns the sound that filled it as its noise floor (a voice above
   *  that sound still starts the next utterance). */
  private capUtterance(): void {
    const stream = this.stream;
    if (!stream) return;
    this.stream = undefined;
    this.stats.utterances++;
    this.stats.cappedUtterances++;
    this.vad.learnNoiseFloor();
    stream.abort();
    this.handler.speechStopped(Math.round(this.receivedMs), Promise.resolve({ text: '', grammarMatch: false }));
  }

  /** Ends the utterance in progress now, as its silence would (input_audio_buffer.commit); false when nobody is
   *  speaking. The detector starts afresh: speech that goes on is a new utterance. */
  commit(): boolean {
    if (!this.stream) return false;
    this.vad.reset();
    this.endUtterance();
    return true;
  }

  /** Drops the utterance in progress (input_audio_buffer.clear, call end). */
  clear(): void {
    this.stream?.abort();
    this.stream = undefined;
    this.vad.reset();
    this.ringPos = 0;
  }

  close(): void {
    this.clear();
    this.closed = true;
  }
}

function failedStream(err: unknown): RecognizerStream {
  return {
    write() {},
    end: () => Promise.reject(err instanceof Error ? err : new Error(String(err))),
    abort() {},
  };
}
