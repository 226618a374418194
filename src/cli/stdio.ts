// Keeps the CLI's stdout clean. Native code in the process printf()s to the C library's stdout: naudiodon
// announces every stream it opens ("Input device name is ...") and reports xruns ("output underflow") at any
// time, which would corrupt `--json` output and the JSON log lines journald reads from stdout. At start-up
// the process's file descriptor 1 is pointed at stderr (where such diagnostics belong) and the CLI and the
// logger write to a duplicate of the original stdout instead. Uses dup/dup2 from our addon vendor/speaker-sys;
// where that fails, everything stays on fd 1 as before.
import { createRequire } from 'node:module';
import { closeSync, writeSync } from 'node:fs';
import tty from 'node:tty';

let outFd = 1;

export function isolateNativeStdout(): void {
  if (outFd !== 1) return;
  try {
    const sys = createRequire(import.meta.url)('speaker-sys') as typeof import('speaker-sys');
    const fd = sys.dup(1);
    try {
      sys.dup2(2, 1);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    outFd = fd;
  } catch {
    /* the addon missing, or no fd 1/2: native lines may interleave with stdout */
  }
}

/** The file descriptor of the real stdout (pass to createLogger({ destination })). */
export function stdoutFd(): number {
  return outFd;
}

export function stdoutIsTTY(): boolean {
  return tty.isatty(outFd);
}

/** Synchronous write to the real stdout (small CLI outputs; survives process.exit right after); false when the
 *  reader went away (EPIPE). */
export function writeOut(text: string): boolean {
  const buf = Buffer.from(text, 'utf8');
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(outFd, buf, off);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') continue; // a non-blocking pipe that is full
      if ((err as NodeJS.ErrnoException).code === 'EPIPE') return false; // reader went away (| head)
      throw err;
    }
  }
  return true;
}
