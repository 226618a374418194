// One call's outgoing track. Assistant speech is handed to a SpeechEncoder (speechEncoder.ts) as the synthesiser
// produces it; the encoded 20 ms Opus packets come back ahead of time and wait in a queue, so each 20 ms slot
// only sends a ready packet (no resampling or encoding on the pacer's tick). A cut (barge-in, stop) drops the
// queue and bumps the utterance number, so packets still in the encoder are discarded when they arrive.
// When there is nothing to say, one shared pre-encoded Opus silence packet is sent, so the client's liveness
// watchdog keeps seeing RTP.
import { randomInt } from 'node:crypto';
import { RtpHeader, RtpPacket } from 'werift';
import { OpusFrameEncoder } from '../../common/audio/opusCodec.js';
import { FRAME_MS, FRAME_SAMPLES, OPUS_RTP, SAMPLE_RATE } from '../../protocol/media.js';
import type { PacedStream } from './framePacer.js';
import { InlineSpeechEncoder, type EncodedBatch, type SpeechEncoder, type SpeechEncoderChannel } from './speechEncoder.js';
import { SERVER_OPUS_COMPLEXITY, SERVER_OPUS_LOSS_PERCENT } from './speechFrameEncoder.js';

const NO_AUDIO = new Int16Array(0);

let silencePacket: Buffer | undefined;
/** One Opus packet of digital silence, encoded once per process and reused by every call. */
export function opusSilencePacket(): Buffer {
  silencePacket ??= new OpusFrameEncoder({ complexity: SERVER_OPUS_COMPLEXITY, packetLossPercent: SERVER_OPUS_LOSS_PERCENT }).encode(new Int16Array(FRAME_SAMPLES));
  return silencePacket;
}

export interface OutgoingAudioStats {
  speechFrames: number;
  silenceFrames: number;
  /** frames of speech dropped by cut() */
  cutFrames: number;
  /** slots where speech was being produced but not ready yet (synthesiser or encoder behind) */
  underruns: number;
  /** source samples the encoder lost (its thread crashed) */
  lostSamples: number;
}

export class OutgoingAudio implements PacedStream {
  private packets: Buffer[] = [];
  private pendingSource = 0; // samples written to the encoder and not returned yet, at the source rate
  private sourceRate: number = SAMPLE_RATE;
  private gen = 0; // utterance number: batches of an older one are dropped
  private encodedAllFlag = false; // the encoder returned the current utterance's last batch
  private readonly channel: SpeechEncoderChannel;
  private seq = randomInt(0, 0x10000);
  private timestamp = randomInt(0, 0x1_0000_0000);
  private wasSilent = true;
  private utterance: { id: string; finished: boolean } | undefined;
  private roomWaiters: { ms: number; resolve: () => void }[] = [];
  readonly stats: OutgoingAudioStats = { speechFrames: 0, silenceFrames: 0, cutFrames: 0, underruns: 0, lostSamples: 0 };

  constructor(
    private readonly send: (packet: RtpPacket) => void,
    /** the last frame of a finished utterance was sent */
    private readonly onUtteranceDone: (id: string) => void,
    encoder: SpeechEncoder = new InlineSpeechEncoder(),
  ) {
    this.channel = encoder.open({ delivered: (b) => this.delivered(b), lost: (gen, n, last) => this.lost(gen, n, last) });
  }

  /** Starts a new utterance whose audio (written with write()) is mono s16 at `sampleRate`. */
  begin(id: string, sampleRate: number): void {
    this.cut();
    this.sourceRate = sampleRate;
    this.utterance = { id, finished: false };
  }

  /** Appends audio to the current utterance (it may be handed to another thread: the caller must not reuse it). */
  write(pcm: Int16Array): void {
    if (!this.utterance || this.utterance.finished || pcm.length === 0) return;
    this.pendingSource += pcm.length;
    this.channel.write(this.gen, this.sourceRate, pcm, false);
  }

  /** No more audio for the current utterance; onUtteranceDone fires once it has been played out. */
  finish(): void {
    if (!this.utterance || this.utterance.finished) return;
    this.utterance.finished = true;
    this.channel.write(this.gen, this.sourceRate, NO_AUDIO, true);
  }

  /** Cuts the outgoing speech at once (stop_audio, barge-in). Returns the ms of speech that was dropped. */
  cut(): number {
    const droppedMs = this.queuedMs;
    this.stats.cutFrames += Math.ceil(droppedMs / FRAME_MS);
    this.gen++;
    this.packets = [];
    this.pendingSource = 0;
    this.encodedAllFlag = false;
    this.utterance = undefined;
    this.releaseWaiters(true);
    return droppedMs;
  }

  /** The call ended: releases the encoder channel. */
  close(): void {
    this.cut();
    this.channel.close();
  }

  /** true while an utterance is queued or being produced */
  get speaking(): boolean {
    return this.utterance !== undefined;
  }

  /** ms of speech queued and not yet sent (encoded or still in the encoder) */
  get queuedMs(): number {
    return this.packets.length * FRAME_MS + (this.pendingSource * 1000) / this.sourceRate;
  }

  /** 20 ms packets encoded and waiting for their slot */
  get readyFrames(): number {
    return this.packets.length;
  }

  /** the encoder has returned the current utterance's last batch (its end can be reported once played) */
  get encodedAll(): boolean {
    return this.encodedAllFlag;
  }

  /** Resolves once less than `ms` of speech is queued (or the utterance was cut): lets a producer keep a bounded lead. */
  waitForRoom(ms: number): Promise<void> {
    if (this.queuedMs < ms || !this.utterance) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push({ ms, resolve }));
  }

  tick(): void {
    let payload: Buffer;
    let marker = false;
    const u = this.utterance;
    if (u && this.packets.length > 0) {
      payload = this.packets.shift()!;
      marker = this.wasSilent; // RFC 3551: marker on the first packet of a talkspurt
      this.wasSilent = false;
      this.stats.speechFrames++;
    } else {
      if (u && !(u.finished && this.encodedAllFlag)) this.stats.underruns++;
      payload = opusSilencePacket();
      this.wasSilent = true;
      this.stats.silenceFrames++;
    }
    const header = new RtpHeader({ payloadType: OPUS_RTP.payloadType, sequenceNumber: this.seq, timestamp: this.timestamp, marker });
    this.seq = (this.seq + 1) & 0xffff;
    this.timestamp = (this.timestamp + FRAME_SAMPLES) >>> 0;
    this.send(new RtpPacket(header, payload));

    if (u && u.finished && this.encodedAllFlag && this.packets.length === 0) {
      this.utterance = undefined;
      this.onUtteranceDone(u.id);
    }
    if (this.roomWaiters.length) this.releaseWaiters(false);
  }

  private delivered(b: EncodedBatch): void {
    if (b.gen !== this.gen) return; // an utterance that was cut
    for (const p of b.packets) this.packets.push(p);
    this.pendingSource = Math.max(0, this.pendingSource - b.consumed);
    if (b.last) this.encodedAllFlag = true;
  }

  private lost(gen: number, consumed: number, last: boolean): void {
    if (gen !== this.gen) return;
    this.stats.lostSamples += consumed;
    this.pendingSource = Math.max(0, this.pendingSource - consumed);
    if (last) this.encodedAllFlag = true; // the utterance ends with what was encoded
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
