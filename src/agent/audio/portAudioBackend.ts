// The AudioBackend on PortAudio through naudiodon2 (vendored, linked to the distribution's PortAudio so it
// builds on arm64: vendor/naudiodon2/PATCHES.md). Everything PortAudio-specific lives here.
//
// How naudiodon2 moves audio (read in its C++ source, it decides the design below):
// - Capture: the PortAudio callback copies each buffer into a native queue (maxQueue chunks; when full the
//   callback BLOCKS); a Readable stream's read(size) waits in a libuv pool thread until `size` bytes are there.
//   highwaterMark = one 20 ms frame makes every 'data' chunk one frame; we still re-chunk defensively.
// - Playback: write() hands a chunk to a native queue (a pool thread blocks while it holds maxQueue chunks);
//   the PortAudio callback pulls from it and, when it is empty, WAITS for data (no silence is inserted) so the
//   sound card underruns. The downlink therefore writes a frame every 20 ms, silence included.
// - PortAudio status flags (under/overflow) destroy the stream unless closeOnError is false; with false they
//   are printf'ed to stdout. We use false: an occasional xrun must not end a call.
// - A failed device (unplugged card, sound server gone) does not always raise an error: the callback just
//   stops, reads never complete and writes never drain. A watchdog turns "no progress for stallMs" into an
//   AudioDeviceError('device_failed') so resilientDevice.ts can reopen it.
// - Each stream holds a libuv pool thread while it waits (capture nearly always, playback while its queue is
//   full): 2 of the default 4. Set UV_THREADPOOL_SIZE higher if other code needs the pool heavily.
// - naudiodon2 printf's a few lines ("Input device name is ...") to stdout on every open, and PortAudio/ALSA
//   print ~160 probe lines on stderr at first use on a machine without cards (fewer on a real board).
//   quietNativeStderr() hides the stderr ones during enumeration and opening (see below).
import { createRequire } from 'node:module';
import {
  AudioDeviceError,
  FRAME_SAMPLES,
  SAMPLE_RATE,
  type AudioBackend,
  type AudioDeviceInfo,
  type CaptureDevice,
  type PlaybackDevice,
} from './audioDevice.js';
import { quietNativeStderr } from './quietStderr.js';

type Naudiodon = typeof import('naudiodon2');
type IoStreamRead = import('naudiodon2').IoStreamRead;
type IoStreamWrite = import('naudiodon2').IoStreamWrite;

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
      `the audio addon (naudiodon2) could not be loaded: ${(err as Error).message}. Reinstall with npm ci (needs portaudio19-dev).`,
      err,
    );
  }
  return naudiodon;
}

export interface PortAudioOptions {
  /** PortAudio callback size in samples; smaller means lower latency and more wakeups. Default 960 (20 ms, one
   *  frame): with 480 the virtual card on a loaded 2-core machine ran 15-20 % slower than real time (xruns),
   *  with 960 it kept real time (bench/agent-audio.bench.ts, AUDIO_BENCH_FRAMES_PER_BUFFER). */
  framesPerBuffer?: number;
  /** No audio progress for this long means the device failed. Default 1500 ms. */
  stallMs?: number;
  /** Playback frames queued in JS beyond which the oldest are dropped (keeps latency bounded). Default 10 (200 ms). */
  maxQueuedFrames?: number;
  /**
   * Device buffer (PortAudio suggested latency) for playback and capture, in ms. The PulseAudio/PipeWire ALSA
   * plugins report a default of 0, whose tiny buffer underruns constantly on a busy board. Default 60 / 40
   * (two 20 ms periods is the least ALSA works with for capture).
   */
  outputLatencyMs?: number;
  inputLatencyMs?: number;
}

export class PortAudioBackend implements AudioBackend {
  private readonly framesPerBuffer: number;
  private readonly stallMs: number;
  private readonly maxQueuedFrames: number;
  private readonly outputLatencyMs: number;
  private readonly inputLatencyMs: number;

  constructor(opts: PortAudioOptions = {}) {
    this.outputLatencyMs = opts.outputLatencyMs ?? 60;
    this.inputLatencyMs = opts.inputLatencyMs ?? 40;
    this.framesPerBuffer = opts.framesPerBuffer ?? 960;
    this.stallMs = opts.stallMs ?? 1500;
    this.maxQueuedFrames = opts.maxQueuedFrames ?? 10;
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

  openCapture(deviceName: string): CaptureDevice {
    const dev = resolveDevice(this.listDevices(), deviceName, 'input');
    return new PortAudioCapture(dev, { framesPerBuffer: this.framesPerBuffer, stallMs: this.stallMs, latencyMs: this.inputLatencyMs });
  }

  openPlayback(deviceName: string): PlaybackDevice {
    const dev = resolveDevice(this.listDevices(), deviceName, 'output');
    return new PortAudioPlayback(dev, {
      framesPerBuffer: this.framesPerBuffer,
      latencyMs: this.outputLatencyMs,
      stallMs: this.stallMs,
      maxQueuedFrames: this.maxQueuedFrames,
    });
  }
}

export interface ResolvedDevice {
  /** PortAudio device index, -1 for PortAudio's default device. */
  id: number;
  /** Name for log lines and errors. */
  label: string;
}

/**
 * Picks a device by configured name: exact name, then case-insensitive substring, 'default' (or empty)
 * -> the device named "default" if there is one, else PortAudio's default device.
 */
export function resolveDevice(devices: AudioDeviceInfo[], name: string, direction: 'input' | 'output'): ResolvedDevice {
  const usable = devices.filter((d) => (direction === 'input' ? d.maxInputChannels : d.maxOutputChannels) > 0);
  const wanted = name.trim();
  if (wanted === '' || wanted === 'default') {
    const named = usable.find((d) => d.name === 'default');
    if (named) return { id: named.id, label: 'default' };
    if (usable.length > 0) return { id: -1, label: 'default' };
  } else {
    const exact = usable.find((d) => d.name === wanted);
    if (exact) return { id: exact.id, label: exact.name };
    const lower = wanted.toLowerCase();
    const partial = usable.filter((d) => d.name.toLowerCase().includes(lower));
    if (partial.length > 0) return { id: partial[0].id, label: partial[0].name };
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
    hint = ' (another program holds the sound card: stop it, or play through a sound server such as PulseAudio/PipeWire)';
  } else if (/Invalid device|No default device|No such (device|file|entity)|Invalid number of channels|not found/i.test(text)) {
    code = 'device_missing';
    hint = ' (is the card plugged in and the device name right? `speaker-agent devices` lists them)';
  }
  return new AudioDeviceError(code, `${doing}: ${text}${hint}`, err);
}

interface StreamOptions {
  framesPerBuffer: number;
  stallMs: number;
  latencyMs: number;
}

const hrNow = (): bigint => process.hrtime.bigint();
/** A stream may take this long to start moving audio (PulseAudio's ALSA plugin: up to ~1.3 s measured). */
const STARTUP_GRACE_MS = 3000;

class PortAudioCapture implements CaptureDevice {
  onError?: (err: AudioDeviceError) => void;
  private stream: IoStreamRead | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private lastDataMs = 0;
  private startedAtMs = 0;
  private failed = false;
  // One aligned frame buffer, refilled in place (naudiodon's chunks need not be 2-byte aligned).
  private readonly frameBytes = Buffer.alloc(FRAME_SAMPLES * 2);
  private readonly frame = new Int16Array(this.frameBytes.buffer, this.frameBytes.byteOffset, FRAME_SAMPLES);
  private fill = 0;

  constructor(
    private readonly device: ResolvedDevice,
    private readonly opts: StreamOptions,
  ) {}

  async start(onFrame: (frame: Int16Array, capturedAtNs: bigint) => void): Promise<void> {
    if (this.stream) throw new AudioDeviceError('device_failed', `capture device ${this.device.label} is already started`);
    const na = loadNaudiodon();
    let stream: IoStreamRead;
    try {
      stream = quietNativeStderr(() =>
        na.AudioIO({
          inOptions: {
            channelCount: 1,
            sampleFormat: na.SampleFormat16Bit,
            sampleRate: SAMPLE_RATE,
            deviceId: this.device.id,
            framesPerBuffer: this.opts.framesPerBuffer,
            latencyMs: this.opts.latencyMs,
            highwaterMark: FRAME_SAMPLES * 2,
            // Room for ~300 ms of callbacks if the event loop stalls, so the audio callback never blocks.
            maxQueue: 32,
            closeOnError: false,
          },
        }),
      );
      stream.removeAllListeners('error'); // naudiodon's own listener console.error's
      stream.on('error', (err: unknown) => this.fail(classifyPortAudioError(err, `capture device ${this.device.label} failed`)));
      stream.on('data', (chunk: Buffer) => this.onChunk(chunk, onFrame));
      quietNativeStderr(() => stream.start());
    } catch (err) {
      throw classifyPortAudioError(err, `cannot open capture device ${this.device.label}`);
    }
    this.stream = stream;
    this.failed = false;
    this.lastDataMs = this.startedAtMs = performance.now();
    this.watchdog = setInterval(() => {
      const now = performance.now();
      const limit = now - this.startedAtMs < STARTUP_GRACE_MS ? STARTUP_GRACE_MS : this.opts.stallMs;
      if (now - this.lastDataMs > limit) {
        this.fail(new AudioDeviceError('device_failed', `capture device ${this.device.label} delivered no audio for ${this.opts.stallMs} ms`));
      }
    }, Math.min(500, this.opts.stallMs));
    this.watchdog.unref();
  }

  private onChunk(chunk: Buffer, onFrame: (frame: Int16Array, capturedAtNs: bigint) => void): void {
    if (!this.stream) return; // a read that completed after stop()
    this.lastDataMs = performance.now();
    const at = hrNow();
    let off = 0;
    const len = chunk.length & ~1;
    while (off < len) {
      const n = Math.min(len - off, this.frameBytes.length - this.fill);
      chunk.copy(this.frameBytes, this.fill, off, off + n);
      this.fill += n;
      off += n;
      if (this.fill === this.frameBytes.length) {
        this.fill = 0;
        onFrame(this.frame, at);
      }
    }
  }

  private fail(err: AudioDeviceError): void {
    if (this.failed || !this.stream) return; // errors after stop() are expected
    this.failed = true;
    void this.stop();
    this.onError?.(err);
  }

  async stop(): Promise<void> {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = undefined;
    const stream = this.stream;
    this.stream = undefined;
    this.fill = 0;
    if (stream) await abortStream(stream);
  }
}

class PortAudioPlayback implements PlaybackDevice {
  onError?: (err: AudioDeviceError) => void;
  /** Called, in order, each time a frame has been handed to PortAudio (for latency measurement). */
  onHanded?: (atNs: bigint) => void;
  private stream: IoStreamWrite | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private failed = false;
  // Frame pool used as a FIFO ring: no allocation per frame.
  private readonly pool: Buffer[];
  private head = 0;
  private count = 0;
  private inFlight = false;
  private inFlightSinceMs = 0;
  readonly stats = { written: 0, handed: 0, droppedForLatency: 0 };
  private readonly afterWrite = (err?: Error | null): void => this.onWritten(err);

  constructor(
    private readonly device: ResolvedDevice,
    private readonly opts: StreamOptions & { maxQueuedFrames: number },
  ) {
    this.pool = Array.from({ length: opts.maxQueuedFrames }, () => Buffer.alloc(FRAME_SAMPLES * 2));
  }

  get queuedMs(): number {
    return (this.count + (this.inFlight ? 1 : 0)) * 20;
  }

  async start(): Promise<void> {
    if (this.stream) throw new AudioDeviceError('device_failed', `playback device ${this.device.label} is already started`);
    const na = loadNaudiodon();
    let stream: IoStreamWrite;
    try {
      stream = quietNativeStderr(() =>
        na.AudioIO({
          outOptions: {
            channelCount: 1,
            sampleFormat: na.SampleFormat16Bit,
            sampleRate: SAMPLE_RATE,
            deviceId: this.device.id,
            framesPerBuffer: this.opts.framesPerBuffer,
            latencyMs: this.opts.latencyMs,
            highwaterMark: FRAME_SAMPLES * 2,
            // One chunk waiting natively plus the one the callback is reading: low latency, and our own
            // queue (not naudiodon's) holds the rest, so queuedMs is known.
            maxQueue: 1,
            closeOnError: false,
          },
        }),
      );
      stream.removeAllListeners('error');
      stream.on('error', (err: unknown) => this.fail(classifyPortAudioError(err, `playback device ${this.device.label} failed`)));
      quietNativeStderr(() => stream.start());
    } catch (err) {
      throw classifyPortAudioError(err, `cannot open playback device ${this.device.label}`);
    }
    this.stream = stream;
    this.failed = false;
    const startedAtMs = performance.now();
    this.watchdog = setInterval(() => {
      const now = performance.now();
      const limit = now - startedAtMs < STARTUP_GRACE_MS ? STARTUP_GRACE_MS : this.opts.stallMs;
      if (this.inFlight && now - this.inFlightSinceMs > limit) {
        this.fail(new AudioDeviceError('device_failed', `playback device ${this.device.label} accepted no audio for ${this.opts.stallMs} ms`));
      }
    }, Math.min(500, this.opts.stallMs));
    this.watchdog.unref();
  }

  write(frame: Int16Array): void {
    if (!this.stream) return;
    if (frame.length !== FRAME_SAMPLES) throw new RangeError(`playback expects ${FRAME_SAMPLES}-sample frames, got ${frame.length}`);
    if (this.count === this.pool.length) {
      // The device is not keeping up (or stalled): drop the oldest frame rather than let latency grow.
      this.head = (this.head + 1) % this.pool.length;
      this.count--;
      this.stats.droppedForLatency++;
    }
    const buf = this.pool[(this.head + this.count) % this.pool.length];
    new Int16Array(buf.buffer, buf.byteOffset, FRAME_SAMPLES).set(frame);
    this.count++;
    this.stats.written++;
    this.pump();
  }

  private pump(): void {
    if (this.inFlight || this.count === 0 || !this.stream) return;
    const buf = this.pool[this.head];
    this.head = (this.head + 1) % this.pool.length;
    this.count--;
    this.inFlight = true;
    this.inFlightSinceMs = performance.now();
    // naudiodon copies the chunk synchronously inside write(), so the pool buffer is free again right away.
    this.stream.write(buf, this.afterWrite);
  }

  private onWritten(err?: Error | null): void {
    this.inFlight = false;
    if (!this.stream) return; // completed after stop()
    if (err) {
      this.fail(classifyPortAudioError(err, `playback device ${this.device.label} failed`));
      return;
    }
    this.stats.handed++;
    this.onHanded?.(hrNow());
    this.pump();
  }

  private fail(err: AudioDeviceError): void {
    if (this.failed || !this.stream) return; // errors after stop() are expected
    this.failed = true;
    void this.stop();
    this.onError?.(err);
  }

  async stop(): Promise<void> {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = undefined;
    const stream = this.stream;
    this.stream = undefined;
    this.count = 0;
    this.inFlight = false;
    if (stream) await abortStream(stream);
  }
}

/** Aborts a naudiodon stream (drops pending audio); bounded wait, since a dead device may never answer. */
function abortStream(stream: IoStreamRead | IoStreamWrite): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 2000);
    timer.unref();
    try {
      stream.abort(() => {
        clearTimeout(timer);
        resolve();
      });
    } catch {
      clearTimeout(timer);
      resolve();
    }
  });
}
