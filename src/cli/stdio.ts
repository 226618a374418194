// Keeps the CLI's stdout clean. Native code in the process printf()s to the C library's stdout: naudiodon
// announces every stream it opens ("Input device name is ...") and reports xruns ("output underflow") at any
// time, which would corrupt `--json` output and the JSON log lines journald reads from stdout. At start-up
// the process's file descriptor 1 is pointed at stderr (where such diagnostics belong) and the CLI and the
// logger write to a duplicate of the original stdout instead. Uses libc dup/dup2 through koffi (a dependency
// already); where that fails, everything stays on fd 1 as before.
import { createRequire } from 'node:module';
import { writeSync } from 'node:fs';
import tty from 'node:tty';

let outFd = 1;

export function isolateNativeStdout(): void {
  if (outFd !== 1) return;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const lib = koffi.load('libc.so.6');
    const dup = lib.func('int dup(int)') as (fd: number) => number;
    const dup2 = lib.func('int dup2(int, int)') as (a: number, b: number) => number;
    const fd = dup(1);
    if (fd < 0) return;
    if (dup2(2, 1) < 0) return;
    outFd = fd;
  } catch {
    /* not glibc or koffi missing: native lines may interleave with stdout */
  }
}

/** The file descriptor of the real stdout (pass to createLogger({ destination })). */
export function stdoutFd(): number {
  return outFd;
}

export function stdoutIsTTY(): boolean {
  return tty.isatty(outFd);
}

/** Synchronous write to the real stdout (small CLI outputs; survives process.exit right after). */
export function writeOut(text: string): void {
  const buf = Buffer.from(text, 'utf8');
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(outFd, buf, off);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') continue; // a non-blocking pipe that is full
      if ((err as NodeJS.ErrnoException).code === 'EPIPE') return; // reader went away (| head)
      throw err;
    }
  }
}
