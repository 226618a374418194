// The assistant's clock follows the machine's time zone when it changes while the companion runs (raspi-config on
// a new speaker). Real symlinks in a temp directory stand in for /etc/localtime, which this test may not change.
import { mkdtempSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { followSystemTimeZone } from '../../../src/companion/realtime/systemTimeZone.js';

const tzBefore = process.env.TZ;
const dir = mkdtempSync(path.join(os.tmpdir(), 'localtime-'));
afterAll(() => {
  if (tzBefore === undefined) delete process.env.TZ;
  else process.env.TZ = tzBefore;
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(tzBefore !== undefined)('followSystemTimeZone', () => {
  it('regression (a review of years in a kitchen): a zone set after start was not seen until a restart; the next reading follows it', () => {
    const link = path.join(dir, 'localtime');
    const noonUtc = Date.UTC(2026, 0, 15, 12, 0);
    symlinkSync('/usr/share/zoneinfo/Asia/Tokyo', link);
    followSystemTimeZone(link);
    expect(new Date(noonUtc).getHours()).toBe(21); // UTC+9
    unlinkSync(link);
    symlinkSync('/usr/share/zoneinfo/America/New_York', link); // raspi-config, later
    followSystemTimeZone(link);
    expect(new Date(noonUtc).getHours()).toBe(7); // UTC-5 in January
  });

  it('a localtime that is not a link (a copied file) or missing changes nothing', () => {
    const before = new Date(Date.UTC(2026, 0, 15, 12, 0)).getHours();
    followSystemTimeZone(path.join(dir, 'missing'));
    expect(new Date(Date.UTC(2026, 0, 15, 12, 0)).getHours()).toBe(before);
  });
});
