// systemd's notify protocol (sd_notify(3)) for a Type=notify service: READY=1 once running, WATCHDOG=1 pings
// while healthy, STOPPING=1 on shutdown, STATUS=... for `systemctl status`. A no-op when not run by systemd.
//
// Node has no unix datagram sockets. Choices weighed:
//  - `systemd-notify` (the CLI) sends from its own PID: systemd drops it unless NotifyAccess=all, and even then
//    it may attribute the message to the wrong unit once the child has exited (a known race). Wrong for us.
//  - npm `sd-notify` / `notify` are native addons built against libsystemd (unmaintained, need libsystemd-dev).
//  - koffi (a general FFI, used by the companion) calling socket()/sendto(): worked, but cost the daemon ~1.1 MB
//    of resident memory for this and two dup calls (3.4 MB in a bare node; the daemon shared part of it).
//  - our own addon, vendor/speaker-sys: one C function (socket, sendto with MSG_DONTWAIT, close), built by
//    `npm ci` with no dependency. Chosen.
import { createRequire } from 'node:module';
import { CodedError } from './errors.js';
import { addonLoadProblem } from './addonAdvice.js';

const AF_UNIX = 1;
const SUN_PATH_MAX = 108;

export class SdNotifyError extends CodedError<'sd_notify_failed'> {
  override name = 'SdNotifyError';
  constructor(message: string, cause?: unknown) {
    super('sd_notify_failed', message, { cause });
  }
}

type SendDatagram = (addr: Buffer, addrLen: number, message: Buffer) => number;

let sendDatagram: SendDatagram | undefined;
function loadSendDatagram(): SendDatagram {
  if (sendDatagram) return sendDatagram;
  try {
    // CommonJS addon; createRequire keeps this module loadable where the addon is absent until first use.
    sendDatagram = (createRequire(import.meta.url)('speaker-sys') as typeof import('speaker-sys')).sendDatagram;
  } catch (err) {
    throw new SdNotifyError(addonLoadProblem('speaker-sys', err), err);
  }
  return sendDatagram;
}

/** Encodes $NOTIFY_SOCKET as a struct sockaddr_un: a path, or an abstract name when it starts with '@'. */
export function sockaddrUn(socketPath: string): { addr: Buffer; len: number } {
  const abstract = socketPath.startsWith('@');
  const name = Buffer.from(abstract ? socketPath.slice(1) : socketPath, 'utf8');
  const pathLen = name.length + 1; // abstract: leading NUL + name; path: name + trailing NUL
  if (name.length === 0 || pathLen > SUN_PATH_MAX) {
    throw new SdNotifyError(`NOTIFY_SOCKET is not a usable unix socket address: ${JSON.stringify(socketPath)}`);
  }
  const addr = Buffer.alloc(2 + SUN_PATH_MAX);
  addr.writeUInt16LE(AF_UNIX, 0); // sa_family_t is host order; all targets are little-endian
  name.copy(addr, abstract ? 3 : 2);
  // Abstract names are length-delimited (no trailing NUL counted); paths include their NUL.
  return { addr, len: 2 + pathLen };
}

export interface SdNotifier {
  /** true when $NOTIFY_SOCKET was set (run by systemd with Type=notify) */
  readonly enabled: boolean;
  /** How often to send WATCHDOG=1 (half of $WATCHDOG_USEC), undefined when systemd set no watchdog for us. */
  readonly watchdogIntervalMs: number | undefined;
  /** Sends raw state lines ("READY=1\nSTATUS=..."); false when disabled or the send failed. */
  notify(state: string): boolean;
  ready(status?: string): boolean;
  watchdog(): boolean;
  stopping(status?: string): boolean;
  status(text: string): boolean;
  close(): void;
}

export interface SdNotifierOptions {
  /** Remove NOTIFY_SOCKET / WATCHDOG_* from env so child processes (companion, players) do not inherit them
   *  and confuse systemd (default true). */
  unsetEnvironment?: boolean;
  /** Called once when a send fails (e.g. the socket vanished); the notifier keeps going. */
  onError?: (err: SdNotifyError) => void;
}

export function createSdNotifier(env: NodeJS.ProcessEnv = process.env, opts: SdNotifierOptions = {}): SdNotifier {
  const socketPath = env.NOTIFY_SOCKET;
  const watchdogMs = watchdogIntervalMs(env);
  if (opts.unsetEnvironment !== false) {
    delete env.NOTIFY_SOCKET;
    delete env.WATCHDOG_USEC;
    delete env.WATCHDOG_PID;
  }
  if (!socketPath) return disabledNotifier;

  const { addr, len } = sockaddrUn(socketPath);
  const send = loadSendDatagram();
  let closed = false;
  let reported = false;

  const notify = (state: string): boolean => {
    if (closed) return false;
    const err = send(addr, len, Buffer.from(state, 'utf8'));
    if (err < 0) {
      if (!reported) {
        reported = true;
        opts.onError?.(new SdNotifyError(`sd_notify to ${socketPath} failed, errno ${-err}`));
      }
      return false;
    }
    return true;
  };
  return {
    enabled: true,
    watchdogIntervalMs: watchdogMs,
    notify,
    ready: (status) => {
      const sent = notify(status ? `READY=1\nSTATUS=${oneLine(status)}` : 'READY=1');
      if (sent) readySent = true;
      return sent;
    },
    watchdog: () => notify('WATCHDOG=1'),
    stopping: (status) => notify(status ? `STOPPING=1\nSTATUS=${oneLine(status)}` : 'STOPPING=1'),
    status: (text) => notify(`STATUS=${oneLine(text)}`),
    close: () => {
      closed = true;
    },
  };
}

let readySent = false;
/** Whether this process told systemd READY=1: a failure before that is a failed start (startFailureHold.ts). */
export function readyWasSent(): boolean {
  return readySent;
}

const disabledNotifier: SdNotifier = {
  enabled: false,
  watchdogIntervalMs: undefined,
  notify: () => false,
  ready: () => false,
  watchdog: () => false,
  stopping: () => false,
  status: () => false,
  close: () => {},
};

function oneLine(s: string): string {
  return s.replace(/[\r\n]+/g, ' ');
}

/**
 * How often to ping: half of $WATCHDOG_USEC (as sd_watchdog_enabled(3) recommends), or undefined when systemd
 * set no watchdog or set it for another PID.
 */
export function watchdogIntervalMs(env: NodeJS.ProcessEnv = process.env, pid = process.pid): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (!Number.isFinite(usec) || usec <= 0) return undefined;
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return undefined;
  return Math.max(1, Math.floor(usec / 2000));
}

export interface WatchdogOptions {
  intervalMs: number;
  /** Extra health check by the owner (e.g. the agent's loop made progress); no ping when false. */
  isHealthy?: () => boolean;
}

/**
 * Pings WATCHDOG=1 from a timer on the main event loop, so the pings stop when the loop hangs (and systemd
 * restarts the service), or while the owner reports unhealthy.
 * A late timer still pings: it proves the loop runs again. Skipping it (as this did until 30 Nov) made a single
 * stall of more than half the watchdog's limit fatal: the ping after it was dropped and the next came too late.
 * A loop that lags by more than that for good pings less often than the limit, and systemd restarts it anyway.
 */
export function startWatchdog(notifier: SdNotifier, opts: WatchdogOptions): { stop(): void; readonly pings: number } {
  let pings = 0;
  const timer = setInterval(() => {
    if (opts.isHealthy && !opts.isHealthy()) return;
    if (notifier.watchdog()) pings++;
  }, opts.intervalMs);
  timer.unref();
  return {
    stop: () => clearInterval(timer),
    get pings() {
      return pings;
    },
  };
}
