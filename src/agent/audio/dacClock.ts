// Silence played BELOW the agent's playback stream, found in PortAudio's timing of each callback.
//
// The playback stream counts the silence it plays itself when its queue runs dry (FrameIO's starved bytes,
// PlaybackDevice.onStarved), and the echo canceller's reference puts it where it played (echoReference.ts). The
// audio system under PortAudio can play silence of its own, which that count never sees: on the loaded test
// machine PortAudio's audio thread was not scheduled for ~120 ms, the ALSA buffer (60 ms) ran dry, and the sound
// server (PulseAudio, through ALSA's pulse plugin) played ~40 ms of silence before PortAudio recovered from the
// underrun (paOutputUnderflow). Everything played after it came 40 ms later than the sample count says, under the
// 40 ms at which the reference's stamps re-anchor (echoReference.ts JUMP_MS), so the echo path moved for the
// canceller: the delay re-tracked (152.75 -> 185.25 ms) and the command said meanwhile was gated.
//
// PortAudio gives each callback the time its buffer's first sample reaches the DAC (outputBufferDacTime, ALSA's
// delay); the vendored FrameIO passes it on as the callback's steady-clock time plus that latency (PATCHES.md item
// 16). Against the ms the callbacks have taken (frames and the stream's own silence), it stays put to 0.1 ms while
// nothing is lost (measured: it creeps by ~0.1 ms per second, the sound server's clock smoothing), and steps by
// the silence played below: +40.0 ms at that underrun (README, "The echo path", for the runs measured). It also
// jumps by itself (ALSA's delay read high for a callback or two): only a step the callbacks' own lateness
// explains counts (note()).
/** PortAudio's paOutputUnderflow and paPrimingOutput: the callback's time info is not the DAC's then (ALSA reports
 *  a delay of 0 at an underrun) */
const UNTIMED_FLAGS = 0x4 | 0x10;
/** A step at least this large is silence played below (ms). The offset moves by under 0.5 ms per callback
 *  otherwise (the sound server's smoothing, measured under load); the canceller's filter follows moves of a few ms
 *  by itself (its 5 ms margin), so a smaller step is left to it. */
export const DAC_STEP_MS = 2;

export interface SilenceBelow {
  /** silence played below the stream (ms) */
  gapMs: number;
  /** the ms the callbacks took after it and before this one (the gap is before them, and before this one's) */
  afterMs: number;
}

export class DacClock {
  /** the last timed callback's DAC time less the ms the callbacks had taken before it */
  private offset: number | undefined;
  private takenMs = 0;
  /** ms taken by the callbacks since the last timed one (untimed callbacks: an underrun's) */
  private untimedMs = 0;
  /** how late, at most, a callback since the last timed one ran against the time its buffer was due at the DAC */
  private lateMs = -Infinity;
  readonly stats = { steps: 0, silenceMs: 0, unexplained: 0, backSteps: 0 };

  /**
   * One playback callback, in order: the ms of audio it took (frames and the stream's own silence), its status
   * flags, when it ran (steady-clock ms) and PortAudio's latency of its buffer to the DAC (ms; 0 when unknown).
   * Returns the silence played below the stream before this callback's buffer, if any.
   */
  note(takenMs: number, flags: number, atMs: number, latencyMs: number): SilenceBelow | undefined {
    const before = this.takenMs;
    this.takenMs += takenMs;
    // Silence can only have played below if a callback came after its buffer was due at the DAC (the buffer ran
    // dry): that lateness bounds the step. The DAC time alone also jumped by itself, once +26 ms for one callback
    // and back at the next (ALSA's delay read high), with the callbacks on time.
    if (this.offset !== undefined) this.lateMs = Math.max(this.lateMs, atMs - (this.offset + before));
    if (!(latencyMs > 0) || (flags & UNTIMED_FLAGS) !== 0) {
      this.untimedMs += takenMs;
      return undefined;
    }
    const offset = atMs + latencyMs - before;
    const last = this.offset;
    const afterMs = this.untimedMs;
    const lateMs = this.lateMs;
    this.offset = offset;
    this.untimedMs = 0;
    this.lateMs = -Infinity;
    if (last === undefined) return undefined;
    const step = offset - last;
    if (step <= -DAC_STEP_MS) this.stats.backSteps++;
    if (step < DAC_STEP_MS) return undefined;
    const gapMs = Math.min(step, lateMs);
    if (gapMs < DAC_STEP_MS) {
      this.stats.unexplained++;
      return undefined;
    }
    this.stats.steps++;
    this.stats.silenceMs += gapMs;
    return { gapMs, afterMs };
  }

  reset(): void {
    this.offset = undefined;
    this.takenMs = 0;
    this.untimedMs = 0;
    this.lateMs = -Infinity;
  }
}
