// The acoustic echo canceller on the microphone path: each 20 ms microphone frame (48 kHz) goes out with the
// echo of what the speaker played removed.
//   mic 48 kHz -> [to the processing rate] -> speex MDF + residual echo suppression (speexEcho.ts) -> [to 48 kHz]
// The reference fed to speex is what the downlink handed to the speaker (echoReference.ts), shifted by the bulk
// delay that echoDelay.ts finds in the signals, less a small margin so estimation error stays causal: speex's
// filter then only covers the room. The canceller also judges itself: converging (no delay yet, or the filter
// not yet reducing the echo), converged, diverged (the output louder than the input, or the echo reduction
// collapsed). The mic stage (micStages.ts) lets the half-duplex gate take over unless it is converged.
import type { Logger } from '../../common/logger.js';
import { silentLogger } from '../../common/logger.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../protocol/media.js';
import { EchoDelay, type DelayEstimate } from './echoDelay.js';
import { isAudible } from './echoGate.js';
import { EchoPrimer, warmUpPrimer } from './echoPrimer.js';
import { EchoReference, JUMP_MS, nsToSamples, StreamClock } from './echoReference.js';
import { SpeexEcho, SpeexResampler } from './speexEcho.js';

export type AecState = 'converging' | 'converged' | 'diverged';

export interface EchoCancellerOptions {
  reference: EchoReference;
  /** speex's adaptive filter: the room's tail plus the margin (default 80 ms: a living room's 60 ms tail, the
   *  margin, and some; a longer filter converges slower: measured on the echo room, 120 ms lost 3-4 dB in the
   *  first seconds) */
  filterMs?: number;
  /** the reference leads the estimated echo by this much (default 5 ms; the estimate is stable to 0.01 ms on a
   *  steady path, and each ms of margin is filter spent on nothing) */
  marginMs?: number;
  /** speex's noise suppression on the output (default off; with residualSuppression, a -3 dB floor, see there) */
  denoise?: boolean;
  /** speex's frame: 5, 10 or 20 ms (its filter adapts once per frame: 5 ms converges fastest, and the residual
   *  suppressor's one-frame delay stays 5 ms) */
  speexFrameMs?: 5 | 10 | 20;
  /** speex's second, steady filter's frame (default 10 ms; 0: none): sent once it cancels as well as the first,
   *  it adapts less on a user talking over the echo (speexEcho.ts) */
  steadyFrameMs?: 0 | 10 | 20;
  /** speex's residual echo suppression after the filter (default on): what the linear filter leaves (its
   *  misadjustment while it converges, the room's non-linear part) is suppressed per band; +10-15 dB ERLE on the
   *  echo room, near end (a tone 10 dB below the echo) through untouched */
  residualSuppression?: boolean;
  /** speex's residual echo suppression (dB), far end alone / during double talk */
  echoSuppressDb?: number;
  echoSuppressActiveDb?: number;
  logger?: Logger;
  /** warm V8 up on the canceller's heavy JavaScript (default true; false only to measure what that saves,
   *  bench/agent-aec.bench.ts; see KEEP_WARM_FRAMES) */
  warmUp?: boolean;
  /** hrtime (ns), injectable for offline processing */
  nowNs?: () => bigint;
}

export interface AecStats {
  state: AecState;
  /** bulk delay playback -> microphone in use (ms), undefined before the first estimate */
  delayMs: number | undefined;
  /** how far the delay's correlation peak stands above its floor (>= 8 is taken) */
  delayConfidence: number | undefined;
  /** echo return loss enhancement over the recent far-end activity (dB), undefined before any */
  erleDb: number | undefined;
  rate: number;
  /** whether the steady filter's output is sent (speexEcho.ts) */
  steadyFilter: boolean;
  delayChanges: number;
  resets: number;
  framesProcessed: number;
}

/** Capture frames in a row stamped over JUMP_MS late before the microphone's timeline re-anchors (500 ms). A
 *  stalled event loop gets the card's backlog late and in a burst (stamped 30-80 ms late, for 10-15 frames, on the
 *  loaded test machine), the samples contiguous: re-anchored after 3 frames, the timeline moved by up to 40 ms
 *  (within the jump threshold, so it never came back) and the echo delay with it: 204 -> 164 ms at the start of a
 *  story, a restart of the filter each time. Samples really lost (an overrun) stay late: re-anchored after this. */
const CAPTURE_LATE_FRAMES = 25;
/** how far back (frames) the delay estimator works (see process) */
const ESTIMATOR_LAG_FRAMES = 3;
/** A block of this many frames with the reference playing gives one ERLE measurement (200 ms). */
const BLOCK_FRAMES = 10;
/** ERLE (dB) of the linear filter a block must reach, twice in a row, to count as converged (and lift the gate).
 *  Measured on the echo room (issue #15, barge-in): at 10 dB the gate opened ~1.5 s into a story with the echo
 *  left at -40..-45 dBFS (voiced speech, 13 dB below the echo) and the companion's VAD took it for the user
 *  (the story cut, or "her" / "sorry" heard); from 20 dB on, what is sent stays under -55 dBFS. */
const CONVERGED_DB = 20;
/** An estimate this sure of a delay more than MOVED_MS away from the one in use, while converged, closes the gate
 *  at once (the echo path moved: the filter no longer matches it); two agreeing estimates then restart speex.
 *  Under 3 ms the filter follows by itself (the 5 ms margin), slowly (REALIGN_MS), and a move closing the gate
 *  on every wobble of the estimate would cut a user talking over the assistant. */
const MOVED_CONFIDENCE = 12;
const MOVED_MS = 3;
/** A smaller move, REALIGN_MS or more from where the echo was, found twice (within REALIGN_AGREE_MS) while the
 *  filter cancels poorly (its last block under CONVERGED_DB), re-aligns the filter (realign): the filter does
 *  not follow it by itself in good time. Measured on the echo room after the speaker's underruns: the echo moved
 *  2.25 ms, the filter stayed at 0-20 dB for 3-6 s (the gate shut on a user talking, or echo on the wire). The
 *  sure estimates of a path that has not moved stay within 0.25 ms of it (1930 of 1949 on the echo room, the
 *  other 19 after such a move), the user talking over the echo or not. */
const REALIGN_MS = 0.75;
const REALIGN_AGREE_MS = 0.5;
/** frames after a re-alignment before the next: estimates taken while the path moved must not restart the filter
 *  again and again */
const REALIGN_AFTER_FRAMES = 50;
/** A block this good, converged, keeps speex's filter (its impulse response) as the room's (see roomJob); the
 *  block of the first convergence keeps it whatever it is (judge). */
const ROOM_DB = 25;
/** seconds of reference a restart trains speex on with the kept room (1 s: 18-23 dB after it, 2 s: 26-28 dB,
 *  measured, agent-aec); at such a restart only, spread over ~15 frames (PRIME_FRAMES_PER_FRAME) */
const ROOM_PRIME_SECONDS = 2;
/** training frames (echoPrimer.ts) run per captured frame: 2 s of training and the frames captured meanwhile take
 *  ~15 captured frames (300 ms), 1-3 ms of work each; done at once, 30-90 ms on the loaded test machine stalled
 *  the event loop and the speaker underran (one 20 ms frame is queued ahead of it) */
const PRIME_FRAMES_PER_FRAME = 8;
/** blocks (of playback) after a speaker underrun in which an output louder than the microphone means the echo
 *  path moved with it (checkBreaks) */
const UNDERRUN_WATCH_BLOCKS = 2;
/** blocks (of playback) the gate holds at most after a break in the echo path (checkBreaks) */
const BREAK_HOLD_BLOCKS = 3;
/** the best recent ERLE decays by this per block (2 dB/s of far-end activity); below COLLAPSED_DB = collapsed */
const HOLD_DECAY_DB = 0.4;
const COLLAPSED_DB = 3;
/** blocks in a row with the output louder than the input (by 1 dB) = diverged */
const DIVERGED_BLOCKS = 3;
/** RMS (s16) above which the aligned reference counts as playing */
const ACTIVE_RMS = 100;
/** Far-end playing time after which, with no delay found, the microphone is taken not to hear the speaker clearly
 *  enough to measure (a headset, a speaker across the room): the delay is found within a second or two of speech
 *  where there is echo to find. The gate then goes back to its configured tail (echoSpanMs). */
const UNHEARD_AFTER_MS = 5000;
/**
 * The canceller's heavy JavaScript (the delay estimator's FFTs, the primer's convolution) runs only while the far
 * end plays, and V8 runs a function's first calls in its interpreter: the frame of a process's first delay estimate
 * took 26 ms on an idle machine and 40-54 ms beside a busy loop (warm: 4 and 5-13 ms), in the assistant's first
 * sentence, and the speaker underran right after it (its queue holds one 20 ms frame) in every run of the echo
 * room's barge-in test; the first convergence's training took 7-15 ms. So both run as the canceller is made
 * (EchoDelay's constructor, warmUpPrimer), and the estimator again after every KEEP_WARM_FRAMES of a silent far
 * end (0.8 ms, no allocation): Node 26 drops compiled code at V8's memory-reducing collections, which the memory
 * keeper asks for (an FFT 0.3 ms before, 12-30 ms after; Node 20 keeps it). A collection while the far end plays
 * still costs Node 26 a cold estimate or two, and one in the last seconds of a silence the next answer's first.
 */
const KEEP_WARM_FRAMES = 250;

export class EchoCanceller {
  readonly rate: number;
  private readonly reference: EchoReference;
  private readonly speex: SpeexEcho;
  private readonly delay: EchoDelay;
  private readonly down: SpeexResampler | undefined;
  private readonly up: SpeexResampler | undefined;
  private readonly clock: StreamClock;
  private readonly frame: number; // samples per frame at the processing rate
  private readonly sub: number; // samples per speex frame
  private readonly cleaned: Int16Array;
  /** the linear filter's output (before residual suppression), which judge() rates: suppression alone (of a
   *  microphone that no longer hears the speaker, say) is no proof of a working filter */
  private readonly linear: Int16Array;
  private readonly margin: number;
  private readonly filterMs: number;
  private readonly refNow: Int16Array;
  private readonly micHistory: Int16Array;
  private readonly refAligned: Int16Array;
  private readonly out48 = new Int16Array(FRAME_SAMPLES);
  /** speex being trained (a restart, or the steady filter's lesson), a slice per captured frame: the training
   *  frames, then the live frames captured meanwhile (backlog), in order, so the filter sees one continuous
   *  stream. steadyOnly: the fast filter runs live meanwhile; else the microphone passes as it is until the
   *  restarted filter has caught up (the gate covers the echo: the canceller is not converged then). */
  private job: { primer: EchoPrimer; steadyOnly: boolean; backlog: Array<{ mic: Int16Array; ref: Int16Array }> } | undefined;
  /** speex starts afresh before the next frame, primed with the far end alone (silent) or with the room */
  private restartPending: false | 'silent' | 'room' = false;
  /** the fast filter has just converged: the steady one is trained on its response before the next frame */
  private steadyPending = false;
  /** the room as the filter had it when it last cancelled well (ROOM_DB, or at the first convergence): its
   *  impulse response, and where the echo then was against the delay in use (samples; the filter follows moves
   *  under MOVED_MS by itself) */
  private room: Float32Array | undefined;
  private roomOffset = 0;
  /** the recent estimates near the delay in use, averaged (samples): where the echo really is */
  private delaySeen = 0;
  /** a sure estimate REALIGN_MS or more from delaySeen, waiting for a second one to agree (samples; realign) */
  private realignTo: number | undefined;
  /** the ERLE of the last block judged (dB) */
  private lastBlockDb: number | undefined;
  /** framesProcessed at the last re-alignment */
  private realignedAt = -Infinity;
  /** the estimator's count of estimates when the gate's last hold after a break began (holdAfterBreak) */
  private estimatesAtHold = 0;
  private readonly log: Logger;
  private delayInUse: number | undefined; // samples
  private state: AecState = 'converging';
  private blockIn = 0;
  private blockOut = 0;
  /** the loudest frame's mean square of the output after residual suppression in the block (debug log only) */
  private blockCleanedPeak = 0;
  private blockFrames = 0;
  private goodBlocks = 0;
  private loudBlocks = 0;
  private erleHold = 0;
  private erleDb: number | undefined;
  private closed = false;
  /** the streams' discontinuities last seen: the reference's and the microphone's jumps */
  private breaksSeen = '';
  /** whether the steady filter's taking over was logged (noteSteady) */
  private steadyLogged = false;
  /** blocks left of the gate's hold after a break */
  private breakHold = 0;
  /** the speaker's starved ms last seen, and the blocks left to watch after an underrun (checkBreaks) */
  private starvedSeen = 0;
  private underrunWatch = 0;
  private readonly counts = { delayChanges: 0, resets: 0, framesProcessed: 0 };
  /** frames with the far end playing (at the estimator's lag) while no delay was in use */
  private unmeasuredFarEndFrames = 0;
  /** frames in a row with the far end silent (at the estimator's lag) */
  private quietFrames = 0;
  private readonly keepWarm: boolean;
  /** called on every state change, with the reason */
  onState: ((state: AecState, reason: string) => void) | undefined;

  constructor(o: EchoCancellerOptions) {
    this.reference = o.reference;
    this.rate = o.reference.rate;
    if (this.rate !== 16_000 && this.rate !== 48_000) throw new RangeError(`echo canceller: rate ${this.rate} (16000 or 48000)`);
    this.frame = (FRAME_SAMPLES * this.rate) / SAMPLE_RATE;
    this.margin = Math.round(((o.marginMs ?? 5) * this.rate) / 1000);
    this.filterMs = o.filterMs ?? 80;
    this.sub = ((o.speexFrameMs ?? 5) * this.rate) / 1000;
    const steady = ((o.steadyFrameMs ?? 10) * this.rate) / 1000;
    this.speex = new SpeexEcho({ sampleRate: this.rate, frameSize: this.sub, steadyFrameSize: steady > this.sub ? steady : undefined, filterMs: this.filterMs, denoise: o.denoise, residualSuppression: o.residualSuppression ?? true, echoSuppressDb: o.echoSuppressDb, echoSuppressActiveDb: o.echoSuppressActiveDb });
    this.cleaned = new Int16Array(this.frame);
    this.linear = new Int16Array(this.frame);
    this.keepWarm = o.warmUp ?? true;
    this.delay = new EchoDelay({ rate: this.rate, warmUp: this.keepWarm });
    if (this.rate !== SAMPLE_RATE) {
      this.down = new SpeexResampler(SAMPLE_RATE, this.rate);
      this.up = new SpeexResampler(this.rate, SAMPLE_RATE);
    }
    this.clock = new StreamClock((JUMP_MS * this.rate) / 1000, CAPTURE_LATE_FRAMES);
    this.refNow = new Int16Array(this.frame);
    this.micHistory = new Int16Array(this.frame * (ESTIMATOR_LAG_FRAMES + 1));
    this.refAligned = new Int16Array(this.frame);
    this.log = o.logger ?? silentLogger;
    if (this.keepWarm) warmUpPrimer(this.frame, this.rate); // the estimator warms itself up as it is made (KEEP_WARM_FRAMES)
  }

  /** One captured frame (48 kHz, FRAME_SAMPLES) and the hrtime the card delivered it. Returns the cleaned frame
   *  (a buffer reused by the next call). */
  process(pcm: Int16Array, capturedAtNs: bigint): Int16Array {
    if (this.closed) return pcm;
    const mic = this.down ? this.down.process(pcm) : pcm;
    if (mic.length !== this.frame) return pcm; // not a 20 ms frame: nothing to align it with
    this.counts.framesProcessed++;
    // the frame's first sample was captured one frame before it was delivered
    const pos = this.clock.place(nsToSamples(capturedAtNs, this.rate) - this.frame, this.frame);
    // The estimator looks ESTIMATOR_LAG_FRAMES back, where the reference is surely written (after an underrun
    // the downlink writes each frame just as it is played); the same lag on both sides leaves the delay as it is.
    const slots = ESTIMATOR_LAG_FRAMES + 1;
    const n = this.counts.framesProcessed;
    this.micHistory.set(mic, (n % slots) * this.frame);
    if (n > ESTIMATOR_LAG_FRAMES) {
      const old = ((n - ESTIMATOR_LAG_FRAMES) % slots) * this.frame;
      this.reference.read(pos - ESTIMATOR_LAG_FRAMES * this.frame, this.refNow);
      const playing = isAudible(this.refNow, ACTIVE_RMS);
      if (this.delayInUse === undefined && playing) this.unmeasuredFarEndFrames++;
      if (playing) this.quietFrames = 0;
      else if (++this.quietFrames >= KEEP_WARM_FRAMES) {
        this.quietFrames = 0;
        if (this.keepWarm) this.delay.warmUp();
      }
      const last = this.delay.last;
      if (this.delay.push(this.micHistory.subarray(old, old + this.frame), this.refNow)) this.onDelay();
      else if (this.delay.last !== last) this.onEstimate(this.delay.last!);
      if (this.delay.last !== last) this.noteEstimate(this.delay.last!);
    }
    this.checkBreaks();
    let out: Int16Array = mic;
    if (this.delayInUse !== undefined) {
      if (this.restartPending) this.prime(pos - Math.max(0, this.delayInUse - this.margin), this.restartPending);
      else if (this.steadyPending) this.primeSteady(pos - Math.max(0, this.delayInUse - this.margin));
      this.reference.read(pos - Math.max(0, this.delayInUse - this.margin), this.refAligned);
      const job = this.job;
      if (!job || job.steadyOnly) {
        this.cleaned.set(this.speex.process(mic, this.refAligned));
        this.linear.set(this.speex.linear);
        if (this.speex.steadyFilterInUse !== this.steadyLogged) this.noteSteady();
        out = this.cleaned;
        this.judge(mic, this.linear, this.refAligned, this.cleaned);
        if (job) this.stepJob(job, mic);
      } else if (this.stepJob(job, mic)) {
        // the restarted filter has caught up with this frame: its output is this frame's
        out = this.cleaned;
        this.judge(mic, this.linear, this.refAligned, this.cleaned);
      }
    }
    if (!this.up) {
      this.out48.set(out);
      return this.out48;
    }
    const up = this.up.process(out);
    if (up.length === FRAME_SAMPLES) return up;
    return pcm;
  }

  get currentState(): AecState {
    return this.state;
  }

  /** How long after the end of a frame handed to the speaker (at the queue depth it was handed with) its echo
   *  may still be heard at the microphone: the delay, less the margin, plus the filter's span (the room's tail it
   *  models) and one capture frame (a frame is stamped when its last sample arrives). The delay is the one in use
   *  once found; before that, the longest the estimator looks for (595 ms by default): until the canceller has
   *  measured the path, the half-duplex gate (micStages.ts) must not guess it short. undefined when the far end has
   *  played for UNHEARD_AFTER_MS with no delay found: there is no echo clear enough to measure, nor to fear. */
  get echoSpanMs(): number | undefined {
    let delayMs: number;
    if (this.delayInUse !== undefined) delayMs = (this.delayInUse * 1000) / this.rate;
    else if (this.unmeasuredFarEndFrames * ((this.frame * 1000) / this.rate) < UNHEARD_AFTER_MS) delayMs = this.delay.maxMs;
    else return undefined;
    return delayMs - (this.margin * 1000) / this.rate + this.filterMs + (FRAME_SAMPLES * 1000) / SAMPLE_RATE;
  }

  /** Whether the echo path's delay has been measured (echoSpanMs is then the measured span). */
  get echoPathMeasured(): boolean {
    return this.delayInUse !== undefined;
  }

  stats(): AecStats {
    return {
      state: this.state,
      delayMs: this.delayInUse === undefined ? undefined : round1((this.delayInUse * 1000) / this.rate),
      delayConfidence: this.delay.current ? round1(this.delay.current.confidence) : undefined,
      erleDb: this.erleDb === undefined ? undefined : round1(this.erleDb),
      rate: this.rate,
      steadyFilter: this.speex.steadyFilterInUse,
      ...this.counts,
    };
  }

  /** The estimator's view, for diagnosis (doctor). */
  get delayEstimator(): EchoDelay {
    return this.delay;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.speex.close();
    this.delay.close();
    this.down?.close();
    this.up?.close();
  }

  private onDelay(): void {
    const d = this.delay.current!;
    const samples = Math.round((d.delayMs * this.rate) / 1000);
    const before = this.delayInUse;
    // A few ms the filter follows by itself (the margin; after a break in the path the gate covers it,
    // checkBreaks), or is re-aligned once it cancels poorly (realign); more, and the filter is misplaced: start it
    // afresh. (Restarting on every confirmed move of 1 ms or more, cancelling well or not, cost the delay-change
    // test its 25 dB: the estimate then wobbled by 1-1.5 ms on the real path.)
    if (before !== undefined && Math.abs(samples - before) < (MOVED_MS * this.rate) / 1000) return;
    this.delayInUse = samples;
    this.delaySeen = samples;
    this.counts.delayChanges++;
    this.log.info({ delayMs: d.delayMs, confidence: round1(d.confidence), beforeMs: before === undefined ? undefined : (before * 1000) / this.rate }, 'echo canceller: echo delay found');
    // The same room heard later (a reopened device, a new latency) needs no new filter: only the alignment moved.
    this.restart(before !== undefined && this.room ? 'room' : 'silent');
    if (before !== undefined) {
      this.counts.resets++;
      this.setState('converging', `the echo delay changed from ${round1((before * 1000) / this.rate)} to ${d.delayMs} ms`);
    }
    this.resetJudgement();
  }

  /**
   * A stream re-anchored (its stamps jumped: a device reopened, capture samples lost) is a break in the echo path:
   * where the new samples sit is known only to the stamps' jitter, and a shift of even 1-2 ms misplaces every
   * tap of the filter. The gate takes over at once (the echo of what follows the break reaches the microphone a
   * bulk delay later, so nothing leaks) until the filter has proved itself again (two blocks >= CONVERGED_DB),
   * for BREAK_HOLD_BLOCKS at most: the user talking over the assistant keeps the blocks low, and must not be cut
   * for long. A filter that lost the echo (a block under COLLAPSED_DB then) starts afresh, primed. A path that
   * really moved is re-tracked.
   * A speaker underrun is not a break: the reference puts the silence the device played where it played it
   * (EchoReference.noteStarved). It used to put it one frame late (after the frame a stalled event loop wrote
   * on the report before the silence's), and the filter lost 10-30 dB for 200-400 ms after each underrun on the
   * loaded test machine (echo only: 24-49 dB before, 4-16 dB after), so the gate held 400-600 ms after every
   * underrun, cutting a user talking over the assistant (double talk heard in 58-75 % of the windows when it
   * fell in the command); placed right, the filter keeps 19-46 dB through them. Not always: once in ~20 runs
   * the echo moved ~15 ms at an underrun and the output came out 2-3 dB louder than the microphone, echo on the
   * wire until the filter was declared diverged 600 ms later. Part of that was silence the sound server played
   * below PortAudio (its audio thread late, the ALSA buffer run dry), which the reference now learns from
   * PortAudio's DAC times (dacClock.ts); the echo room's own underruns (test/support/echoRoomMain.ts) move the
   * path too, for up to 500 ms. So the first blocks after an underrun are watched: louder than the microphone
   * (which a filter in place never is, the user talking or not: it only takes echo away) is a break.
   */
  private checkBreaks(): void {
    const starved = this.reference.stats.starvedMs;
    if (starved !== this.starvedSeen) {
      this.starvedSeen = starved;
      if (this.state === 'converged') this.underrunWatch = UNDERRUN_WATCH_BLOCKS;
    }
    const breaks = `${this.reference.stats.jumps} ${this.clock.jumps}`;
    if (breaks === this.breaksSeen) return;
    this.breaksSeen = breaks;
    if (this.state !== 'converged') return;
    this.resetJudgement();
    this.holdAfterBreak();
    this.setState('converging', `a break in the echo path (a stream re-anchored; reference and microphone jumps: ${breaks})`);
  }

  /** A new estimate that does not (yet) change the delay: a sure one far from the delay in use means the echo
   *  path moved (an underrun somewhere on it, a device's latency changed) and the filter no longer matches it:
   *  the gate takes over now, not once two estimates agree (up to 1.5 s of echo on the wire, measured on the echo
   *  room). No restart: a path that moves back finds the filter as it was. Near-end speech over the echo leaves
   *  the peak where it was, only lower. */
  private onEstimate(e: DelayEstimate): void {
    if (this.state !== 'converged' || this.delayInUse === undefined || e.confidence < MOVED_CONFIDENCE) return;
    // a peak on the edge of the searched lags is the edge, not an echo (seen at 500 ms, confidence 18.8)
    if (e.delayMs <= this.delay.minMs + 1 || e.delayMs >= this.delay.maxMs - 1) return;
    const inUseMs = (this.delayInUse * 1000) / this.rate;
    if (Math.abs(e.delayMs - inUseMs) <= MOVED_MS) return;
    this.resetJudgement();
    this.setState('converging', `the echo path moved: ${e.delayMs} ms found (confidence ${round1(e.confidence)}), ${round1(inUseMs)} ms in use`);
  }

  /** Averages the sure estimates near the delay in use: the echo's creep the filter follows by itself, which a
   *  kept room must be moved by when the delay in use changes (roomJob). */
  private noteEstimate(e: DelayEstimate): void {
    if (this.delayInUse === undefined || e.confidence < MOVED_CONFIDENCE) return;
    const samples = (e.delayMs * this.rate) / 1000;
    if (Math.abs(samples - this.delayInUse) > (MOVED_MS * this.rate) / 1000) return;
    if (this.realign(samples)) return;
    // A move while the filter cancels poorly (or is not judged yet: a restart) is kept apart for realign: averaged
    // in, a move just over REALIGN_MS would fall under it before the second estimate.
    const near = Math.abs(samples - this.delaySeen) < (REALIGN_MS * this.rate) / 1000;
    if (near || (this.lastBlockDb !== undefined && this.lastBlockDb >= CONVERGED_DB)) this.delaySeen += 0.2 * (samples - this.delaySeen);
  }

  /**
   * The echo moved by less than MOVED_MS (an underrun's silence placed a ms or two off, on the speaker's side or
   * the sound server's): speex's filter, every tap a ms or two off, cancels 0-15 dB and adapts back only in
   * seconds. Found twice, with the filter cancelling poorly (the user talking over the echo leaves the estimate
   * where it was), the filter is placed where the echo now is and restarted from the kept room (roomJob), as for
   * a larger move (onDelay); the gate holds as after a break (checkBreaks): until it has proved itself, for
   * BREAK_HOLD_BLOCKS at most (a user talking keeps the blocks low). Not before a room is kept: until the first
   * convergence the filter cancels poorly anyway, and a restart would only set it back. Returns whether it
   * re-aligned.
   */
  private realign(samples: number): boolean {
    const per = this.rate / 1000;
    // not while a restart's training runs (it cancels poorly until it has caught up), nor before the restarted
    // filter's first block is judged (prime clears lastBlockDb)
    const settled = this.room !== undefined && !this.restartPending && !this.job && this.counts.framesProcessed - this.realignedAt >= REALIGN_AFTER_FRAMES;
    const poor = this.lastBlockDb !== undefined && this.lastBlockDb < CONVERGED_DB;
    if (Math.abs(samples - this.delaySeen) < REALIGN_MS * per) {
      this.realignTo = undefined;
      return false;
    }
    if (!settled || !poor) return false; // the move stays noted (realignTo) for when the filter is judged
    if (this.realignTo === undefined || Math.abs(samples - this.realignTo) > REALIGN_AGREE_MS * per) {
      this.realignTo = samples;
      return false;
    }
    this.moveFilter(samples);
    return true;
  }

  /** The gate holds after a break (checkBreaks) or a re-alignment, for BREAK_HOLD_BLOCKS at most. An estimate
   *  from before it may be of the echo before the path moved (lastMove). */
  private holdAfterBreak(): void {
    this.breakHold = BREAK_HOLD_BLOCKS;
    this.estimatesAtHold = this.delay.stats.estimates;
  }

  /** The estimator's last estimate (samples), if made since the hold began (holdAfterBreak), counted (its
   *  minConfidence: the user talking over the echo lowers it under MOVED_CONFIDENCE) and a move realign would take
   *  (REALIGN_MS or more from where the echo was, under MOVED_MS from the delay in use); else undefined. Only
   *  where the filter has lost the echo anyway: a wrong place costs what a restart in place does. */
  private lastMove(): number | undefined {
    const e = this.delay.last;
    if (!e || this.delay.stats.estimates <= this.estimatesAtHold) return undefined;
    if (e.confidence < this.delay.minConfidence || this.delayInUse === undefined) return undefined;
    const samples = (e.delayMs * this.rate) / 1000;
    const per = this.rate / 1000;
    if (Math.abs(samples - this.delaySeen) < REALIGN_MS * per || Math.abs(samples - this.delayInUse) > MOVED_MS * per) return undefined;
    return samples;
  }

  /** Places the filter where the echo now is (samples) and restarts it from the kept room (realign). */
  private moveFilter(samples: number): void {
    const per = this.rate / 1000;
    const fromMs = this.delaySeen / per;
    this.realignTo = undefined;
    this.realignedAt = this.counts.framesProcessed;
    this.delayInUse = this.delaySeen = Math.round(samples);
    this.counts.delayChanges++;
    this.counts.resets++;
    this.log.info({ delayMs: round1(samples / per), beforeMs: round1(fromMs) }, 'echo canceller: echo path re-aligned');
    this.resetJudgement();
    this.holdAfterBreak();
    this.restart('room');
    this.setState('converging', `the echo moved from ${round1(fromMs)} to ${round1(samples / per)} ms: the filter re-aligned`);
  }

  /** speex starts afresh before the next frame: misplaced (a new delay) or diverged. */
  private restart(how: 'silent' | 'room' = 'silent'): void {
    this.restartPending = how;
  }

  /**
   * Resets speex and primes it with the second of aligned reference before `refPos`, against a silent microphone.
   * speex scales its adaptation step by its running estimate of the far end's power, which a reset sets to zero:
   * started in the middle of speech it took huge steps, diverged, and stayed stuck at 5-10 dB for 15 s and more
   * (measured on a recording from the echo room, 5 ms frames; 10-20 ms frames recover in seconds). With the far
   * end's power known first, it reached 20-27 dB within 1 s from every start point tried. A silent microphone
   * leaves no error to adapt the filter on, so priming only fills the estimates. One second of speex's work, at
   * each restart only, run a slice per captured frame (stepJob).
   */
  private prime(refPos: number, how: 'silent' | 'room'): void {
    this.restartPending = false;
    this.steadyPending = false;
    this.lastBlockDb = undefined;
    // an estimate noted against the filter before the restart is no evidence against the new one
    this.realignTo = undefined;
    this.speex.reset();
    const n = Math.floor(this.rate / this.frame) * this.frame;
    if (how === 'room' && this.room) {
      this.job = this.roomJob(refPos, ROOM_PRIME_SECONDS * n, this.room, this.roomOffset, false);
      return;
    }
    const ref = new Int16Array(n);
    this.reference.read(refPos - n, ref);
    this.job = { primer: new EchoPrimer({ reference: ref, frame: this.frame, rate: this.rate }), steadyOnly: false, backlog: [] };
  }

  /**
   * Runs the job's next slice (PRIME_FRAMES_PER_FRAME frames of training, then of the backlog); the live frame
   * joins the backlog first. Returns true when the job has caught up with the live frame (a full restart's
   * output of it is then in `cleaned` and `linear`).
   */
  private stepJob(job: NonNullable<EchoCanceller['job']>, mic: Int16Array): boolean {
    job.backlog.push({ mic: mic.slice(), ref: this.refAligned.slice() });
    for (let budget = PRIME_FRAMES_PER_FRAME; budget > 0; budget--) {
      const t = job.primer.next() ?? job.backlog.shift();
      if (!t) break;
      if (job.steadyOnly) this.speex.trainSteady(t.mic, t.ref);
      else {
        this.cleaned.set(this.speex.process(t.mic, t.ref));
        this.linear.set(this.speex.linear);
      }
    }
    if (!job.primer.done || job.backlog.length > 0) return false;
    this.job = undefined;
    if (job.steadyOnly) {
      this.speex.steadyPaused = false;
      this.speex.steadyAllowed = true;
    }
    return true;
  }

  /**
   * A bulk delay that moved (a reopened device, a new latency) leaves the room as it was, but the filter, adapting
   * on a misaligned reference until the new delay is found (0.6-0.9 s), has lost it: kept and re-aligned it
   * started at 9 dB and took as long as a fresh one (measured, agent-aec), and it is lost within 0.3 s, before
   * any estimate can see the move. So the room is kept aside while the filter cancels well (its impulse
   * response, ROOM_DB) and a restart trains speex on it: the last n samples of reference at the new alignment
   * against the echo that room makes of them (the reference convolved with the kept response), no microphone in
   * it, so no user's voice either (training on the real last second of microphone was tried: it holds the user
   * talking over the assistant, and the delay-change test failed 9 runs in 16). A room that changed too: speex
   * adapts from the old one (a reopened device into another room: converged 3.7 s after the change; restarted
   * afresh when the old room had not converged within 1 s, 4.4 s, measured, echoDelay.test.ts); a filter that
   * makes the echo louder restarts (judge).
   */
  private roomJob(refPos: number, n: number, h: Float32Array, offset: number, steadyOnly: boolean): NonNullable<EchoCanceller['job']> {
    const L = h.length;
    const ref = new Int16Array(n + L);
    this.reference.read(refPos - n - L, ref);
    // the echo lay roomOffset later than the old delay in use; the new one is where the echo is
    const room = new Float32Array(L);
    for (let i = 0; i < L; i++) room[i] = h[i + offset] ?? 0;
    return { primer: new EchoPrimer({ reference: ref, frame: this.frame, room, rate: this.rate }), steadyOnly, backlog: [] };
  }

  /**
   * The fast filter has converged: the steady one (speexEcho.ts), adapting slower, is not there yet (3.2 s against
   * 1.9 s from the first far-end speech, in-process), and a user talking before it is would meet the fast one.
   * So it learns the fast filter's response as roomJob teaches a restarted filter the kept room (2 s of
   * reference through it, a slice per captured frame: stepJob), and may take over from then on.
   */
  private primeSteady(refPos: number): void {
    this.steadyPending = false;
    if (!this.speex.hasSteady) return;
    const n = Math.floor(this.rate / this.frame) * this.frame;
    // the steady filter learns from this frame on (the job runs it on the frames captured meanwhile)
    this.speex.steadyPaused = true;
    this.job = this.roomJob(refPos, ROOM_PRIME_SECONDS * n, this.speex.impulseResponse(), 0, true);
  }

  /** Rates the linear filter's output `out` against the microphone over blocks of far-end activity; `cleaned` (the
   *  output after residual suppression, what is sent once the gate lifts) only goes into the debug log. */
  private judge(mic: Int16Array, out: Int16Array, ref: Int16Array, cleaned: Int16Array): void {
    let r = 0;
    for (let i = 0; i < ref.length; i++) r += ref[i] * ref[i];
    if (r < ACTIVE_RMS * ACTIVE_RMS * ref.length) return;
    let a = 0;
    let b = 0;
    let c = 0;
    for (let i = 0; i < mic.length; i++) {
      a += mic[i] * mic[i];
      b += out[i] * out[i];
      c += cleaned[i] * cleaned[i];
    }
    this.blockIn += a;
    this.blockOut += b;
    this.blockCleanedPeak = Math.max(this.blockCleanedPeak, c / cleaned.length);
    if (++this.blockFrames < BLOCK_FRAMES) return;
    const erle = 10 * Math.log10((this.blockIn + 1) / (this.blockOut + 1));
    // every block, for a diagnosis after the fact (the echo tests' accounts run the agent at debug): with the
    // loudest 20 ms of the output, which the server's VAD hears once the gate has lifted
    if (this.log.isLevelEnabled('debug')) {
      const e = this.delay.last;
      const outDbfs = round1(10 * Math.log10((this.blockCleanedPeak + 1) / 32768 ** 2));
      this.log.debug({ erleDb: round1(erle), delayMs: e?.delayMs, confidence: e && round1(e.confidence), outDbfs }, 'echo canceller: block');
    }
    this.blockIn = this.blockOut = this.blockFrames = this.blockCleanedPeak = 0;
    this.lastBlockDb = erle;
    this.erleDb = this.erleDb === undefined ? erle : 0.7 * this.erleDb + 0.3 * erle;
    this.erleHold = Math.max(erle, this.erleHold - HOLD_DECAY_DB);
    this.goodBlocks = erle >= CONVERGED_DB ? this.goodBlocks + 1 : 0;
    this.delay.relaxed = this.state === 'converged' && erle >= CONVERGED_DB;
    this.loudBlocks = erle < -1 ? this.loudBlocks + 1 : 0;
    const watched = this.underrunWatch > 0;
    if (watched) this.underrunWatch--;
    if (this.state === 'converged') {
      if (watched && erle < 0) {
        this.resetJudgement();
        this.holdAfterBreak();
        this.setState('converging', `a break in the echo path at a speaker underrun (the output ${round1(-erle)} dB louder than the microphone)`);
      } else if (this.loudBlocks >= DIVERGED_BLOCKS) this.diverge(`the output was louder than the microphone for ${DIVERGED_BLOCKS * BLOCK_FRAMES * 20} ms of playback`);
      else if (this.erleHold < COLLAPSED_DB) this.diverge(`the echo reduction fell below ${COLLAPSED_DB} dB`);
    } else if (this.breakHold > 0 && --this.breakHold === 0 && this.goodBlocks < 2) {
      const movedTo = erle < COLLAPSED_DB && this.room ? (this.realignTo ?? this.lastMove()) : undefined;
      if (movedTo !== undefined) {
        // the filter lost the echo, and the estimator has found it elsewhere (a move noted for realign, or its last
        // estimate): there. Restarted where it was, the filter stayed lost until two more estimates re-aligned it,
        // the user's words gated meanwhile: after a burst of underruns (three 0.7 ms moves, 200 ms apart), 1 s later
        this.moveFilter(movedTo);
      } else if (erle < COLLAPSED_DB) {
        // the room is as it was (a break moves the alignment, not the walls): from it, not from nothing
        this.restart(this.room ? 'room' : 'silent');
        this.counts.resets++;
      } else this.setState('converged', `${round1(erle)} dB ${BREAK_HOLD_BLOCKS * BLOCK_FRAMES * 20} ms after a break in the echo path (the near end talking?)`);
    } else if (this.goodBlocks >= 2) {
      this.setState('converged', `echo reduced by ${round1(erle)} dB at a delay of ${round1((this.delayInUse! * 1000) / this.rate)} ms`);
    } else if (this.state === 'converging' && this.loudBlocks >= DIVERGED_BLOCKS) {
      this.restart();
      this.counts.resets++;
      this.loudBlocks = 0;
    }
    // The room is kept from every block this good while converged, and from the block that first converges
    // whatever it is (CONVERGED_DB or more): a break right after the first convergence with none kept restarted
    // speex from nothing, and with the user talking over the echo it converged again only 4.7 s later, the gate
    // shut meanwhile (synthetic room; 5.6 s on the echo room); from the room, and re-aligned, 2.5 s
    // (echoDelay.test.ts).
    if (this.state === 'converged' && (erle >= ROOM_DB || (!this.room && erle >= CONVERGED_DB))) {
      this.room = this.speex.impulseResponse(this.room);
      this.roomOffset = Math.round(this.delaySeen - this.delayInUse!);
    }
  }

  /** The steady filter took over (or a restart went back to the fast one): logged, since a user talking over the
   *  assistant before it does meets the fast filter, which adapts on the voice (speexEcho.ts). */
  private noteSteady(): void {
    this.steadyLogged = this.speex.steadyFilterInUse;
    if (this.steadyLogged) this.log.info({ erleDb: this.erleDb === undefined ? undefined : round1(this.erleDb) }, 'echo canceller: steady filter in use');
  }

  private diverge(reason: string): void {
    this.restart();
    this.counts.resets++;
    this.resetJudgement();
    this.setState('diverged', reason);
  }

  private resetJudgement(): void {
    this.breakHold = 0;
    this.underrunWatch = 0;
    this.delay.relaxed = false;
    this.blockIn = this.blockOut = this.blockFrames = this.blockCleanedPeak = 0;
    this.goodBlocks = this.loudBlocks = 0;
    this.erleHold = 0;
  }

  private setState(state: AecState, reason: string): void {
    if (state === this.state) return;
    this.state = state;
    // the steady filter learns the fast one's response and may take over (primeSteady); a restart resets it
    if (state === 'converged' && !this.speex.steadyAllowed) this.steadyPending = true;
    this.log.info({ state, reason }, `echo canceller: ${state}`);
    this.onState?.(state, reason);
  }
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
