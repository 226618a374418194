// Crash-safe file replacement: write a temp file in the same directory, fsync it, rename it over the target,
// fsync the directory. After a crash or power loss the target is either the old or the new content, never
// empty or half written. Temp files left by a crash are named `.<name>.tmp-<pid>-<rand>` and ignored/cleaned.
import { randomBytes } from 'node:crypto';
import { promises as fs, constants as fsc } from 'node:fs';
import path from 'node:path';

export interface AtomicWriteOptions {
  /** file mode of the new file; default 0o600 (readable only by its owner) */
  mode?: number;
  /** test hook: called after the temp file is written and fsynced, before the rename */
  beforeRename?: (tempPath: string) => Promise<void> | void;
}

const TEMP_MARK = '.tmp-';

export function isAtomicTempFile(target: string, candidate: string): boolean {
  return path.basename(candidate).startsWith(`.${path.basename(target)}${TEMP_MARK}`);
}

export async function writeFileAtomic(target: string, data: string | Buffer, opts: AtomicWriteOptions = {}): Promise<void> {
  const mode = opts.mode ?? 0o600;
  const dir = path.dirname(target);
  const temp = path.join(dir, `.${path.basename(target)}${TEMP_MARK}${process.pid}-${randomBytes(4).toString('hex')}`);
  // O_EXCL: never follow or reuse a file someone else put there.
  const fh = await fs.open(temp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, mode);
  try {
    await fh.writeFile(data);
    await fh.chmod(mode); // umask may have narrowed or (never) widened the mode
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await fs.rm(temp, { force: true });
    throw err;
  }
  await fh.close();
  try {
    await opts.beforeRename?.(temp);
    await fs.rename(temp, target);
  } catch (err) {
    await fs.rm(temp, { force: true });
    throw err;
  }
  await fsyncDir(dir);
}

/** Removes temp files a crashed writer left beside `target`; returns how many it removed. */
export async function cleanAtomicTempFiles(target: string): Promise<number> {
  const dir = path.dirname(target);
  let removed = 0;
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return 0;
  }
  for (const n of names) {
    if (isAtomicTempFile(target, n)) {
      await fs.rm(path.join(dir, n), { force: true });
      removed++;
    }
  }
  return removed;
}

async function fsyncDir(dir: string): Promise<void> {
  // Makes the rename itself durable. Some filesystems refuse fsync on a directory: that is not an error here.
  let dh: fs.FileHandle | undefined;
  try {
    dh = await fs.open(dir, fsc.O_RDONLY);
    await dh.sync();
  } catch {
    /* best effort */
  } finally {
    await dh?.close().catch(() => undefined);
  }
}
