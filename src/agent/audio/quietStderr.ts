// PortAudio's ALSA probing prints dozens of harmless lines ("ALSA lib pcm.c: Unknown PCM cards.pcm.rear",
// "jack server is not running") on stderr each time it initialises, which is on every device listing and
// stream open. They bury real log lines in journald and alarm users, so the file descriptor 2 is pointed at
// /dev/null for the duration of those synchronous calls (libc dup/dup2 through koffi, a project
// dependency already). Set SPEAKER_AGENT_AUDIO_DEBUG=1 to see them. Where libc cannot be loaded (not glibc),
// the lines simply stay visible.
import { createRequire } from 'node:module';

interface Libc {
  dup(fd: number): number;
  dup2(from: number, to: number): number;
  open(path: string, flags: number): number;
  close(fd: number): number;
}

const O_WRONLY = 1;
let libc: Libc | null | undefined;

function loadLibc(): Libc | null {
  if (libc !== undefined) return libc;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const lib = koffi.load('libc.so.6');
    libc = {
      dup: lib.func('int dup(int)') as Libc['dup'],
      dup2: lib.func('int dup2(int, int)') as Libc['dup2'],
      open: lib.func('int open(const char *, int)') as Libc['open'],
      close: lib.func('int close(int)') as Libc['close'],
    };
  } catch {
    libc = null;
  }
  return libc;
}

/** Runs a synchronous native call with stderr silenced. */
export function quietNativeStderr<T>(fn: () => T): T {
  if (process.env.SPEAKER_AGENT_AUDIO_DEBUG) return fn();
  const c = loadLibc();
  if (!c) return fn();
  const saved = c.dup(2);
  const devnull = c.open('/dev/null', O_WRONLY);
  if (saved < 0 || devnull < 0) {
    if (saved >= 0) c.close(saved);
    if (devnull >= 0) c.close(devnull);
    return fn();
  }
  c.dup2(devnull, 2);
  c.close(devnull);
  try {
    return fn();
  } finally {
    c.dup2(saved, 2);
    c.close(saved);
  }
}
