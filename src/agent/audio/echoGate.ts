// Half-duplex echo suppression. On a speaker the microphone hears the assistant's own voice, and the
// assistant then answers (interrupts) itself. With no acoustic echo canceller on the board, the agent sends
// silence instead of microphone audio while the assistant's speech is playing and for a short tail after the
// last audible frame (the sound still travelling through the ALSA buffers and the room).
// 'full-duplex' passes the microphone through unchanged, for boards or sound servers that cancel echo
// themselves (e.g. PulseAudio/PipeWire module-echo-cancel).
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../protocol/media.js';

export type DuplexMode = 'half-duplex' | 'full-duplex';

/** audible spans kept for heardPlaybackBetween: a few seconds of an answer's pauses */
const MAX_SPANS = 16;

/** How long the microphone stays gated after audible playback ends (the room's echo tail); settings.echoTailMs. */
export const DEFAULT_ECHO_TAIL_MS = 200;

export interface EchoGateOptions {
  mode?: DuplexMode;
  /** How long after the last audible frame has left the speaker the mic stays muted. Default 300 ms. */
  tailMs?: number;
  /** RMS (s16 units) above which a played frame counts as audible. Default 100 (about -50 dBFS). */
  audibleRms?: number;
  /** Monotonic clock in ms; injectable for unit tests. */
  nowMs?: () => number;
}

const monotonicMs = (): number => performance.now();

export class EchoGate {
  mode: DuplexMode;
  tailMs: number;
  readonly audibleRms: number;
  private readonly nowMs: () => number;
  /** Time (ms, monotonic) at which the last audible frame finishes playing out of the speaker. */
  private audibleUntilMs = -Infinity;
  /** the latest spans of audible playback (ms, monotonic; frames less than a frame apart joined), oldest first */
  private readonly spans: { fromMs: number; untilMs: number }[] = [];
  private readonly silence = new Int16Array(FRAME_SAMPLES);
  readonly stats = { framesPassed: 0, framesSilenced: 0 };

  constructor(opts: EchoGateOptions = {}) {
    this.mode = opts.mode ?? 'half-duplex';
    this.tailMs = opts.tailMs ?? DEFAULT_ECHO_TAIL_MS;
    this.audibleRms = opts.audibleRms ?? 100;
    this.nowMs = opts.nowMs ?? monotonicMs;
    if (!(this.tailMs >= 0)) throw new RangeError(`echo gate tailMs must be >= 0, got ${opts.tailMs}`);
  }

  /**
   * The downlink reports every frame it hands to the speaker. queuedMs is how much audio is already queued
   * ahead of it, so the frame is heard from now + queuedMs until now + queuedMs + frame length.
   * Returns whether the frame was audible.
   */
  notePlayback(frame: Int16Array, queuedMs = 0): boolean {
    if (!isAudible(frame, this.audibleRms)) return false;
    const frameMs = (frame.length / SAMPLE_RATE) * 1000;
    const from = this.nowMs() + queuedMs;
    const until = from + frameMs;
    if (until > this.audibleUntilMs) this.audibleUntilMs = until;
    const last = this.spans.at(-1);
    if (last && from <= last.untilMs + frameMs) last.untilMs = Math.max(last.untilMs, until);
    else {
      this.spans.push({ fromMs: from, untilMs: until });
      if (this.spans.length > MAX_SPANS) this.spans.shift();
    }
    return true;
  }

  /** True when, in half duplex, any microphone audio captured between `fromAgoMs` and `toAgoMs` ago (fromAgoMs >=
   *  toAgoMs) was captured while the speaker played or its echo tail ran: it held the speaker's sound uncancelled.
   *  (isGated asks about one moment, and only whether playback had ended by then.) */
  heardPlaybackBetween(fromAgoMs: number, toAgoMs: number): boolean {
    if (this.mode !== 'half-duplex') return false;
    const now = this.nowMs();
    const from = now - fromAgoMs;
    const to = now - toAgoMs;
    return this.spans.some((s) => s.fromMs < to && s.untilMs + this.tailMs > from);
  }

  /** True when microphone audio captured `capturedAgoMs` ago must not be sent. */
  isGated(capturedAgoMs = 0): boolean {
    return this.mode === 'half-duplex' && this.nowMs() - capturedAgoMs < this.audibleUntilMs + this.tailMs;
  }

  /** True when microphone audio captured now must not be sent. */
  get gating(): boolean {
    return this.isGated(0);
  }

  /**
   * Returns the frame to send: the microphone frame itself, or a silent frame of the same length. The frame is
   * judged by when it was captured, not when it is filtered: the capture callback hands over two frames at a
   * time, and the earlier one (20 ms older) must not slip through just after the tail ends.
   */
  filter(micFrame: Int16Array, capturedAgoMs = 0): Int16Array {
    if (!this.isGated(capturedAgoMs)) {
      this.stats.framesPassed++;
      return micFrame;
    }
    this.stats.framesSilenced++;
    if (this.silence.length !== micFrame.length) return new Int16Array(micFrame.length);
    return this.silence;
  }

  /** Forget playback history (new call). */
  reset(): void {
    this.audibleUntilMs = -Infinity;
    this.spans.length = 0;
  }
}

/** RMS check without allocating; early exit once the threshold is certainly exceeded. */
export function isAudible(frame: Int16Array, rmsThreshold: number): boolean {
  const limit = rmsThreshold * rmsThreshold * frame.length;
  let sum = 0;
  for (let i = 0; i < frame.length; i++) {
    const s = frame[i];
    sum += s * s;
    if (sum > limit) return true;
  }
  return false;
}
