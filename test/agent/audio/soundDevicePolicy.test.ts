// soundNodeRefused on real directories. The refusal itself (a device cgroup that has no rule for ALSA's class)
// cannot be made here: systemd builds it when it starts a unit, and systemd is not PID 1 on this machine, so the
// EPERM comes from a stand-in opener, named as such. scripts/check-systemd-vm.sh shows the real one under systemd.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { appearedAfter, soundNodeRefused } from '../../../src/agent/audio/soundDevicePolicy.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function snd(...names: string[]): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'snd-'));
  dirs.push(d);
  for (const n of names) writeFileSync(path.join(d, n), '');
  return d;
}
const errno = (code: string) => Object.assign(new Error(code), { code });

describe('soundNodeRefused', () => {
  it('no /dev/snd, or no control node: nothing refused', () => {
    expect(soundNodeRefused('/nonexistent/snd')).toBeUndefined();
    expect(soundNodeRefused(snd('timer', 'seq'))).toBeUndefined();
  });

  it('control nodes that open: nothing refused (real files)', () => {
    expect(soundNodeRefused(snd('controlC0', 'pcmC0D0p', 'controlC1'))).toBeUndefined();
  });

  it('EPERM (a device policy, the stand-in opener) names the node; EACCES (not in the audio group) is not that', () => {
    const d = snd('controlC1', 'controlC0', 'pcmC0D0c');
    const refusing = (code: string) => (f: string) => {
      if (path.basename(f).startsWith('control')) throw errno(code);
      return 0;
    };
    expect(soundNodeRefused(d, refusing('EPERM'))).toBe(path.join(d, 'controlC0'));
    expect(soundNodeRefused(d, refusing('EACCES'))).toBeUndefined();
  });

  it('a node made after the service started asks for a restart; one there before it does not (a restart would loop)', () => {
    const d = snd('controlC0');
    const node = path.join(d, 'controlC0');
    expect(appearedAfter(node, Date.now() - 60_000)).toBe(true); // the service started a minute before the card
    expect(appearedAfter(node, Date.now() + 1_000)).toBe(false); // the card was there first
    expect(appearedAfter(path.join(d, 'controlC9'), 0)).toBe(false); // gone again
  });
});
