// Whether the agent's state directory survives a reboot. The identity (the secret enrolled by trust on first
// use), the privacy mute and the local companion's store live there; on a read-only root whose changes are kept
// in memory (raspi-config's "Overlay File System", overlayroot: an overlay whose upper layer is a tmpfs), or on a
// tmpfs, all of it is gone at the next boot: the speaker makes a new identity and enrolls as a new device each
// time, and a microphone muted for privacy comes back on. Nothing here refuses to run (a kiosk may want exactly
// that); `doctor` warns and the daemon says so once at start.
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';

const MEMORY_FILESYSTEMS = new Set(['tmpfs', 'ramfs']);

interface Mount {
  mountPoint: string;
  fsType: string;
  superOptions: string;
}

/** /proc/self/mountinfo's lines (proc(5)): the mount point is field 5, the type and options follow the " - ". */
/** The kernel's octal escapes (space, tab, newline, backslash; a comma in an option) undone. */
const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const [head, tail] = line.split(' - ');
    if (!tail) continue;
    const fields = head.split(' ');
    const [fsType, , superOptions = ''] = tail.split(' ');
    if (fields.length >= 5 && fsType) mounts.push({ mountPoint: unescape(fields[4]), fsType, superOptions });
  }
  return mounts;
}

/** The mount `file` is on: the longest mount point above it, the last mounted where two are the same. */
function mountOf(mounts: Mount[], file: string): Mount | undefined {
  let best: Mount | undefined;
  for (const m of mounts) {
    const inside = file === m.mountPoint || file.startsWith(m.mountPoint.endsWith('/') ? m.mountPoint : `${m.mountPoint}/`);
    if (inside && (!best || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  return best;
}

/** The directory, or its nearest ancestor that exists, with links resolved (the state directory may not exist yet). */
function existingReal(dir: string): string {
  let d = path.resolve(dir);
  for (;;) {
    try {
      return realpathSync(d);
    } catch {
      const up = path.dirname(d);
      if (up === d) return d;
      d = up;
    }
  }
}

/**
 * Why `dir` would not survive a reboot (in words), or undefined when it is on lasting storage or that cannot be
 * told. `mountinfo` is the file to read (the process's own by default).
 */
export function volatileStorage(dir: string, mountinfo = '/proc/self/mountinfo'): string | undefined {
  let mounts: Mount[];
  try {
    mounts = parseMountinfo(readFileSync(mountinfo, 'utf8'));
  } catch {
    return undefined; // not Linux, or no /proc: cannot tell
  }
  const m = mountOf(mounts, existingReal(dir));
  if (!m) return undefined;
  if (MEMORY_FILESYSTEMS.has(m.fsType)) return `${dir} is on a ${m.fsType} (memory) at ${m.mountPoint}`;
  if (m.fsType === 'overlay') {
    const escaped = /(?:^|,)upperdir=([^,]+)/.exec(m.superOptions)?.[1];
    const upper = escaped === undefined ? undefined : unescape(escaped);
    // the upper layer's own mount, when this mount namespace shows it (an initramfs may leave it out of view: then
    // the overlay itself is found, and nothing can be told; a container's upper on the host's disk, the same)
    const under = upper ? mountOf(mounts, upper) : undefined;
    if (under && under !== m && MEMORY_FILESYSTEMS.has(under.fsType)) {
      return `${dir} is on an overlay at ${m.mountPoint} that keeps its changes in memory (its upper layer ${upper} is on a ${under.fsType}): a read-only root such as raspi-config's overlay file system`;
    }
  }
  return undefined;
}

/** What to do about it, for `doctor` and the daemon's warning. */
export const VOLATILE_STATE_FIX =
  "keep the state directory on storage that survives a reboot: turn the overlay file system off (raspi-config: Performance Options), or mount a writable partition there (paths.stateDir, SPEAKER_AGENT_STATE_DIR; the unit keeps it in /var/lib/speaker-agent)";
