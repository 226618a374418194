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

/** A store in a fresh directory with two synthesis outputs stamped at these times (ms since the epoch). */
function storeWith(mtimesMs: [number, number]): { store: AudioStore; files: [string, string] } {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'audio-store-'));
  const store = new AudioStore(dataDir);
  const files = mtimesMs.map((ms) => {
    const f = store.absPath(store.newRelPath('tts', 'wav'));
    writeFileSync(f, 'x');
    utimesSync(f, ms / 1000, ms / 1000);
    return f;
  }) as [string, string];
  return { store, files };
}

describe('AudioStore.sweepTts', () => {
  it('removes outputs older than the limit and keeps the fresh ones', () => {
    const { store, files: [old, fresh] } = storeWith([Date.now() - 2 * 3_600_000, Date.now()]);
    expect(store.sweepTts(3_600_000)).toBe(1);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
  });

  it('regression (a clock review): an output stamped in the future (written while the wall clock ran months ahead) was kept until that date; it is swept', () => {
    // a minute ahead is within the limit: a clock corrected by a little keeps it
    const { store, files: [ahead, slightlyAhead] } = storeWith([Date.now() + 90 * 86_400_000, Date.now() + 60_000]);
    expect(store.sweepTts(3_600_000)).toBe(1);
    expect(existsSync(ahead)).toBe(false);
    expect(existsSync(slightlyAhead)).toBe(true);
  });

  it('regression (a review): an output this process wrote just before the wall clock stepped back (its stamp now ahead) was swept while its URL was still being fetched; what it wrote within the limit stays', async () => {
    const { store } = storeWith([Date.now(), Date.now()]);
    const rel = store.newRelPath('tts', 'mp3');
    const temp = store.tempPath('.mp3');
    writeFileSync(temp, 'x');
    await store.commit(temp, rel);
    const inThreeMonths = (Date.now() + 90 * 86_400_000) / 1000; // its stamp, seen from the corrected clock
    utimesSync(store.absPath(rel), inThreeMonths, inThreeMonths);
    expect(store.sweepTts(3_600_000)).toBe(0);
    expect(existsSync(store.absPath(rel))).toBe(true);
  });
});
