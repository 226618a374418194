// Mounts for the tests of where state lives (stateStorage.test.ts, doctor.test.ts): whether this process may
// mount (root with CAP_SYS_ADMIN, as CI and the developers' machines run the suite; a root container may not), and a
// directory on storage that lasts (this machine's /tmp may be a tmpfs, and a checkout may be cloned into it).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** Whether a tmpfs can be mounted here (tried once, under a temporary directory). */
export const canMount: boolean = (() => {
  if (process.getuid?.() !== 0) return false;
  const probe = mkdtempSync(path.join(os.tmpdir(), 'mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', probe], { stdio: 'pipe' });
    execFileSync('umount', [probe]);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
})();

/** A directory on a disk (not a tmpfs, ramfs or overlay), by findmnt: the checkout's, /var/tmp, /var/lib or home. */
export function lastingDir(): string | undefined {
  for (const dir of [ROOT, '/var/tmp', '/var/lib', os.homedir()]) {
    try {
      const fs = execFileSync('findmnt', ['-n', '-o', 'FSTYPE', '-T', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      if (fs && !['tmpfs', 'ramfs', 'overlay'].includes(fs)) return dir;
    } catch {
      /* no such directory, or no findmnt */
    }
  }
  return undefined;
}
