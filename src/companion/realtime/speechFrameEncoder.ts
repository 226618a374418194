// Assistant speech (the synthesiser's mono s16 at its own rate) -> 48 kHz Opus packets of 20 ms, one utterance
// at a time. Used inside the encoder thread (speechEncoderWorker.ts) and by the inline fallback encoder.
import { OpusFrameEncoder } from '../../common/audio/opusCodec.js';
import { Resampler } from '../../common/audio/resample.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../protocol/media.js';

/** Lower than the device's default: the server encodes for many calls on one core; speech stays clear. */
export const SERVER_OPUS_COMPLEXITY = 5;
/** The server always sends in-band FEC (as sized for 10 % loss), whatever the link: a decoder that can use it
 *  recovers single losses. Opus then encodes speech with SILK, which costs the server more than CELT would. */
export const SERVER_OPUS_LOSS_PERCENT = 10;

export class SpeechFrameEncoder {
  private gen = -1;
  private rate = 0;
  private resampler: Resampler | undefined;
  private readonly frame = new Int16Array(FRAME_SAMPLES);
  private fill = 0;
  private readonly encoder = new OpusFrameEncoder({ complexity: SERVER_OPUS_COMPLEXITY, packetLossPercent: SERVER_OPUS_LOSS_PERCENT });

  /** Encodes the audio of utterance `gen`; a new gen (or rate) starts afresh. `last` flushes the tail, padded
   *  with silence to a whole frame. Returns the packets completed by this audio. */
  encode(gen: number, rate: number, pcm: Int16Array, last: boolean): Buffer[] {
    if (!Number.isInteger(rate) || rate < 8000 || rate > 192_000) throw new RangeError(`unsupported sample rate ${rate}`);
    if (gen !== this.gen || rate !== this.rate) {
      if (rate !== this.rate) this.resampler = rate === SAMPLE_RATE ? undefined : new Resampler(rate, SAMPLE_RATE);
      else this.resampler?.reset();
      this.gen = gen;
      this.rate = rate;
      this.fill = 0;
    }
    const packets: Buffer[] = [];
    const x = this.resampler && pcm.length ? this.resampler.process(pcm) : pcm;
    let i = 0;
    while (i < x.length) {
      const n = Math.min(FRAME_SAMPLES - this.fill, x.length - i);
      this.frame.set(x.subarray(i, i + n), this.fill);
      this.fill += n;
      i += n;
      if (this.fill === FRAME_SAMPLES) {
        packets.push(this.encoder.encode(this.frame));
        this.fill = 0;
      }
    }
    if (last) {
      if (this.fill > 0) {
        this.frame.fill(0, this.fill);
        packets.push(this.encoder.encode(this.frame));
      }
      this.gen = -1; // the next audio starts a new utterance even if it reuses the number
      this.fill = 0;
    }
    return packets;
  }
}
