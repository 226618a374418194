// AudioStore's sweep of synthesis outputs, on real files in a temp directory (mtimes set with utimes).
import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AudioStore } from '../../../src/companion/storage/audioStore.js';

let dataDir: string | undefined;
afterEach(() => {
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

describe('AudioStore.sweepTts', () => {
  it('removes outputs older than the limit and keeps the fresh ones', () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'audio-store-'));
    const store = new AudioStore(dataDir);
    const old = store.absPath(store.newRelPath('tts', 'mp3'));
    const fresh = store.absPath(store.newRelPath('tts', 'mp3'));
    writeFileSync(old, 'x');
    writeFileSync(fresh, 'x');
    const twoHoursAgo = (Date.now() - 2 * 3_600_000) / 1000;
    utimesSync(old, twoHoursAgo, twoHoursAgo);
    expect(store.sweepTts(3_600_000)).toBe(1);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
  });

  it('regression (a clock review): an output stamped in the future (written while the wall clock ran months ahead) was kept until that date; it is swept', () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'audio-store-'));
    const store = new AudioStore(dataDir);
    const ahead = store.absPath(store.newRelPath('tts', 'wav'));
    const slightlyAhead = store.absPath(store.newRelPath('tts', 'wav'));
    writeFileSync(ahead, 'x');
    writeFileSync(slightlyAhead, 'x');
    const inThreeMonths = (Date.now() + 90 * 86_400_000) / 1000;
    const inAMinute = (Date.now() + 60_000) / 1000; // within the limit: a clock corrected by a little keeps it
    utimesSync(ahead, inThreeMonths, inThreeMonths);
    utimesSync(slightlyAhead, inAMinute, inAMinute);
    expect(store.sweepTts(3_600_000)).toBe(1);
    expect(existsSync(ahead)).toBe(false);
    expect(existsSync(slightlyAhead)).toBe(true);
  });
});
