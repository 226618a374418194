// Devices that survive a busy, missing or failing sound card: ALSA "Device or resource busy", an unplugged USB
// card, a sound server restart. Opening is retried with exponential backoff, and a device that fails while
// running is closed and reopened the same way. The agent keeps running (the call, the other direction) instead
// of crash-looping under systemd.
//
// Logging: one line per state change (opened, unavailable with its reason, back), never one per attempt; a
// change of reason (busy -> missing) is a state change.
//
// Cost while retrying: each attempt enumerates PortAudio devices, which blocks the event loop for ~50-100 ms
// when no other stream is open. Backoff (up to maxBackoffMs) keeps that rare.
//
// A device that fails while running is reopened at once, but one that fails again soon after each reopen (a
// wedged USB card, a sink that takes the stream and never plays it: it opens, stalls, is reopened...) is "flapping":
// it was reopened every ~3 s for ever, two journal lines and an enumeration each time. Now its reopens back off
// like failed opens, and from the FLAP_QUIET_AFTER-th flap on its lines go to debug until it stays open.
import type { Logger } from '../../common/logger.js';
import { silentLogger } from '../../common/logger.js';
import {
  AudioDeviceError,
  type AudioBackend,
  type CaptureDevice,
  type PlaybackDevice,
} from './audioDevice.js';

export type DeviceState = 'closed' | 'opening' | 'open' | 'retrying';

/** open this long before failing = it was working: reopened at once; sooner = a flap, reopened with backoff */
const STABLE_OPEN_MS = 30_000;
/** flaps in a row after which the device's failures and reopens are logged at debug, until it stays open */
const FLAP_QUIET_AFTER = 3;

export interface ResilientDeviceOptions {
  backend: AudioBackend;
  deviceName: string;
  logger?: Logger;
  /** First retry delay; doubles per failed attempt. Default 500 ms. */
  minBackoffMs?: number;
  /** Longest retry delay. Default 10 s. */
  maxBackoffMs?: number;
}

abstract class ResilientDevice<D extends CaptureDevice | PlaybackDevice> {
  state: DeviceState = 'closed';
  /** Last error while opening or running; undefined when open. */
  lastError: AudioDeviceError | undefined;
  /** Called on every state change (for the CLI's doctor/status and tests). */
  onStateChange?: (state: DeviceState, err?: AudioDeviceError) => void;
  readonly stats = { opens: 0, failures: 0, flaps: 0 };
  protected inner: D | undefined;
  protected readonly log: Logger;
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;
  private backoffMs: number;
  private timer: NodeJS.Timeout | undefined;
  private loggedCode: string | undefined;
  private realtimeSeen: number | undefined;
  private waiters: (() => void)[] = [];
  private closing: Promise<void> | undefined;
  /** Bumped by end(): an attempt begun before it is stale (a mic off/on while it waited must not leave it and the
   *  new one each opening a stream), so it opens nothing and closes what it opened. */
  private epoch = 0;
  /** the attempt last begun (it may still be waiting or opening) */
  private attempting: Promise<void> | undefined;
  /** when the device open now opened (performance.now()) */
  private openedAt = 0;
  /** the device open now was reopened after it failed while running (its own quick failure is a flap) */
  private reopened = false;
  /** the last runtime failure made the next open a reopen */
  private failedRunning = false;
  /** failures in a row each less than STABLE_OPEN_MS after an open */
  private flaps = 0;
  /** the failure codes said while quiet (each once, until the device stays open) */
  private readonly quietCodes = new Set<string>();
  /** fires once a flapping device has stayed open STABLE_OPEN_MS */
  private stableTimer: NodeJS.Timeout | undefined;

  constructor(
    protected readonly opts: ResilientDeviceOptions,
    private readonly kind: 'microphone' | 'speaker',
  ) {
    this.log = opts.logger ?? silentLogger;
    this.minBackoffMs = opts.minBackoffMs ?? 500;
    this.maxBackoffMs = opts.maxBackoffMs ?? 10_000;
    this.backoffMs = this.minBackoffMs;
  }

  /** Resolves once the device is open (immediately if it is). */
  whenOpen(): Promise<void> {
    if (this.state === 'open') return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  protected abstract openInner(): Promise<D>;

  /** Called each time a device has opened, before whenOpen() resolves. */
  protected opened(): void {}

  /** The audio thread's scheduling, logged once per device (and again only if it changes): a board that denies
   *  real-time priority plays on, and its log says why a busy moment may cut the sound. */
  protected noteRealtime(errno: number): void {
    if (errno === this.realtimeSeen) return;
    this.realtimeSeen = errno;
    if (errno === 0) this.log.info({ device: this.opts.deviceName }, `${this.kind} audio thread at real-time priority`);
    else
      this.log.warn(
        { device: this.opts.deviceName, errno },
        `${this.kind} audio thread at normal priority (real-time scheduling refused, errno ${errno}): a busy board may cut the sound; the systemd unit's LimitRTPRIO allows it`,
      );
  }

  /** First attempt; never throws for device errors (they are retried). */
  protected async begin(): Promise<void> {
    if (this.state !== 'closed') return;
    this.setState('opening');
    await this.attempt();
  }

  private attempt(): Promise<void> {
    this.attempting = this.tryOpen();
    return this.attempting;
  }

  private async tryOpen(): Promise<void> {
    this.timer = undefined;
    if (this.state === 'closed') return;
    const epoch = this.epoch;
    let dev: D;
    try {
      await this.closing;
      if (epoch !== this.epoch) return; // stop() was called meanwhile (and start() may have begun another attempt)
      dev = await this.openInner();
    } catch (err) {
      if (epoch === this.epoch) this.failed(toDeviceError(err));
      return;
    }
    if (epoch !== this.epoch) {
      await dev.stop().catch(() => undefined); // stop() was called while opening
      return;
    }
    dev.onError = (err) => {
      if (this.inner !== dev) return;
      this.inner = undefined;
      this.clearStableTimer();
      // PortAudio is not thread-safe: the next open waits until this close (on a pool thread) is done.
      this.closing = dev.stop().catch(() => undefined);
      // A device that was working is retried at once: most such failures are a stalled stream, which a reopen
      // fixes (the speaker is silent until then); a card that is really gone fails fast and backs off. One that
      // fails again soon after a reopen is flapping: backed off, from minBackoffMs up.
      this.failedRunning = true;
      if (!this.reopened || performance.now() - this.openedAt >= STABLE_OPEN_MS) {
        this.flaps = 0;
        this.backoffMs = this.minBackoffMs;
        this.failed(err, 0);
        return;
      }
      this.flaps++;
      this.stats.flaps++;
      if (this.flaps === FLAP_QUIET_AFTER) {
        this.loggedCode = err.code; // said here, not again by failed()
        this.quietCodes.add(err.code);
        this.log.warn(
          { device: this.opts.deviceName, code: err.code, err: err.message, flaps: this.flaps },
          `${this.kind} device keeps failing right after it opens (${this.flaps} times in a row); reopening every ${this.maxBackoffMs / 1000} s at most, logged again once it stays open`,
        );
      }
      this.failed(err);
    };
    this.inner = dev;
    this.stats.opens++;
    this.openedAt = performance.now();
    this.reopened = this.failedRunning;
    this.failedRunning = false;
    const quiet = this.flaps >= FLAP_QUIET_AFTER;
    if (quiet) this.log.debug({ device: this.opts.deviceName, flaps: this.flaps }, `${this.kind} device open again (flapping)`);
    else if (this.loggedCode) this.log.info({ device: this.opts.deviceName }, `${this.kind} device is back`);
    else this.log.info({ device: this.opts.deviceName }, `${this.kind} device open`);
    if (this.flaps > 0) {
      // the backoff of a flapping device is reset only once it has stayed open (unref'd: only a log line)
      this.stableTimer = setTimeout(() => {
        this.stableTimer = undefined;
        if (this.flaps >= FLAP_QUIET_AFTER) this.log.info({ device: this.opts.deviceName, flaps: this.flaps }, `${this.kind} device has stayed open ${STABLE_OPEN_MS / 1000} s: working again`);
        this.flaps = 0;
        this.quietCodes.clear();
        this.backoffMs = this.minBackoffMs;
        this.loggedCode = undefined; // the next failure is news again
      }, STABLE_OPEN_MS);
      this.stableTimer.unref();
    } else {
      this.backoffMs = this.minBackoffMs;
    }
    if (!quiet) this.loggedCode = undefined;
    this.lastError = undefined;
    this.setState('open');
    this.opened();
    const w = this.waiters;
    this.waiters = [];
    for (const resolve of w) resolve();
  }

  private failed(err: AudioDeviceError, delayMs = this.backoffMs): void {
    this.stats.failures++;
    this.lastError = err;
    if (this.state === 'closed') return;
    // quiet while flapping: each reason once (the card gone is news; the same reasons again and again are not)
    const quiet = this.flaps >= FLAP_QUIET_AFTER;
    if (quiet ? !this.quietCodes.has(err.code) : this.loggedCode !== err.code) {
      if (quiet) this.quietCodes.add(err.code);
      this.loggedCode = err.code;
      this.log.warn(
        { device: this.opts.deviceName, code: err.code, err: err.message },
        `${this.kind} device unavailable (${err.code}); retrying in the background every ${this.maxBackoffMs / 1000} s at most`,
      );
    }
    this.setState('retrying', err);
    // Not unref'd: waiting for a sound card is work the process must stay alive for.
    this.timer = setTimeout(() => void this.attempt(), delayMs);
    if (delayMs > 0) this.backoffMs = Math.min(this.maxBackoffMs, this.backoffMs * 2);
  }

  private clearStableTimer(): void {
    if (this.stableTimer) clearTimeout(this.stableTimer);
    this.stableTimer = undefined;
  }

  protected async end(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.clearStableTimer();
    this.flaps = 0;
    this.quietCodes.clear();
    this.reopened = false;
    this.failedRunning = false;
    const dev = this.inner;
    this.inner = undefined;
    this.loggedCode = undefined;
    this.epoch++;
    this.setState('closed');
    const stopped = dev?.stop();
    // The next open waits for this close and for an attempt in flight to drop or close its stream: two streams at
    // once are a "busy" device on raw ALSA, and PortAudio is not thread-safe.
    this.closing = Promise.allSettled([this.closing, this.attempting, stopped]).then(() => undefined);
    await stopped;
  }

  private setState(s: DeviceState, err?: AudioDeviceError): void {
    if (this.state === s && s !== 'retrying') return;
    this.state = s;
    this.onStateChange?.(s, err);
  }
}

function toDeviceError(err: unknown): AudioDeviceError {
  return err instanceof AudioDeviceError ? err : new AudioDeviceError('device_failed', String((err as Error)?.message ?? err), err);
}

/** A microphone that reopens itself. start() resolves after the first attempt, open or not. */
export class ResilientCapture extends ResilientDevice<CaptureDevice> implements CaptureDevice {
  private onFrame: ((frame: Int16Array, capturedAtNs: bigint) => void) | undefined;

  constructor(opts: ResilientDeviceOptions) {
    super(opts, 'microphone');
  }

  protected async openInner(): Promise<CaptureDevice> {
    const dev = this.opts.backend.openCapture(this.opts.deviceName);
    dev.onRealtime = (errno) => this.noteRealtime(errno);
    await dev.start((f, at) => this.onFrame?.(f, at));
    return dev;
  }

  async start(onFrame: (frame: Int16Array, capturedAtNs: bigint) => void): Promise<void> {
    this.onFrame = onFrame;
    await this.begin();
  }

  async stop(): Promise<void> {
    this.onFrame = undefined;
    await this.end();
  }
}

/** A speaker that reopens itself. Frames written while it is not open are dropped. */
export class ResilientPlayback extends ResilientDevice<PlaybackDevice> implements PlaybackDevice {
  onHanded?: (atNs: bigint) => void;
  onReady?: () => void;
  onStarved?: (ms: number, queuedMs: number) => void;

  constructor(opts: ResilientDeviceOptions) {
    super(opts, 'speaker');
  }

  get queuedMs(): number {
    return this.inner?.queuedMs ?? 0;
  }

  /** Of the device open now (a reopened device starts from 0). */
  get underruns(): number {
    return this.inner?.underruns ?? 0;
  }

  write(frame: Int16Array): void {
    this.inner?.write(frame);
  }

  protected async openInner(): Promise<PlaybackDevice> {
    const dev = this.opts.backend.openPlayback(this.opts.deviceName);
    dev.onHanded = (at) => this.onHanded?.(at);
    dev.onStarved = (ms, queuedMs) => this.onStarved?.(ms, queuedMs);
    dev.onRealtime = (errno) => this.noteRealtime(errno);
    await dev.start();
    return dev;
  }

  // The new stream has nothing queued: without a write it would never report a frame handed.
  protected override opened(): void {
    this.onReady?.();
  }

  async start(): Promise<void> {
    await this.begin();
  }

  async stop(): Promise<void> {
    await this.end();
  }
}
