// libspeexdsp's acoustic echo canceller (MDF adaptive filter) and its preprocessor (residual echo suppression,
// optional noise suppression), called in-process through koffi. Debian: libspeexdsp1 (libspeexdsp.so.1).
// One SpeexEcho processes one mono s16 stream at one rate in fixed frames: process(mic, reference) returns the
// microphone with the reference's echo removed. The reference must lead its echo in the microphone by 0 to
// filterMs: aligning the two (the bulk delay) is the caller's work (echoDelay.ts, echoCanceller.ts).
import koffi from 'koffi';
import { AgentError } from '../errors.js';

// speex/speex_echo.h and speex/speex_preprocess.h (libspeexdsp 1.2)
const SPEEX_ECHO_SET_SAMPLING_RATE = 24;
const SPEEX_ECHO_GET_IMPULSE_RESPONSE_SIZE = 27;
const SPEEX_ECHO_GET_IMPULSE_RESPONSE = 29;
const SPEEX_PREPROCESS_SET_DENOISE = 0;
const SPEEX_PREPROCESS_SET_NOISE_SUPPRESS = 18;
const SPEEX_PREPROCESS_SET_ECHO_SUPPRESS = 20;
const SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE = 22;
const SPEEX_PREPROCESS_SET_ECHO_STATE = 24;

type Fn = (...args: unknown[]) => unknown;
interface SpeexApi {
  echoInit: Fn;
  echoDestroy: Fn;
  echoCancel: Fn;
  echoCtl: Fn;
  echoCtlPtr: Fn;
  echoReset: Fn;
  preInit: Fn;
  preDestroy: Fn;
  preCtl: Fn;
  preCtlPtr: Fn;
  preRun: Fn;
  rsInit: Fn;
  rsProcess: Fn;
  rsDestroy: Fn;
}

export const SPEEXDSP_LIBRARY = 'libspeexdsp.so.1';

let api: SpeexApi | undefined;
function speex(): SpeexApi {
  if (api) return api;
  let lib: ReturnType<typeof koffi.load>;
  try {
    lib = koffi.load(SPEEXDSP_LIBRARY);
  } catch (cause) {
    throw new AgentError(
      'audio',
      `the echo canceller needs ${SPEEXDSP_LIBRARY} (Debian/Raspberry Pi OS: apt install libspeexdsp1), or set audio.duplex to half or full`,
      { cause },
    );
  }
  api = {
    echoInit: lib.func('void *speex_echo_state_init(int frame_size, int filter_length)') as Fn,
    echoDestroy: lib.func('void speex_echo_state_destroy(void *st)') as Fn,
    echoCancel: lib.func('void speex_echo_cancellation(void *st, const int16_t *rec, const int16_t *play, int16_t *out)') as Fn,
    echoCtl: lib.func('int speex_echo_ctl(void *st, int request, _Inout_ int32_t *ptr)') as Fn,
    echoCtlPtr: lib.func('int speex_echo_ctl(void *st, int request, void *ptr)') as Fn,
    echoReset: lib.func('void speex_echo_state_reset(void *st)') as Fn,
    preInit: lib.func('void *speex_preprocess_state_init(int frame_size, int sampling_rate)') as Fn,
    preDestroy: lib.func('void speex_preprocess_state_destroy(void *st)') as Fn,
    preCtl: lib.func('int speex_preprocess_ctl(void *st, int request, _Inout_ int32_t *ptr)') as Fn,
    preCtlPtr: lib.func('int speex_preprocess_ctl(void *st, int request, void *ptr)') as Fn,
    preRun: lib.func('int speex_preprocess_run(void *st, int16_t *x)') as Fn,
    rsInit: lib.func('void *speex_resampler_init(uint32_t channels, uint32_t in_rate, uint32_t out_rate, int quality, _Out_ int *err)') as Fn,
    rsProcess: lib.func(
      'int speex_resampler_process_int(void *st, uint32_t channel, const int16_t *input, _Inout_ uint32_t *in_len, int16_t *output, _Inout_ uint32_t *out_len)',
    ) as Fn,
    rsDestroy: lib.func('void speex_resampler_destroy(void *st)') as Fn,
  };
  return api;
}

export interface SpeexEchoOptions {
  sampleRate: number;
  /** samples per process() call (speex works best with 10-20 ms) */
  frameSize: number;
  /** adaptive filter length: the room's echo tail it can cancel, plus the alignment margin */
  filterMs: number;
  /** a second adaptive filter on the same signals with frames this long (a multiple of frameSize), sent once it
   *  cancels at least as well as the first (see SpeexEcho): speex's filter adapts by the same step each frame, so
   *  short frames converge fast but also adapt more per second on a user talking over the echo; process() then
   *  takes multiples of this */
  steadyFrameSize?: number;
  /** speex's preprocessor after the filter: residual echo suppression (and denoise). It delays the output by one
   *  frame (its overlap-add: keep frames short). speex applies the gains it computes (the echo's included) only
   *  with its denoiser on, so residual suppression turns the denoiser on too, with a -3 dB noise floor (the near
   *  end and the room's noise go out almost as captured) unless noiseSuppressDb says otherwise: without it the
   *  suppressor changed nothing (measured, issue #15). Default off. */
  residualSuppression?: boolean;
  /** residual echo suppression in dB (negative), far end alone / during double talk; speex: -40 / -15 */
  echoSuppressDb?: number;
  echoSuppressActiveDb?: number;
  /** speex's noise suppression on the output (default off: the near end is sent as captured); needs the
   *  preprocessor (so the same one-frame delay) */
  denoise?: boolean;
  noiseSuppressDb?: number;
}

/** samples of one comparison of the two filters (SpeexEcho): 200 ms at 16 kHz */
const COMPARE_SAMPLES = 3200;
/** comparisons in a row the steady filter must win (its output no louder than the fast one's, and >= 10 dB under
 *  the microphone) before it is sent */
const STEADY_WINS = 2;

/**
 * speex's adaptive filter (MDF), optionally two of them, and its residual echo suppressor.
 * Why two: speex adapts its filter by the same normalised step every frame, so 5 ms frames converge fastest
 * (1.9 s against 3.2 s at 10 ms, in-process) but, with a user talking over the echo, also adapt more on the
 * user's voice: measured on the echo room (issue #15, double talk, replayed from the agent's own signals), the
 * echo left in the 5 ms filter's output rose 10-13 dB in the middle of the command ("forty" heard as
 * "fourteen"), 3-5 dB at 10 ms frames. So the fast filter (frameSize) runs from the start and the steady one
 * (steadyFrameSize) beside it on the same signals; once the caller allows it (steadyAllowed: the fast filter has
 * converged, so convergence is judged as without it) and the steady one cancels at least as well over
 * STEADY_WINS comparisons of echo, its output is sent instead, until reset(). The residual suppressor stays on
 * the fast filter's frames (its delay is one frame: 5 ms) and its echo estimate; only the signal it cleans
 * changes. Never back from steady to fast on a comparison: with a user talking, the filter that cancels part of
 * the user's voice has the quieter output.
 */
export class SpeexEcho {
  readonly sampleRate: number;
  readonly frameSize: number;
  readonly filterLength: number;
  /** process() takes multiples of this (steadyFrameSize, or frameSize) */
  readonly blockSize: number;
  private echo: unknown;
  private steady: unknown;
  private readonly steadyFrame: number;
  private steadyInUse = false;
  /** set by the caller once the fast filter has proved itself: the steady one may take over from then on */
  steadyAllowed = false;
  /** set by the caller while it trains the steady filter (trainSteady) on what it would have processed: process()
   *  runs the fast filter only */
  steadyPaused = false;
  private steadyWins = 0;
  private cmpMic = 0;
  private cmpFast = 0;
  private cmpSteady = 0;
  private cmpN = 0;
  private pre: unknown;
  private out: Int16Array;
  private fastOut: Int16Array;
  private steadyOut: Int16Array;
  private taps = new Int32Array(0);
  /** the linear filter's output of the last process() (before residual suppression): what the filter achieved */
  linear: Int16Array;

  constructor(o: SpeexEchoOptions) {
    if (!Number.isInteger(o.frameSize) || o.frameSize < 32 || o.frameSize > 4096) throw new RangeError(`speex echo: frameSize ${o.frameSize}`);
    if (!(o.filterMs >= 10 && o.filterMs <= 1000)) throw new RangeError(`speex echo: filterMs ${o.filterMs}`);
    const s = speex();
    this.sampleRate = o.sampleRate;
    this.frameSize = o.frameSize;
    this.filterLength = Math.round((o.filterMs * o.sampleRate) / 1000);
    this.steadyFrame = o.steadyFrameSize ?? 0;
    if (this.steadyFrame && (this.steadyFrame % o.frameSize !== 0 || this.steadyFrame > 4096)) throw new RangeError(`speex echo: steadyFrameSize ${o.steadyFrameSize} (a multiple of frameSize ${o.frameSize})`);
    this.blockSize = this.steadyFrame || o.frameSize;
    this.out = new Int16Array(this.blockSize);
    this.linear = new Int16Array(this.blockSize);
    this.fastOut = new Int16Array(this.blockSize);
    this.steadyOut = new Int16Array(this.blockSize);
    this.echo = s.echoInit(o.frameSize, this.filterLength);
    if (!this.echo) throw new AgentError('audio', 'speex_echo_state_init failed');
    s.echoCtl(this.echo, SPEEX_ECHO_SET_SAMPLING_RATE, [o.sampleRate]);
    if (this.steadyFrame) {
      this.steady = s.echoInit(this.steadyFrame, this.filterLength);
      if (!this.steady) {
        s.echoDestroy(this.echo);
        throw new AgentError('audio', 'speex_echo_state_init failed');
      }
      s.echoCtl(this.steady, SPEEX_ECHO_SET_SAMPLING_RATE, [o.sampleRate]);
    }
    if (!o.residualSuppression && !o.denoise) return;
    this.pre = s.preInit(o.frameSize, o.sampleRate);
    if (!this.pre) {
      s.echoDestroy(this.echo);
      if (this.steady) s.echoDestroy(this.steady);
      throw new AgentError('audio', 'speex_preprocess_state_init failed');
    }
    s.preCtl(this.pre, SPEEX_PREPROCESS_SET_DENOISE, [o.denoise || o.residualSuppression ? 1 : 0]);
    const noiseDb = o.noiseSuppressDb ?? (o.denoise ? undefined : -3);
    if (noiseDb !== undefined) s.preCtl(this.pre, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, [noiseDb]);
    if (o.echoSuppressDb !== undefined) s.preCtl(this.pre, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS, [o.echoSuppressDb]);
    if (o.echoSuppressActiveDb !== undefined) s.preCtl(this.pre, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, [o.echoSuppressActiveDb]);
    if (o.residualSuppression) s.preCtlPtr(this.pre, SPEEX_PREPROCESS_SET_ECHO_STATE, this.echo);
  }

  /** mic and reference: the same whole number of blockSize samples each. Returns the cleaned audio (a buffer
   *  reused by the next call); `linear` holds the filter's output before residual suppression. */
  process(mic: Int16Array, reference: Int16Array): Int16Array {
    if (!this.echo) throw new AgentError('audio', 'speex echo canceller used after close()');
    const n = mic.length;
    if (n === 0 || n % this.blockSize !== 0 || reference.length !== n) {
      throw new RangeError(`speex echo: frames of a multiple of ${this.blockSize} samples expected, got ${mic.length} and ${reference.length}`);
    }
    if (this.out.length !== n) {
      this.out = new Int16Array(n);
      this.linear = new Int16Array(n);
      this.fastOut = new Int16Array(n);
      this.steadyOut = new Int16Array(n);
    }
    const s = api!;
    const f = this.frameSize;
    for (let i = 0; i < n; i += f) s.echoCancel(this.echo, mic.subarray(i, i + f), reference.subarray(i, i + f), this.fastOut.subarray(i, i + f));
    if (this.steady && !this.steadyPaused) {
      const g = this.steadyFrame;
      for (let i = 0; i < n; i += g) s.echoCancel(this.steady, mic.subarray(i, i + g), reference.subarray(i, i + g), this.steadyOut.subarray(i, i + g));
      if (!this.steadyInUse && this.steadyAllowed) this.compare(mic);
    }
    this.linear.set(this.steadyInUse ? this.steadyOut : this.fastOut);
    this.out.set(this.linear);
    if (this.pre) for (let i = 0; i < n; i += f) s.preRun(this.pre, this.out.subarray(i, i + f));
    return this.out;
  }

  /** Adapts the steady filter alone on mic and reference (a multiple of its frame), e.g. to teach it a known
   *  echo path; the fast filter and the suppressor are left as they are. */
  trainSteady(mic: Int16Array, reference: Int16Array): void {
    if (!this.steady) return;
    const g = this.steadyFrame;
    if (mic.length % g !== 0 || reference.length !== mic.length) throw new RangeError(`speex echo: a multiple of ${g} samples expected, got ${mic.length} and ${reference.length}`);
    if (this.steadyOut.length < g) this.steadyOut = new Int16Array(g);
    for (let i = 0; i < mic.length; i += g) api!.echoCancel(this.steady, mic.subarray(i, i + g), reference.subarray(i, i + g), this.steadyOut.subarray(0, g));
  }

  get hasSteady(): boolean {
    return Boolean(this.steady);
  }

  /** Whether the steady filter's output is the one sent (see the class comment). */
  get steadyFilterInUse(): boolean {
    return this.steadyInUse;
  }

  private compare(mic: Int16Array): void {
    for (let i = 0; i < mic.length; i++) {
      this.cmpMic += mic[i] * mic[i];
      this.cmpFast += this.fastOut[i] * this.fastOut[i];
      this.cmpSteady += this.steadyOut[i] * this.steadyOut[i];
    }
    this.cmpN += mic.length;
    if (this.cmpN < COMPARE_SAMPLES) return;
    const wins = this.cmpSteady <= this.cmpFast && this.cmpMic >= 10 * this.cmpSteady && this.cmpSteady > 0;
    this.steadyWins = wins ? this.steadyWins + 1 : 0;
    if (this.steadyWins >= STEADY_WINS) this.steadyInUse = true;
    this.cmpMic = this.cmpFast = this.cmpSteady = this.cmpN = 0;
  }

  /** The adaptive filter's impulse response: filterLength taps, the echo's gain per sample of lag. speex reports
   *  it (SPEEX_ECHO_GET_IMPULSE_RESPONSE) as integers, its taps x 32767 x its FFT's size (2 x frameSize, the
   *  float build's unnormalised inverse FFT; checked against a known response). */
  impulseResponse(out: Float32Array = new Float32Array(this.filterLength)): Float32Array {
    if (!this.echo) throw new AgentError('audio', 'speex echo canceller used after close()');
    // the filter whose output is sent
    const st = this.steadyInUse ? this.steady : this.echo;
    const size = [0];
    api!.echoCtl(st, SPEEX_ECHO_GET_IMPULSE_RESPONSE_SIZE, size);
    if (this.taps.length !== size[0]) this.taps = new Int32Array(size[0]);
    api!.echoCtlPtr(st, SPEEX_ECHO_GET_IMPULSE_RESPONSE, this.taps);
    const n = Math.min(out.length, this.taps.length);
    const scale = 1 / (32767 * 2 * (this.steadyInUse ? this.steadyFrame : this.frameSize));
    for (let i = 0; i < n; i++) out[i] = this.taps[i] * scale;
    out.fill(0, n);
    return out;
  }

  /** Samples the output lags the input by (the preprocessor's overlap-add). */
  get latencySamples(): number {
    return this.pre ? this.frameSize : 0;
  }

  /** Forget the adapted filter (the echo path changed beyond what adaptation follows, e.g. a new bulk delay). */
  reset(): void {
    if (!this.echo) return;
    api!.echoReset(this.echo);
    if (this.steady) api!.echoReset(this.steady);
    this.steadyInUse = this.steadyAllowed = this.steadyPaused = false;
    this.steadyWins = this.cmpMic = this.cmpFast = this.cmpSteady = this.cmpN = 0;
  }

  close(): void {
    if (!this.echo) return;
    if (this.pre) api!.preDestroy(this.pre);
    api!.echoDestroy(this.echo);
    if (this.steady) api!.echoDestroy(this.steady);
    this.steady = undefined;
    this.echo = undefined;
    this.pre = undefined;
  }
}

/**
 * libspeexdsp's resampler, for the canceller's fixed frames (48 <-> 16 kHz, 16 -> 4 kHz): quality 3 (its "VoIP"
 * setting) costs 0.5 ms per second of audio for the microphone's way down and up, against 2.9 ms for the
 * project's JS polyphase resampler (src/common/audio/resample.ts), for 1.5 ms more delay (3 ms both ways).
 * For integer ratios and whole frames, every call returns exactly input x out/in samples.
 */
export class SpeexResampler {
  private st: unknown;
  private out: Int16Array;
  private readonly inLen = [0];
  private readonly outLen = [0];

  constructor(
    readonly inRate: number,
    readonly outRate: number,
    quality = 3,
  ) {
    const s = speex();
    const err = [0];
    this.st = s.rsInit(1, inRate, outRate, quality, err);
    if (!this.st) throw new AgentError('audio', `speex_resampler_init ${inRate} -> ${outRate} failed (${err[0]})`);
    this.out = new Int16Array(0);
  }

  /** Converts one chunk; the result is a buffer reused by the next call. */
  process(input: Int16Array): Int16Array {
    if (!this.st) throw new AgentError('audio', 'speex resampler used after close()');
    const want = Math.ceil((input.length * this.outRate) / this.inRate) + 8;
    if (this.out.length < want) this.out = new Int16Array(want);
    this.inLen[0] = input.length;
    this.outLen[0] = this.out.length;
    api!.rsProcess(this.st, 0, input, this.inLen, this.out, this.outLen);
    return this.out.subarray(0, this.outLen[0]);
  }

  close(): void {
    if (!this.st) return;
    api!.rsDestroy(this.st);
    this.st = undefined;
  }
}
