// One call's outgoing track. Assistant speech is queued as the synthesiser produced it (its own sample rate) and
// turned into 48 kHz Opus only when its 20 ms slot comes: resampling and encoding cost are spread evenly over
// time instead of bursting when a long reply is synthesised, and a cut (barge-in, stop) drops unprocessed audio
// for free. When there is nothing to say, one shared pre-encoded Opus silence packet is sent, so the client's
// liveness watchdog keeps seeing RTP.
import { randomInt } from 'node:crypto';
import { RtpHeader, RtpPacket } from 'werift';
import { OpusFrameEncoder } from '../../agent/audio/opusCodec.js';
import { Resampler } from '../../common/audio/resample.js';
import { AUDIO } from '../../protocol/session.js';
import type { PacedStream } from './framePacer.js';

const FRAME = AUDIO.samplesPerFrame;
/** Lower than the device's default: the server encodes for many calls on one core; speech stays clear. */
const SERVER_OPUS_COMPLEXITY = 5;

let silencePacket: Buffer | undefined;
/** One Opus packet of digital silence, encoded once per process and reused by every call. */
export function opusSilencePacket(): Buffer {
  silencePacket ??= new OpusFrameEncoder({ complexity: SERVER_OPUS_COMPLEXITY }).encode(new Int16Array(FRAME));
  return silencePacket;
}

export interface OutgoingAudioStats {
  speechFrames: number;
  silenceFrames: number;
  /** frames of speech dropped by cut() */
  cutFrames: number;
  /** slots where speech was being produced but not ready yet (synthesiser slower than real time) */
  underruns: number;
}

export class OutgoingAudio implements PacedStream {
  private chunks: Int16Array[] = [];
  private chunkPos = 0; // read position in chunks[0]
  private queuedSource = 0; // samples queued, at the source rate
  private sourceRate: number = AUDIO.sampleRate;
  private resampler: Resampler | undefined;
  private leftover: Int16Array | undefined; // resampled samples not yet framed
  private leftoverPos = 0;
  private readonly frame = new Int16Array(FRAME);
  private frameFill = 0;
  private encoder: OpusFrameEncoder | undefined;
  private seq = randomInt(0, 0x10000);
  private timestamp = randomInt(0, 0x1_0000_0000);
  private wasSilent = true;
  private utterance: { id: string; finished: boolean } | undefined;
  private roomWaiters: { ms: number; resolve: () => void }[] = [];
  readonly stats: OutgoingAudioStats = { speechFrames: 0, silenceFrames: 0, cutFrames: 0, underruns: 0 };

  constructor(
    private readonly send: (packet: RtpPacket) => void,
    /** the last frame of a finished utterance was sent */
    private readonly onUtteranceDone: (id: string) => void,
  ) {}

  /** Starts a new utterance whose audio (written with write()) is mono s16 at `sampleRate`. */
  begin(id: string, sampleRate: number): void {
    this.cut();
    if (sampleRate !== this.sourceRate) {
      this.sourceRate = sampleRate;
      this.resampler = sampleRate === AUDIO.sampleRate ? undefined : new Resampler(sampleRate, AUDIO.sampleRate);
    } else {
      this.resampler?.reset();
    }
    this.utterance = { id, finished: false };
  }

  /** Appends audio to the current utterance (kept by reference: the caller must not reuse the array). */
  write(pcm: Int16Array): void {
    if (!this.utterance || this.utterance.finished || pcm.length === 0) return;
    this.chunks.push(pcm);
    this.queuedSource += pcm.length;
  }

  /** No more audio for the current utterance; onUtteranceDone fires once it has been played out. */
  finish(): void {
    if (this.utterance) this.utterance.finished = true;
  }

  /** Cuts the outgoing speech at once (stop_audio, barge-in). Returns the ms of speech that was dropped. */
  cut(): number {
    const droppedMs = this.queuedMs;
    this.stats.cutFrames += Math.ceil(droppedMs / AUDIO.frameMs);
    this.chunks = [];
    this.chunkPos = 0;
    this.queuedSource = 0;
    this.leftover = undefined;
    this.frameFill = 0;
    this.utterance = undefined;
    this.releaseWaiters(true);
    return droppedMs;
  }

  /** true while an utterance is queued or being produced */
  get speaking(): boolean {
    return this.utterance !== undefined;
  }

  /** ms of speech queued and not yet sent */
  get queuedMs(): number {
    const left = this.leftover ? this.leftover.length - this.leftoverPos : 0;
    return ((this.queuedSource - this.chunkPos) * 1000) / this.sourceRate + ((left + this.frameFill) * 1000) / AUDIO.sampleRate;
  }

  /** Resolves once less than `ms` of speech is queued (or the utterance was cut): lets a producer keep a bounded lead. */
  waitForRoom(ms: number): Promise<void> {
    if (this.queuedMs < ms || !this.utterance) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push({ ms, resolve }));
  }

  tick(): void {
    let payload: Buffer;
    let marker = false;
    if (this.utterance && this.fillFrame()) {
      this.encoder ??= new OpusFrameEncoder({ complexity: SERVER_OPUS_COMPLEXITY });
      payload = this.encoder.encode(this.frame);
      this.frameFill = 0;
      marker = this.wasSilent; // RFC 3551: marker on the first packet of a talkspurt
      this.wasSilent = false;
      this.stats.speechFrames++;
    } else {
      if (this.utterance && !this.utterance.finished) this.stats.underruns++;
      payload = opusSilencePacket();
      this.wasSilent = true;
      this.stats.silenceFrames++;
    }
    const header = new RtpHeader({ payloadType: AUDIO.opusPayloadType, sequenceNumber: this.seq, timestamp: this.timestamp, marker });
    this.seq = (this.seq + 1) & 0xffff;
    this.timestamp = (this.timestamp + FRAME) >>> 0;
    this.send(new RtpPacket(header, payload));

    const u = this.utterance;
    if (u && u.finished && this.queuedMs === 0) {
      this.utterance = undefined;
      this.onUtteranceDone(u.id);
    }
    if (this.roomWaiters.length) this.releaseWaiters(false);
  }

  /** Fills this.frame with the next 20 ms at 48 kHz; false when not enough audio is ready (and not finished). */
  private fillFrame(): boolean {
    while (this.frameFill < FRAME) {
      if (this.leftover && this.leftoverPos < this.leftover.length) {
        const n = Math.min(FRAME - this.frameFill, this.leftover.length - this.leftoverPos);
        this.frame.set(this.leftover.subarray(this.leftoverPos, this.leftoverPos + n), this.frameFill);
        this.frameFill += n;
        this.leftoverPos += n;
        continue;
      }
      const src = this.chunks[0];
      if (!src) {
        if (this.utterance?.finished && this.frameFill > 0) {
          this.frame.fill(0, this.frameFill); // zero-padded tail
          this.frameFill = FRAME;
          return true;
        }
        return false;
      }
      // take about one frame's worth of source audio, resampled on the way
      const want = Math.ceil((FRAME * this.sourceRate) / AUDIO.sampleRate);
      const n = Math.min(want, src.length - this.chunkPos);
      const slice = src.subarray(this.chunkPos, this.chunkPos + n);
      this.chunkPos += n;
      if (this.chunkPos >= src.length) {
        this.chunks.shift();
        this.queuedSource -= src.length;
        this.chunkPos = 0;
      }
      this.leftover = this.resampler ? this.resampler.process(slice) : slice;
      this.leftoverPos = 0;
    }
    return true;
  }

  private releaseWaiters(all: boolean): void {
    const q = this.queuedMs;
    this.roomWaiters = this.roomWaiters.filter((w) => {
      if (!all && q >= w.ms) return true;
      w.resolve();
      return false;
    });
  }
}
