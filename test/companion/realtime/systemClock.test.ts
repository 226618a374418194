// Whether the machine's clock has been set from the network: systemd-timesyncd's runtime directory and flag as real
// files in a temporary directory; the kernel's reading through the real adjtimex(2) where it is checked as such,
// and given as a number where a state of the host's kernel is needed that this test cannot make (setting it needs
// CAP_SYS_TIME and changes the clock of the whole machine).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { kernelClockMaxError, systemWallClock } from '../../../src/companion/realtime/systemClock.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'systemclock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A timesyncd runtime directory (made fresh), with its "synchronized" flag or without. */
function timesyncd(name: string, synchronized: boolean): string {
  const d = path.join(dir, name);
  mkdirSync(d);
  if (synchronized) writeFileSync(path.join(d, 'synchronized'), '');
  return d;
}

const UNSET = async () => 16_000_000; // what the kernel reports until an NTP client sets the clock
const SET = async () => 12_500; // 12.5 ms: an NTP client disciplines the clock

describe('systemWallClock().isSet', () => {
  it('is false only while timesyncd runs without having synchronised and the kernel agrees', async () => {
    expect(await systemWallClock({ timesyncDir: timesyncd('booted', false), kernelMaxError: UNSET }).isSet()).toBe(false);
  });
  it("is true once timesyncd has synchronised (its flag), or another NTP client set the kernel's clock", async () => {
    expect(await systemWallClock({ timesyncDir: timesyncd('synced', true), kernelMaxError: UNSET }).isSet()).toBe(true);
    expect(await systemWallClock({ timesyncDir: timesyncd('chrony', false), kernelMaxError: SET }).isSet()).toBe(true);
  });
  it('takes a machine with no NTP client it knows of at its word (a container, a VM clocked by its host)', async () => {
    expect(await systemWallClock({ timesyncDir: path.join(dir, 'none'), kernelMaxError: UNSET }).isSet()).toBe(true);
    expect(await systemWallClock({ timesyncDir: timesyncd('unreadable', false), kernelMaxError: async () => undefined }).isSet()).toBe(true);
  });
});

describe('kernelClockMaxError (adjtimex through libc)', () => {
  it("reads the kernel's maximum error: a count of microseconds, at most the 16 s it reports while no NTP client set it", async () => {
    const us = await kernelClockMaxError();
    expect(Number.isInteger(us)).toBe(true);
    expect(us).toBeGreaterThanOrEqual(0);
    expect(us).toBeLessThanOrEqual(16_000_000);
    expect(await kernelClockMaxError()).toBeGreaterThanOrEqual(0); // a second reading: the binding is kept
  });
});
