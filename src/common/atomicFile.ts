// Crash-safe file replacement: write a temp file in the same directory, fsync it, rename it over the target,
// fsync the directory. After a crash or power loss the target is either the old or the new content, never
// empty or half written. Temp files left by a crash are named `.<name>.tmp-<pid>-<rand>` and ignored/cleaned.
//
// Written by root into a directory that belongs to someone else (`sudo speaker-agent enroll` or `mic off` on an
// installed speaker, whose config and state directories are the service's), a file takes the directory's owner
// and group (ownerOfDirectory): written as root:root 0600, the service could no longer read its own identity or
// config and stopped at every start.
import { randomBytes } from 'node:crypto';
import { promises as fs, constants as fsc, closeSync, fchmodSync, fchownSync, fstatSync, openSync, readdirSync, statSync } from 'node:fs';
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
    const owner = ownerOfDirectory(dir);
    // best effort: where root may not chown (NFS root_squash, a user namespace) the file is written as before
    if (owner) await fh.chown(owner.uid, owner.gid).catch(() => undefined);
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

/** Running as root, the owner and group of `dir` when they are not root's (the file written there should take
 *  them); otherwise undefined. */
export function ownerOfDirectory(dir: string): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const st = statSync(dir);
  return st.uid === 0 && st.gid === 0 ? undefined : { uid: st.uid, gid: st.gid };
}

/** For a file written as root by a library that writes its own way (conf), or copied: gives it its directory's
 *  owner and group; with `groupRead`, also group read when the directory lets its group in (/etc/speaker-agent:
 *  root, the service's group, 0750 -> config.json root:speaker-agent 0640, as install.sh makes it). Does nothing
 *  when not root; best effort (a chown root may not make leaves the file as it was). */
export function adoptDirectoryOwner(file: string, o: { groupRead?: boolean } = {}): void {
  const dir = path.dirname(file);
  const owner = ownerOfDirectory(dir);
  if (!owner) return;
  // Through a descriptor opened without following a link: in a directory the service user owns, it could put a
  // link to /etc/shadow where the file was, and a chown by path would hand that over.
  let fd: number;
  try {
    fd = openSync(file, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
  } catch {
    return; // gone, or a link: as it was
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.nlink > 1) return; // a hard link may be a file elsewhere
    fchownSync(fd, owner.uid, owner.gid);
    if (o.groupRead && (statSync(dir).mode & 0o050) === 0o050) fchmodSync(fd, 0o640);
  } catch {
    /* as it was */
  } finally {
    closeSync(fd);
  }
}

/** For files written as root by code that writes its own way (SQLite, the companion's stores): every entry below
 *  `dir` that root owns takes `dir`'s owner and group. Does nothing when not root or when `dir` is root's; best
 *  effort. Returns how many entries it changed.
 *  Walked through pinned file descriptors (each entry opened relative to its directory's open descriptor, through
 *  /proc/self/fd, never following a symbolic link), never by path: the directory belongs to the service user,
 *  who could swap a subdirectory for a link to /etc between a check and a chown by path, and root would hand it
 *  a file outside (a review reproduced that with the first, path-based walk). Links, sockets and FIFOs are left
 *  as they are. */
export function adoptDirectoryOwnerTree(dir: string): number {
  let top: number;
  try {
    top = openSync(dir, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  } catch {
    return 0; // no such directory (or a link in its place)
  }
  let changed = 0;
  try {
    const st = fstatSync(top);
    if (process.getuid?.() !== 0 || (st.uid === 0 && st.gid === 0)) return 0;
    const to = { uid: st.uid, gid: st.gid };
    const walk = (dfd: number, depth: number): void => {
      if (depth > 32) return;
      let names: string[];
      try {
        names = readdirSync(`/proc/self/fd/${dfd}`);
      } catch {
        return;
      }
      for (const n of names) {
        let fd: number;
        try {
          fd = openSync(`/proc/self/fd/${dfd}/${n}`, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK | fsc.O_NOCTTY);
        } catch {
          continue; // a symbolic link (ELOOP), a socket, gone meanwhile: as it was
        }
        try {
          const e = fstatSync(fd);
          // a FIFO, or a hard link to a file elsewhere (where fs.protected_hardlinks is off): as it was
          if (e.isFIFO() || (!e.isDirectory() && e.nlink > 1)) continue;
          if (e.uid === 0) {
            fchownSync(fd, to.uid, to.gid);
            changed++;
          }
          if (e.isDirectory()) walk(fd, depth + 1);
        } catch {
          /* not ours to change: as it was */
        } finally {
          closeSync(fd);
        }
      }
    };
    walk(top, 0);
  } finally {
    closeSync(top);
  }
  return changed;
}
