// Why a sound card can be there and still closed to the service. systemd turns a unit's device policy
// (DevicePolicy=closed, DeviceAllow=char-alsa in speaker-agent.service) into rules when the unit starts, from the
// device classes /proc/devices lists at that moment. A unit started before the kernel's sound driver registered
// ALSA's class (udev still loading modules at boot, a USB card enumerating late) gets no rule for it, and every
// /dev/snd node stays refused to it (EPERM) until the unit starts again: the agent retried for ever, seeing "no
// devices" (check-systemd-vm.sh: the agent started at 20.9 s of boot, the card at 31 s; it opened only after a
// restart, 4 minutes later). The daemon asks this while a device is retrying and restarts itself (src/cli/daemon.ts).
import { closeSync, openSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** The first ALSA control node that exists but the kernel refuses with EPERM (a device policy, not the file's
 *  permissions: those give EACCES); undefined when there is none or every one opens. `open` is for tests. */
export function soundNodeRefused(dir = '/dev/snd', open: (file: string) => number = (f) => openSync(f, 'r')): string | undefined {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => /^controlC\d+$/.test(n));
  } catch {
    return undefined; // no /dev/snd: no card at all
  }
  for (const n of names.sort()) {
    const file = path.join(dir, n);
    try {
      closeSync(open(file));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EPERM') return file;
    }
  }
  return undefined;
}

/** Whether the node was made (or given its owner and mode by udev) after `sinceMs` (wall clock): the card came after
 *  the service started, so a restart gets it a rule. A node refused that was there before the service started is
 *  refused by the unit's configuration (an override without `DeviceAllow=char-alsa`): restarting would loop. */
export function appearedAfter(node: string, sinceMs: number): boolean {
  try {
    return statSync(node).ctimeMs > sinceMs;
  } catch {
    return false;
  }
}
