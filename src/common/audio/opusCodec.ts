// Opus for the call: 48 kHz mono, 20 ms frames. Encoding through @discordjs/opus (bundled libopus, builds on
// every board); decoding through Debian's libopus (libopusDecoder.ts), for FEC.
//
// What @discordjs/opus 0.10 exposes, checked in its source (src/node-opus.cc):
// - one native object holds both an encoder (created with OPUS_APPLICATION_AUDIO) and a decoder;
//   applyEncoderCTL/applyDecoderCTL pass raw opus_*_ctl requests, so the signal type, in-band FEC and the
//   packet-loss hint are set through CTL numbers from opus_defines.h;
// - decode(buf) always calls opus_decode(..., decode_fec = 0): FEC recovery is not reachable through it, and
//   decode(empty buffer) concealed 120 ms at once (its output buffer's size). So the decoder below is libopus's
//   own, called with the frame size each case needs.
import { CHANNELS, FRAME_SAMPLES, SAMPLE_RATE } from '../../protocol/media.js';
import { LibopusDecoder } from './libopusDecoder.js';
import { loadOpus } from './opusBinding.js';

const opus = loadOpus();

// opus_defines.h request numbers and values.
const OPUS_SET_MAX_BANDWIDTH = 4004;
const OPUS_BANDWIDTH_SUPERWIDEBAND = 1104;
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_SET_INBAND_FEC = 4012;
const OPUS_SET_PACKET_LOSS_PERC = 4014;
const OPUS_SET_DTX = 4016;
const OPUS_SET_SIGNAL = 4024;
const OPUS_SIGNAL_VOICE = 3001;
// opus_private.h: handled by opus_encoder_ctl like the public requests.
const OPUS_SET_FORCE_MODE = 11002;
const OPUS_AUTO = -1000;
const MODE_CELT_ONLY = 1002;
/** The longest Opus packet, 120 ms at 48 kHz. */
const MAX_PACKET_SAMPLES = 5760;

export interface OpusEncoderOptions {
  /** bits/s; default 28 000 (speech is clear at 24-32 kbit/s) */
  bitrate?: number;
  /** Packet loss the far end reports, in percent: see setExpectedLoss. Default 0. */
  packetLossPercent?: number;
  /**
   * 0..10; default 1. Measured here on voice-like audio at 28 kbit/s: 0.11 ms per frame at 0-1, 0.22 at 2-3,
   * 0.26 at 5, 0.53 at 8, and a waveform SNR of 9.2 dB at 1 vs 10.8 dB at 5. Encoding the microphone was the
   * largest single CPU cost of a call (issue #5: <= 5 % of a core), and the far end is a speech recognizer.
   */
  complexity?: number;
}

/**
 * Two ways to encode, chosen by the loss the far end reports (setExpectedLoss):
 * - no loss: CELT only. On speech at 28 kbit/s Opus would pick SILK, which costs 115-137 us a frame here
 *   against 42 for CELT (complexity 1, voice-like audio): about half a point of a core in a call (issue #5).
 * - loss: Opus chooses (SILK or hybrid for speech) and adds in-band FEC sized to the loss: each packet also
 *   carries a coarse copy of the previous frame, which a decoder that supports it (libwebrtc's) uses to
 *   recover a single lost packet. CELT has no in-band FEC. libwebrtc likewise sizes FEC by the loss reports.
 */
export class OpusFrameEncoder {
  private readonly native: InstanceType<typeof opus.OpusEncoder>;
  /** Reused input buffer: encode() copies the samples into it (no per-frame allocation for the PCM). */
  private readonly pcm = Buffer.alloc(FRAME_SAMPLES * 2);
  private readonly pcmView = new Int16Array(this.pcm.buffer, this.pcm.byteOffset, FRAME_SAMPLES);
  private lossPercent = -1;

  constructor(opts: OpusEncoderOptions = {}) {
    const bitrate = opts.bitrate ?? 28_000;
    const loss = opts.packetLossPercent ?? 0;
    const complexity = opts.complexity ?? 1;
    if (!(bitrate >= 6000 && bitrate <= 510_000)) throw new RangeError(`opus bitrate out of range: ${bitrate}`);
    if (!(loss >= 0 && loss <= 100)) throw new RangeError(`opus packet loss percent out of range: ${loss}`);
    if (!(complexity >= 0 && complexity <= 10)) throw new RangeError(`opus complexity out of range: ${complexity}`);
    this.native = new opus.OpusEncoder(SAMPLE_RATE, CHANNELS);
    // OPUS_APPLICATION_AUDIO as created, not VOIP: VOIP runs the input through a high-pass filter (60-100 Hz,
    // second order) whose phase shift reaches the voice's fundamental; measured on the echo room (issue #15,
    // double talk): the user's speech as sent correlated 0.70 instead of 0.86 with itself in voiced 200 ms
    // windows, at 28 to 128 kbit/s and complexity 1 to 10 alike, and 0.85 with AUDIO. The rest is the same here:
    // CELT only without loss, and with loss the signal type below still makes Opus choose SILK for speech.
    this.native.applyEncoderCTL(OPUS_SET_SIGNAL, OPUS_SIGNAL_VOICE);
    // At most super-wideband (12 kHz): the far ends recognise speech at 16 kHz (the companion) or 24 kHz (the
    // realtime API's PCM), and full band spent part of the 28 kbit/s on 12-20 kHz. Measured on the wake test's
    // recorded microphone streams as the companion hears them (16 kHz): waveform SNR 16.8 -> 17.8 dB, and
    // "forty" heard as "fourteen" in 0 of 254 replays instead of 6 (87 streams at two frame alignments, and 80
    // gate offsets of one stream).
    this.native.applyEncoderCTL(OPUS_SET_MAX_BANDWIDTH, OPUS_BANDWIDTH_SUPERWIDEBAND);
    this.native.applyEncoderCTL(OPUS_SET_COMPLEXITY, Math.round(complexity));
    // No DTX: the gate's silence frames are cheap anyway, and a steady packet flow keeps the peer's jitter
    // buffer and NAT bindings simple.
    this.native.applyEncoderCTL(OPUS_SET_DTX, 0);
    this.native.setBitrate(Math.round(bitrate));
    this.setExpectedLoss(loss);
  }

  /** The loss (percent) the encoder protects against now; 0: none (CELT, no FEC). */
  get expectedLoss(): number {
    return this.lossPercent;
  }

  /**
   * Sets the packet loss to protect against, in percent (0..100): 0 encodes CELT only without FEC, more
   * lets Opus choose its mode and sends in-band FEC for that much loss (see the class comment).
   */
  setExpectedLoss(percent: number): void {
    if (!(percent >= 0 && percent <= 100)) throw new RangeError(`opus packet loss percent out of range: ${percent}`);
    const p = Math.round(percent);
    if (p === this.lossPercent) return;
    this.lossPercent = p;
    this.native.applyEncoderCTL(OPUS_SET_FORCE_MODE, p === 0 ? MODE_CELT_ONLY : OPUS_AUTO);
    this.native.applyEncoderCTL(OPUS_SET_INBAND_FEC, p === 0 ? 0 : 1);
    this.native.applyEncoderCTL(OPUS_SET_PACKET_LOSS_PERC, p);
  }

  get bitrate(): number {
    return this.native.getBitrate();
  }

  /** Encodes one 20 ms frame (FRAME_SAMPLES) into an Opus packet. */
  encode(frame: Int16Array): Buffer {
    if (frame.length !== FRAME_SAMPLES) {
      throw new RangeError(`opus encoder expects ${FRAME_SAMPLES} samples per frame, got ${frame.length}`);
    }
    this.pcmView.set(frame);
    return this.native.encode(this.pcm);
  }
}

/**
 * The call's decoder: Debian's libopus through koffi (libopusDecoder.ts), not @discordjs/opus, whose decode()
 * cannot reach FEC. A lost frame is recovered from the next packet's in-band FEC when the jitter buffer already
 * holds it (recover), and concealed by libopus's PLC when not (conceal), 20 ms at a time.
 */
export class OpusFrameDecoder {
  private readonly native = new LibopusDecoder(SAMPLE_RATE, CHANNELS);
  /** One packet's worth at most (120 ms): a longer packet than our peers' 20 ms is decoded whole, then cut. */
  private readonly pcm = new Int16Array(MAX_PACKET_SAMPLES * CHANNELS);
  readonly stats = {
    decoded: 0,
    concealed: 0,
    corrupt: 0,
    /** lost frames decoded through the next packet: from its FEC where it carries one (SILK or hybrid with FEC
     *  on), concealed by libopus where not */
    recovered: 0,
  };

  /**
   * Decodes one packet into a FRAME_SAMPLES frame (a new array, safe to keep).
   * A corrupt packet is concealed like a lost one instead of throwing.
   */
  decode(packet: Buffer): Int16Array {
    if (packet.length === 0) return this.conceal(); // libopus would conceal a whole 120 ms for an empty packet
    let n: number;
    try {
      n = this.native.decode(packet, this.pcm, MAX_PACKET_SAMPLES);
    } catch {
      this.stats.corrupt++;
      return this.conceal();
    }
    this.stats.decoded++;
    // Our peers send 20 ms frames; a longer packet is cut to 20 ms, a shorter one zero-padded.
    const frame = new Int16Array(FRAME_SAMPLES);
    frame.set(this.pcm.subarray(0, Math.min(n, FRAME_SAMPLES)));
    return frame;
  }

  /** Packet-loss concealment for one lost 20 ms frame (libopus fades a long loss out). */
  conceal(): Int16Array {
    this.stats.concealed++;
    const frame = new Int16Array(FRAME_SAMPLES);
    try {
      this.native.decode(null, frame, FRAME_SAMPLES);
    } catch {
      // nothing to conceal from yet: silence is the right concealment then
      frame.fill(0);
    }
    return frame;
  }

  /**
   * The lost 20 ms frame before `next` (the packet after the gap, still to be decoded in its turn), from the
   * in-band FEC `next` carries: what libwebrtc's receiver does. A packet without FEC (CELT, or a sender that
   * sends none) gives libopus's concealment instead, as conceal() would.
   */
  recover(next: Buffer): Int16Array {
    const frame = new Int16Array(FRAME_SAMPLES);
    try {
      this.native.decode(next, frame, FRAME_SAMPLES, true);
    } catch {
      return this.conceal(); // a corrupt next packet: plain concealment
    }
    this.stats.recovered++;
    return frame;
  }

  /** Fresh decoder state (new stream / SSRC), in place: one native decoder for the call's life (a new one per
   *  reconnect held C memory V8 does not see until it happened to collect the wrapper). */
  reset(): void {
    this.native.reset();
  }

  /** Frees the native decoder now (it is freed when collected otherwise). */
  close(): void {
    this.native.close();
  }
}
