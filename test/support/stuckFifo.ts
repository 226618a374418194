// A file whose read never returns: a FIFO no one writes. Opening it to read blocks in the kernel, as a read from a
// dead SD card or a lost network mount would; for the wake word engine's start timeout (its phrase model).
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface StuckFile {
  path: string;
  /** Lets every reader blocked in it go (each sees end of file); true once none waits (false: still some after 100). */
  release(): boolean;
  /** Releases the readers, then removes the file: a thread still blocked would hold its test process open. */
  remove(): void;
}

export function stuckFile(name = 'stuck.onnx'): StuckFile {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'stuck-'));
  const file = path.join(dir, name);
  execFileSync('mkfifo', [file]);
  const release = (): boolean => {
    for (let i = 0; i < 100; i++) {
      try {
        closeSync(openSync(file, constants.O_WRONLY | constants.O_NONBLOCK)); // a waiting reader opens, reads EOF
      } catch {
        return true; // ENXIO: no reader waits
      }
    }
    return false;
  };
  return {
    path: file,
    release,
    remove: () => {
      release();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
