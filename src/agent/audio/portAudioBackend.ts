// The AudioBackend on PortAudio through naudiodon2 (vendored, linked to the distribution's PortAudio so it
// builds on arm64: vendor/naudiodon2/PATCHES.md). Everything PortAudio-specific lives here.
//
// How audio moves (naudiodon2's FrameIO, our addition to the vendored addon: vendor/naudiodon2/PATCHES.md item 8):
// - Capture: the PortAudio callback (one per two 20 ms frames, see captureFramesPerBuffer) copies the samples and
//   hands them to the event loop through a thread-safe function: no pool thread, no Node stream.
//   naudiodon's own AudioIO streams moved each chunk through a libuv pool thread, a promise and a
//   Readable/Writable; for a call that machinery cost more CPU than the audio work itself.
// - Playback: write() copies a frame into a native ring synchronously. The PortAudio callback takes one frame
//   from it per period, plays silence for anything missing (so a late writer costs a gap, never a growing delay;
//   the callback never waits on JS), and reports what it consumed: onHanded fires per frame handed to ALSA,
//   which paces the downlink by the card's clock. A full ring drops its oldest frame (latency stays bounded).
//   Each report also carries PortAudio's DAC time of the buffer (PATCHES.md item 16): silence the audio system
//   played below the stream (PortAudio's thread late, the ALSA buffer run dry) is reported through onStarved
//   like the stream's own (dacClock.ts), so the echo canceller's reference stays aligned.
// - A failed device (unplugged card, sound server gone) does not always raise an error: the callbacks just
//   stop (PATCHES.md item 10). A watchdog turns "no callback for stallMs" into an
//   AudioDeviceError('device_failed') so resilientDevice.ts reopens it.
// - PortAudio/ALSA print ~160 probe lines on stderr at first use on a machine without cards (fewer on a real
//   board). quietNativeStderr() hides them during enumeration and opening (see below).
import { createRequire } from 'node:module';
import {
  AudioDeviceError,
  type AudioBackend,
  type AudioDeviceInfo,
  type CaptureDevice,
  type PlaybackDevice,
  type RealtimeReport,
  type Xruns,
} from './audioDevice.js';
import { addonLoadProblem } from '../../common/addonAdvice.js';
import { everyMs, type SharedInterval } from '../../common/sharedInterval.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../protocol/media.js';
import { alsaCardDevices } from './alsaCards.js';
import { DacClock } from './dacClock.js';
import { captureAlsaXruns, quietNativeStderr } from './quietStderr.js';

type Naudiodon = typeof import('naudiodon2');
type FrameIO = import('naudiodon2').FrameIO;

const require = createRequire(import.meta.url);
let naudiodon: Naudiodon | undefined;

/** Loads the addon on first use, so modules that only need types never load PortAudio. */
function loadNaudiodon(): Naudiodon {
  if (naudiodon) return naudiodon;
  // Without a JACK server, PortAudio's ALSA probing would try to start one (and print about it).
  process.env.JACK_NO_START_SERVER ??= '1';
  try {
    naudiodon = require('naudiodon2') as Naudiodon;
  } catch (err) {
    throw new AudioDeviceError(
      'device_failed',
      addonLoadProblem('audio (naudiodon2)', err),
      err,
    );
  }
  captureAlsaXruns(); // alsa-lib's xrun lines off stderr (quietStderr.ts); never fails the audio
  return naudiodon;
}

export interface PortAudioOptions {
  /** Playback callback size in samples; smaller means lower latency and more wakeups. Default 960 (20 ms, one
   *  frame): with 480 the virtual card on a loaded 2-core machine ran 15-20 % slower than real time (xruns),
   *  with 960 it kept real time (bench/agent-audio.bench.ts, AUDIO_BENCH_FRAMES_PER_BUFFER). */
  framesPerBuffer?: number;
  /**
   * Capture callback size in samples. Default 1920 (40 ms, two frames per wake-up): the capture side then wakes
   * the sound server's client thread, PortAudio's thread and the event loop half as often, which cut the agent's
   * CPU in a call from 9.2 % to 7.8 % of a core (three A/B pairs). The first frame of each pair waits 20 ms
   * for the second: mic-to-wire stays well inside its 25 ms budget (frames carry their real capture time). 960
   * would bring the wake word's end to the engine ~20 ms sooner (#16: end on the virtual microphone -> fed
   * 47.7 -> 27.3 ms p50), but the idle agent measured 4.35 % of a core with it (2.80 % with 1920 an hour before;
   * the target is 4 %).
   */
  captureFramesPerBuffer?: number;
  /**
   * No audio callback for this long means the stream stalled (it is reopened). Default 500 ms: a sound
   * server's stream that was killed, or a card that went away, may never call back again (vendored naudiodon2,
   * PATCHES.md item 10), and every ms of it is the assistant not heard. An underrun is not a stall: PortAudio
   * recovers it within a period or two.
   */
  stallMs?: number;
  /** Playback frames queued beyond which the oldest are dropped (keeps latency bounded). Default 10 (200 ms). */
  maxQueuedFrames?: number;
  /**
   * Device buffer (PortAudio suggested latency) for playback and capture, in ms. The PulseAudio/PipeWire ALSA
   * plugins report a default of 0, whose tiny buffer underruns constantly on a busy board. Default 60 / 40 (two
   * 20 ms periods is the least ALSA works with for capture). Tried for #16: 40 for playback makes everything
   * played 20 ms sooner (the wake word's earcon, written -> audible 77.8 -> 57.7 ms p50 on the virtual card), but
   * the underruns on the loaded 2-core machine were mixed (test/agent/echo.e2e.test.ts printed 5 ALSA underruns
   * in a run against 1 with 60, and failed once; bench agent-audio the other way round), and an underrun is a
   * click in every answer on a busy board: 60 kept.
   */
  outputLatencyMs?: number;
  inputLatencyMs?: number;
  /**
   * SCHED_FIFO priority the audio threads ask for (0: none). Default 10, which the agent's unit allows
   * (LimitRTPRIO=10); each thread only copies a frame per period, so above a sound server's I/O threads
   * (PulseAudio's at 5 by default) or below them (PipeWire's at up to 88) it cannot starve them. At normal
   * priority, PortAudio's thread was not scheduled for 40-350 ms at a time on the loaded test machine: the ALSA
   * buffer ran dry and the sound server played silence of its own, a click for the listener and a jump of the echo
   * path for the canceller (dacClock.ts). Without permission the threads run on as before (RealtimeReport).
   */
  realtimePriority?: number;
  /** where the kernel's card list is read while PortAudio's may be stale (alsaCards.ts; tests give their own) */
  alsaRoot?: string;
}

/** PortAudioOptions.realtimePriority's default; systemd/speaker-agent.service's LimitRTPRIO allows it. */
export const AUDIO_THREAD_PRIORITY = 10;

export class PortAudioBackend implements AudioBackend {
  private readonly framesPerBuffer: number;
  private readonly captureFramesPerBuffer: number;
  private readonly stallMs: number;
  private readonly maxQueuedFrames: number;
  private readonly outputLatencyMs: number;
  private readonly inputLatencyMs: number;
  private readonly realtimePriority: number;
  private readonly alsaRoot: string | undefined;

  constructor(opts: PortAudioOptions = {}) {
    this.alsaRoot = opts.alsaRoot;
    this.outputLatencyMs = opts.outputLatencyMs ?? 60;
    this.inputLatencyMs = opts.inputLatencyMs ?? 40;
    this.framesPerBuffer = opts.framesPerBuffer ?? FRAME_SAMPLES;
    this.captureFramesPerBuffer = opts.captureFramesPerBuffer ?? 2 * FRAME_SAMPLES;
    this.stallMs = opts.stallMs ?? 500;
    this.maxQueuedFrames = opts.maxQueuedFrames ?? 10;
    this.realtimePriority = opts.realtimePriority ?? AUDIO_THREAD_PRIORITY;
  }

  /** the xruns PortAudio reported to this backend's streams since it was made (it recovers from each itself) */
  private readonly counted: Xruns = { underruns: 0, overruns: 0 };

  xruns(): Xruns {
    return { ...this.counted };
  }

  listDevices(): AudioDeviceInfo[] {
    const na = loadNaudiodon();
    let raw: ReturnType<Naudiodon['getDevices']>;
    try {
      raw = quietNativeStderr(() => na.getDevices());
    } catch (err) {
      throw classifyPortAudioError(err, 'listing audio devices');
    }
    return raw.map((d) => ({
      id: d.id,
      name: d.name,
      maxInputChannels: d.maxInputChannels,
      maxOutputChannels: d.maxOutputChannels,
      defaultSampleRate: d.defaultSampleRate,
      hostApi: d.hostAPIName,
    }));
  }

  /**
   * Finds the device to open. PortAudio's list is the one made when the oldest stream still open was opened (a
   * later Pa_Initialize only counts up): while one is, a card plugged in or re-numbered since, or a PCM added to
   * the ALSA configuration, is missing from it or stale. The cards are then taken from the kernel's list
   * (alsaCards.ts) and opened by their ALSA name (nothing open: PortAudio's list is fresh, and used alone). A name
   * found in no list is handed to ALSA itself, which knows every PCM of its configuration as it is now, and names
   * PortAudio never lists (`plughw:CARD=Device,DEV=0`, `dsnoop:1`).
   */
  private resolve(deviceName: string, direction: 'input' | 'output'): ResolvedDevice {
    const listed = this.listDevices();
    const cards = openStreams === 0 ? undefined : alsaCardDevices(this.alsaRoot);
    const devices: ListedDevice[] = cards
      ? [
          ...listed.filter((d) => !CARD_DEVICE.test(d.name)),
          ...cards.map((c) => ({ id: -1, name: c.name, alsaName: c.alsaName, maxInputChannels: c.capture ? 1 : 0, maxOutputChannels: c.playback ? 1 : 0, defaultSampleRate: SAMPLE_RATE, hostApi: 'ALSA' })),
        ]
      : listed;
    let missing: unknown;
    // the kernel's cards first; PortAudio's own entry next, should its name for a card differ from ours
    for (const list of cards ? [devices, listed] : [listed]) {
      try {
        return resolveDevice(list, deviceName, direction);
      } catch (err) {
        missing ??= err;
      }
    }
    const alsaName = asAlsaPcmName(deviceName);
    if (!(missing instanceof AudioDeviceError) || missing.code !== 'device_missing' || alsaName === undefined) throw missing;
    return { id: -1, label: deviceName, alsaName, missing: missing.message };
  }

  openCapture(deviceName: string): CaptureDevice {
    const dev = this.resolve(deviceName, 'input');
    return new PortAudioCapture(dev, {
      framesPerBuffer: this.captureFramesPerBuffer,
      stallMs: this.stallMs,
      latencyMs: this.inputLatencyMs,
      realtimePriority: this.realtimePriority,
      xruns: this.counted,
    });
  }

  openPlayback(deviceName: string): PlaybackDevice {
    const dev = this.resolve(deviceName, 'output');
    return new PortAudioPlayback(dev, {
      framesPerBuffer: this.framesPerBuffer,
      latencyMs: this.outputLatencyMs,
      stallMs: this.stallMs,
      maxQueuedFrames: this.maxQueuedFrames,
      realtimePriority: this.realtimePriority,
      xruns: this.counted,
    });
  }
}

export interface ResolvedDevice {
  /** PortAudio device index, -1 for PortAudio's default device. */
  id: number;
  /** Name for log lines and errors. */
  label: string;
  /** opened by this ALSA name instead of id (a device PortAudio's list, made earlier, lacks: resolve) */
  alsaName?: string;
  /** a name found in no list, tried as an ALSA PCM: the device_missing message should ALSA not know it either */
  missing?: string;
}

/** a device as resolveDevice takes it: PortAudio's, or a card from the kernel's list with its ALSA name */
type ListedDevice = AudioDeviceInfo & { alsaName?: string };

/** PortAudio's name of a card's own device ("<card>: <pcm> (hw:1,0)"; plughw: with PA_ALSA_PLUGHW) */
const CARD_DEVICE = /\((plug)?hw:\d+,\d+\)$/;

/** Streams open in this process (any backend): PortAudio's device list is stale while there are any (resolve).
 *  A close that never returned (closeStream's bounded wait) keeps its count: PortAudio may still be initialised. */
let openStreams = 0;

/** A configured name that may be an ALSA PCM ("mic", "plughw:CARD=Device,DEV=0", "dsnoop:1"): no spaces nor
 *  PortAudio's "(hw:...)" decoration. undefined for anything else, which stays device_missing. */
function asAlsaPcmName(name: string): string | undefined {
  const n = name.trim();
  return n !== '' && n !== 'default' && /^[\w.:=,@-]+$/.test(n) ? n : undefined;
}

/**
 * Picks a device by configured name: exact name, then case-insensitive substring, 'default' (or empty)
 * -> the device named "default" if there is one, else "sysdefault" (the first card's own default, with ALSA's
 * conversions), else PortAudio's default device.
 *
 * PortAudio lists only the devices that open, so ALSA's `default` is missing where it names a sound server this
 * user cannot reach (Raspberry Pi OS desktop's pipewire-alsa, seen by the system service). PortAudio's default
 * is then its first device, a card's raw `hw:` device, which refuses a format the card does not have (mono, or
 * 48 kHz on a 44.1 kHz card); `sysdefault` is the same card as ALSA itself would pick without the server, and
 * the mixer falls back to it too (amixerMixer.ts).
 */
export function resolveDevice(devices: ListedDevice[], name: string, direction: 'input' | 'output'): ResolvedDevice {
  const usable = devices.filter((d) => (direction === 'input' ? d.maxInputChannels : d.maxOutputChannels) > 0);
  const wanted = name.trim();
  if (wanted === '' || wanted === 'default') {
    const named = usable.find((d) => d.name === 'default');
    if (named) return { id: named.id, label: 'default' };
    const card = usable.find((d) => d.name === 'sysdefault');
    if (card) return { id: card.id, label: 'sysdefault' };
    if (usable.length > 0) return { id: -1, label: 'default' };
  } else {
    // a card's name as `speaker-agent devices` showed it names the same card once PA_ALSA_PLUGHW renames its raw
    // device (hw:1,0 -> plughw:1,0; classifyPortAudioError advises it), and the other way round
    const alias = wanted.includes('(plughw:') ? wanted.replace('(plughw:', '(hw:') : wanted.replace('(hw:', '(plughw:');
    const found = (d: ListedDevice): ResolvedDevice => (d.alsaName ? { id: -1, label: `${d.name} [ALSA ${d.alsaName}]`, alsaName: d.alsaName } : { id: d.id, label: d.name });
    for (const w of [wanted, alias]) {
      const exact = usable.find((d) => d.name === w);
      if (exact) return found(exact);
    }
    for (const w of [wanted, alias]) {
      const lower = w.toLowerCase();
      const partial = usable.filter((d) => d.name.toLowerCase().includes(lower));
      if (partial.length > 0) return found(partial[0]);
    }
  }
  const names = usable.map((d) => JSON.stringify(d.name)).join(', ') || 'none';
  throw new AudioDeviceError(
    'device_missing',
    `no ${direction} audio device matches ${JSON.stringify(name)}; available ${direction} devices: ${names}`,
  );
}

/** Maps PortAudio/ALSA error text to our codes. */
export function classifyPortAudioError(err: unknown, doing: string): AudioDeviceError {
  if (err instanceof AudioDeviceError) return err;
  const text = String((err as Error)?.message ?? err);
  let code: AudioDeviceError['code'] = 'device_failed';
  let hint = '';
  if (/busy|Device unavailable/i.test(text)) {
    code = 'device_busy';
    // a desktop session's PipeWire holds the card while it plays, and the service's user cannot reach that server
    hint = ' (another program holds the sound card: stop it, or share the card through a sound server (PulseAudio, PipeWire) this user can reach; a desktop session\'s own server holds it while it plays)';
  } else if (/Invalid sample rate|Sample format not supported|Invalid number of channels/i.test(text)) {
    // the device opened but refuses the stream's format. PortAudio converts sample formats and opens more channels
    // than asked where a card has no mono, so this is mostly a card's raw `hw:` device (which converts nothing) and
    // a rate it lacks (a 44.1 kHz USB card) or a format PortAudio cannot make (a Pi's HDMI, IEC958 frames only).
    // Debian's PortAudio names the cards `plughw:` (ALSA's conversions) when PA_ALSA_PLUGHW is set when it starts.
    hint = ` (the device does not take ${SAMPLE_RATE / 1000} kHz 16-bit mono${/\(hw:\d+,\d+\)/.test(doing) ? ', and a card\'s raw hw: device converts nothing' : ''}: name a device that converts (\`default\`, \`sysdefault\`, a PCM of asound.conf), or add PA_ALSA_PLUGHW=1 to /etc/speaker-agent/environment, which makes PortAudio open every card as plughw:, with ALSA's conversions)`;
  } else if (/Invalid device|No default device|No such (device|file|entity)|not found/i.test(text)) {
    code = 'device_missing';
    hint = ' (is the card plugged in and the device name right? `speaker-agent devices` lists them)';
  }
  return new AudioDeviceError(code, `${doing}: ${text}${hint}`, err);
}

interface StreamOptions {
  framesPerBuffer: number;
  stallMs: number;
  latencyMs: number;
  realtimePriority: number;
  /** the backend's count, which the stream's xruns add to */
  xruns: Xruns;
}

/** PortAudio's callback flags for an xrun it recovered from (portaudio.h): the ALSA host API sets them after every
 *  one, on a device it can mmap (hw:, dmix) as on a plugin (pulse), where alsa-lib's own line is only on the latter. */
const PA_INPUT_OVERFLOW = 0x2;
const PA_OUTPUT_UNDERFLOW = 0x4;

/** The audio thread's real-time scheduling, once, from the stream's first callback (-1 there: not asked). */
function reportRealtime(io: FrameIO, report: RealtimeReport | undefined): void {
  const r = io.stats().realtime;
  if (r !== -1) report?.(r);
}

const hrNow = (): bigint => process.hrtime.bigint();
/** A stream may take this long to start moving audio (PulseAudio's ALSA plugin: up to ~1.3 s measured). */
const STARTUP_GRACE_MS = 3000;
const FRAME_BYTES = FRAME_SAMPLES * 2;
const FRAME_NS = BigInt(Math.round((FRAME_SAMPLES / SAMPLE_RATE) * 1e9));

/**
 * Watches a stream's audio callback on the audio thread's own clock (FrameIO.msSinceCallback): calls onStall
 * when none ran for stallMs (STARTUP_GRACE_MS after opening). A JS-side clock would see a busy event loop as
 * a stall. Checked every stallMs / 2 on a shared timer (sharedInterval.ts): a stall is declared 1 to 1.5 stallMs
 * after the last callback.
 *
 * A check that comes more than stallMs after the previous one found the whole process not running (SIGSTOP, a
 * frozen cgroup, a board swapping): the audio thread was frozen with it, and the event loop may get the CPU
 * first after the thaw. The time before the thaw does not count against the audio thread: it has stallMs from
 * then to call back (recovering the underrun the pause caused). Judged at once, both streams of a speaker that
 * merely paused were closed and reopened, and the xrun was never counted (portAudioBackend.test.ts,
 * "regression: a whole-process freeze ..."). Only the first of several late checks in a row counts as a thaw:
 * an event loop that lags for good still sees a device that stalled.
 */
class StallWatchdog {
  private readonly startedAtMs = performance.now();
  private lastCheckMs = this.startedAtMs;
  /** the last thaw (or the start): the audio thread is judged on the time since */
  private runningSinceMs = this.startedAtMs;
  private lastWasLate = false;
  private readonly check: SharedInterval;

  constructor(io: FrameIO, stallMs: number, onStall: () => void) {
    this.check = everyMs(Math.max(50, Math.round(stallMs / 2)), () => {
      const now = performance.now();
      const late = now - this.lastCheckMs > stallMs;
      if (late && !this.lastWasLate) this.runningSinceMs = now;
      this.lastWasLate = late;
      this.lastCheckMs = now;
      const limit = now - this.startedAtMs < STARTUP_GRACE_MS ? STARTUP_GRACE_MS : stallMs;
      if (Math.min(io.msSinceCallback(), now - this.runningSinceMs) > limit) onStall();
    });
  }

  stop(): void {
    this.check.stop();
  }
}

class PortAudioCapture implements CaptureDevice {
  onError?: (err: AudioDeviceError) => void;
  onRealtime?: RealtimeReport;
  /** the stream's first callback has reported its thread's scheduling (reportRealtime) */
  private realtimeReported = false;
  readonly stats = { frames: 0, overflows: 0 };
  private io: FrameIO | undefined;
  private watchdog: StallWatchdog | undefined;
  private failed = false;
  private closing: Promise<void> | undefined;
  // One frame buffer, refilled in place, in case PortAudio ever delivers other sizes than one frame.
  private readonly frameBytes = Buffer.alloc(FRAME_BYTES);
  private readonly frame = new Int16Array(this.frameBytes.buffer, this.frameBytes.byteOffset, FRAME_SAMPLES);
  private fill = 0;
  private onFrame: ((frame: Int16Array, capturedAtNs: bigint) => void) | undefined;

  constructor(
    private readonly device: ResolvedDevice,
    private readonly opts: StreamOptions,
  ) {}

  async start(onFrame: (frame: Int16Array, capturedAtNs: bigint) => void): Promise<void> {
    if (this.io) throw new AudioDeviceError('device_failed', `capture device ${this.device.label} is already started`);
    const na = loadNaudiodon();
    let io: FrameIO;
    try {
      io = quietNativeStderr(
        () =>
          new na.FrameIO(
            {
              input: true,
              channelCount: 1,
              sampleRate: SAMPLE_RATE,
              ...deviceOption(this.device),
              framesPerBuffer: this.opts.framesPerBuffer,
              latencyMs: this.opts.latencyMs,
              realtimePriority: this.opts.realtimePriority,
            },
            (chunk, flags) => this.onChunk(chunk, flags),
          ),
      );
    } catch (err) {
      throw openError(err, this.device, `cannot open capture device ${this.device.label}`);
    }
    openStreams++;
    try {
      quietNativeStderr(() => io.start());
    } catch (err) {
      void closeStream(io);
      throw classifyPortAudioError(err, `cannot start capture device ${this.device.label}`);
    }
    this.io = io;
    this.realtimeReported = false;
    this.onFrame = onFrame;
    this.failed = false;
    this.watchdog = new StallWatchdog(io, this.opts.stallMs, () =>
      this.fail(new AudioDeviceError('device_failed', `capture device ${this.device.label} delivered no audio for ${this.opts.stallMs} ms`)),
    );
  }

  private onChunk(chunk: Buffer, flags: number): void {
    const onFrame = this.onFrame;
    if (!this.io || !onFrame) return; // a callback that was queued before stop()
    if (!this.realtimeReported) {
      this.realtimeReported = true;
      reportRealtime(this.io, this.onRealtime);
    }
    if (flags !== 0) this.stats.overflows++;
    if (flags & PA_INPUT_OVERFLOW) this.opts.xruns.overruns++;
    const at = hrNow();
    // Frames in one chunk were captured 20 ms apart; the last one ends now. Each carries its own capture time so
    // mic-to-wire latency counts the wait of the earlier ones.
    const frames = Math.floor((this.fill + chunk.length) / FRAME_BYTES);
    let k = 0;
    const capturedAt = (): bigint => at - BigInt(frames - 1 - k++) * FRAME_NS;
    if (this.fill === 0 && chunk.length % FRAME_BYTES === 0 && (chunk.byteOffset & 1) === 0) {
      // The usual case: whole frames in a fresh buffer: views, no copy.
      for (let off = 0; off < chunk.length && this.onFrame; off += FRAME_BYTES) {
        this.stats.frames++;
        onFrame(new Int16Array(chunk.buffer, chunk.byteOffset + off, FRAME_SAMPLES), capturedAt());
      }
      return;
    }
    let off = 0;
    const len = chunk.length & ~1;
    while (off < len) {
      const n = Math.min(len - off, FRAME_BYTES - this.fill);
      chunk.copy(this.frameBytes, this.fill, off, off + n);
      this.fill += n;
      off += n;
      if (this.fill === FRAME_BYTES) {
        this.fill = 0;
        this.stats.frames++;
        onFrame(this.frame, capturedAt());
      }
    }
  }

  private fail(err: AudioDeviceError): void {
    if (this.failed || !this.io) return; // errors after stop() are expected
    this.failed = true;
    void this.stop();
    this.onError?.(err);
  }

  async stop(): Promise<void> {
    this.watchdog?.stop();
    this.watchdog = undefined;
    const io = this.io;
    this.io = undefined;
    this.onFrame = undefined;
    this.fill = 0;
    if (io) this.closing = closeStream(io);
    await this.closing; // a second stop() (fail() already stopped) waits for the same close
  }
}

class PortAudioPlayback implements PlaybackDevice {
  onError?: (err: AudioDeviceError) => void;
  onRealtime?: RealtimeReport;
  /** the stream's first callback has reported its thread's scheduling (reportRealtime) */
  private realtimeReported = false;
  /** Called, in order, each time the audio callback has taken a frame (handed it to ALSA). */
  onHanded?: (atNs: bigint) => void;
  onStarved?: (ms: number, queuedMs: number) => void;
  private io: FrameIO | undefined;
  private watchdog: StallWatchdog | undefined;
  private failed = false;
  private closing: Promise<void> | undefined;
  // Bytes written, consumed (reported by the callback, in order) and dropped from a full ring: queued is the
  // difference. The reports lag the callback a little, so queued is at most a frame high, never low.
  private written = 0;
  private consumed = 0;
  private dropped = 0;
  private readonly chunk = Buffer.alloc(FRAME_BYTES);
  private readonly chunkView = new Int16Array(this.chunk.buffer, this.chunk.byteOffset, FRAME_SAMPLES);
  /** silence played below the stream (the sound server's own underruns), from PortAudio's DAC times */
  private readonly dac = new DacClock();
  readonly stats = { written: 0, handed: 0, droppedForLatency: 0, starved: 0, starvedBytes: 0, silenceBelowMs: 0 };

  constructor(
    private readonly device: ResolvedDevice,
    private readonly opts: StreamOptions & { maxQueuedFrames: number },
  ) {}

  get queuedMs(): number {
    return (Math.max(0, this.written - this.consumed - this.dropped) / FRAME_BYTES) * 20;
  }

  get underruns(): number {
    return this.stats.starved;
  }

  async start(): Promise<void> {
    if (this.io) throw new AudioDeviceError('device_failed', `playback device ${this.device.label} is already started`);
    const na = loadNaudiodon();
    let io: FrameIO;
    try {
      io = quietNativeStderr(
        () =>
          new na.FrameIO(
            {
              input: false,
              channelCount: 1,
              sampleRate: SAMPLE_RATE,
              ...deviceOption(this.device),
              framesPerBuffer: this.opts.framesPerBuffer,
              latencyMs: this.opts.latencyMs,
              realtimePriority: this.opts.realtimePriority,
              ringBytes: this.opts.maxQueuedFrames * FRAME_BYTES,
            },
            (consumed, flags, starved, atMs, latencyMs) => this.onConsumed(consumed, starved, flags, atMs, latencyMs),
          ),
      );
    } catch (err) {
      throw openError(err, this.device, `cannot open playback device ${this.device.label}`);
    }
    openStreams++;
    try {
      quietNativeStderr(() => io.start());
    } catch (err) {
      void closeStream(io);
      throw classifyPortAudioError(err, `cannot start playback device ${this.device.label}`);
    }
    this.io = io;
    this.realtimeReported = false;
    this.failed = false;
    this.written = this.consumed = this.dropped = 0;
    this.dac.reset();
    this.watchdog = new StallWatchdog(io, this.opts.stallMs, () =>
      this.fail(new AudioDeviceError('device_failed', `playback device ${this.device.label} took no audio for ${this.opts.stallMs} ms`)),
    );
  }

  write(frame: Int16Array): void {
    const io = this.io;
    if (!io) return;
    if (frame.length !== FRAME_SAMPLES) throw new RangeError(`playback expects ${FRAME_SAMPLES}-sample frames, got ${frame.length}`);
    this.chunkView.set(frame);
    const dropped = io.write(this.chunk); // copied into the native ring: the buffer is free again
    this.written += FRAME_BYTES;
    this.stats.written++;
    if (dropped > 0) {
      // The device is not keeping up (or stalled): the oldest audio went, so latency stays bounded.
      this.dropped += dropped;
      this.stats.droppedForLatency += Math.round(dropped / FRAME_BYTES);
    }
  }

  /** One callback's report: the bytes of frames it took, of silence it played for want of them, its PortAudio
   *  status flags, when it ran (steady-clock ms) and its buffer's latency to the DAC (ms, 0 if unknown). */
  private onConsumed(consumed: number, starved: number, flags: number, atMs: number, latencyMs: number): void {
    if (!this.io) return; // a report queued before stop()
    if (!this.realtimeReported) {
      this.realtimeReported = true;
      reportRealtime(this.io, this.onRealtime);
    }
    // Silence the audio system played below the stream (dacClock.ts) came before this callback's buffer and the
    // frames still queued, and before what the callbacks took since the last timed one (an underrun's, untimed).
    if (flags & PA_OUTPUT_UNDERFLOW) this.opts.xruns.underruns++;
    const below = this.dac.note(((consumed + starved) / FRAME_BYTES) * 20, flags, atMs, latencyMs);
    if (below) {
      this.stats.silenceBelowMs += below.gapMs;
      this.onStarved?.(below.gapMs, this.queuedMs + below.afterMs);
    }
    if (starved > 0) {
      this.stats.starved++;
      this.stats.starvedBytes += starved;
    }
    if (consumed > 0) this.handed(consumed);
    // The callback ran dry after `consumed`: whatever is queued now (reports come in order) was written after
    // that, while the silence played. The downlink, stalled, typically wrote the next frame on the report before
    // this one's, as if it followed the last without a gap.
    if (starved > 0) this.onStarved?.((starved / FRAME_BYTES) * 20, this.queuedMs);
  }

  private handed(consumed: number): void {
    // Whole frames handed: the ring only ever holds whole frames and the callback takes one per period.
    const before = Math.floor(this.consumed / FRAME_BYTES);
    this.consumed += consumed;
    const frames = Math.floor(this.consumed / FRAME_BYTES) - before;
    if (frames === 0) return;
    const at = hrNow();
    for (let i = 0; i < frames; i++) {
      this.stats.handed++;
      this.onHanded?.(at);
    }
  }

  private fail(err: AudioDeviceError): void {
    if (this.failed || !this.io) return; // errors after stop() are expected
    this.failed = true;
    void this.stop();
    this.onError?.(err);
  }

  async stop(): Promise<void> {
    this.watchdog?.stop();
    this.watchdog = undefined;
    const io = this.io;
    this.io = undefined;
    this.written = this.consumed = this.dropped = 0;
    if (io) this.closing = closeStream(io);
    await this.closing; // a second stop() (fail() already stopped) waits for the same close
  }
}

/** Stops and closes a stream (drops pending audio); bounded wait, since a dead device may never answer. */
function closeStream(io: FrameIO): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 2000);
    timer.unref();
    const closed = (): void => {
      openStreams--;
      clearTimeout(timer);
      resolve();
    };
    io.close().then(closed, closed);
  });
}

/** How FrameIO is told the device: its ALSA name (a device PortAudio's list lacks: resolve) or its index. */
function deviceOption(device: ResolvedDevice): { deviceString: string } | { deviceId: number } {
  return device.alsaName ? { deviceString: device.alsaName } : { deviceId: device.id };
}

/** A failed open: a name tried as an ALSA PCM because no list had it (resolve), which ALSA does not know either
 *  (PortAudio's ALSA open then says "Illegal combination of I/O devices"), is the device_missing resolveDevice
 *  would have given, with PortAudio's word. A PCM that exists but failed otherwise (busy, a format or channel
 *  count a raw hw: device refuses) is as classified. */
function openError(err: unknown, device: ResolvedDevice, doing: string): AudioDeviceError {
  const e = classifyPortAudioError(err, doing);
  const text = String((err as Error)?.message ?? err);
  if (device.missing === undefined || !/Illegal combination of I\/O devices|Invalid device|No such (device|file)/i.test(text)) return e;
  return new AudioDeviceError('device_missing', `${device.missing}; nor did ALSA open a PCM of that name (${String((err as Error)?.message ?? err)})`, err);
}
