// Whether the state directory survives a reboot, against real mounts: a tmpfs, and an overlay whose upper layer is
// on a tmpfs (the shape of raspi-config's overlay file system: a read-only root whose changes live in memory),
// made here under a temporary directory (needs root that may mount, as CI and the developers' machines run the
// suite; elsewhere the mount tests say they did not run), and a directory on a disk (test/support/mounts.ts).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { volatileStorage } from '../../src/agent/stateStorage.js';
import { canMount, lastingDir } from '../support/mounts.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'statestorage-'));
const mounted: string[] = [];
const mount = (...args: string[]) => execFileSync('mount', args, { stdio: 'pipe' });
const disk = lastingDir();
afterAll(() => {
  for (const m of mounted.reverse()) execFileSync('umount', ['-l', m]);
  rmSync(root, { recursive: true, force: true });
});

describe('volatileStorage', () => {
  it.runIf(disk)('a directory on a disk lasts (and one not made yet is judged by where it would be)', () => {
    expect(volatileStorage(disk!)).toBeUndefined();
    expect(volatileStorage(path.join(disk!, 'not', 'made', 'yet'))).toBeUndefined();
  });

  it.runIf(canMount)('a directory on a tmpfs does not last', () => {
    const tmp = path.join(root, 'tmpfs');
    mkdirSync(tmp);
    mount('-t', 'tmpfs', 'tmpfs', tmp);
    mounted.push(tmp);
    const state = path.join(tmp, 'var', 'lib', 'speaker-agent');
    expect(volatileStorage(state)).toBe(`${state} is on a tmpfs (memory) at ${tmp}`);
  });

  it.runIf(canMount)("regression: a read-only root whose changes live in memory (raspi-config's overlay file system) was not told from a disk: the identity was made anew at every boot", () => {
    const mem = path.join(root, 'root rw'); // overlayroot's /media/root-rw (a space: the kernel escapes it in mountinfo)
    const lower = path.join(root, 'lower'); // the SD card's root, read-only
    const merged = path.join(root, 'merged'); // what the system sees as /
    for (const d of [mem, lower, merged]) mkdirSync(d);
    mount('-t', 'tmpfs', 'tmpfs', mem);
    mounted.push(mem);
    mkdirSync(path.join(mem, 'upper'));
    mkdirSync(path.join(mem, 'work'));
    mkdirSync(path.join(lower, 'var', 'lib', 'speaker-agent'), { recursive: true });
    writeFileSync(path.join(lower, 'var', 'lib', 'speaker-agent', 'identity.json'), '{}');
    mount('-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${mem}/upper,workdir=${mem}/work`, merged);
    mounted.push(merged);
    const state = path.join(merged, 'var', 'lib', 'speaker-agent');
    expect(volatileStorage(state)).toBe(
      `${state} is on an overlay at ${merged} that keeps its changes in memory (its upper layer ${mem}/upper is on a tmpfs): a read-only root such as raspi-config's overlay file system`,
    );
    // an overlay whose changes go to a disk lasts
    if (!disk) return;
    const diskUpper = mkdtempSync(path.join(disk, '.overlay-upper-'));
    try {
      mkdirSync(path.join(diskUpper, 'u'));
      mkdirSync(path.join(diskUpper, 'w'));
      const merged2 = path.join(root, 'merged2');
      mkdirSync(merged2);
      mount('-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${diskUpper}/u,workdir=${diskUpper}/w`, merged2);
      try {
        expect(volatileStorage(path.join(merged2, 'var', 'lib', 'speaker-agent'))).toBeUndefined();
      } finally {
        execFileSync('umount', [merged2]);
      }
    } finally {
      rmSync(diskUpper, { recursive: true, force: true });
    }
  });

  it('cannot tell without /proc: says nothing', () => {
    expect(volatileStorage(root, path.join(root, 'no-mountinfo'))).toBeUndefined();
  });
});
