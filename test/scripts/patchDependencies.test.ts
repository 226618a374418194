// scripts/patch-dependencies.mjs: the installed tree carries every patch, and applying is checked and idempotent.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript script, no type declarations
import { PATCHES, applyPatches } from '../../scripts/patch-dependencies.mjs';

interface Patch { file: string; why: string; from: string; to: string }
const patches = PATCHES as Patch[];
const ROOT = path.resolve(import.meta.dirname, '../..');
const tmp = mkdtempSync(path.join(ROOT, '.test-runtime', 'patch-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A copy of each patched file as the package ships it (the patch undone), under `base`. */
function unpatchedTree(base: string): void {
  const texts = new Map<string, string>(); // several patches may change one file: undo them all
  for (const p of patches) texts.set(p.file, (texts.get(p.file) ?? readFileSync(path.join(ROOT, p.file), 'utf8')).replace(p.to, p.from));
  for (const [file, text] of texts) {
    mkdirSync(path.dirname(path.join(base, file)), { recursive: true });
    writeFileSync(path.join(base, file), text);
  }
}

describe('patch-dependencies', () => {
  it('every patch is applied in the installed node_modules (npm ci runs it), and none of the original code is left', () => {
    expect(patches.length).toBeGreaterThan(0);
    for (const p of patches) {
      const text = readFileSync(path.join(ROOT, p.file), 'utf8');
      expect(text, p.file).toContain(p.to);
      expect(text, p.file).not.toContain(p.from);
    }
  });

  it('patches a pristine copy once; a second run changes nothing', () => {
    const base = path.join(tmp, 'pristine');
    unpatchedTree(base);
    expect(applyPatches(base).map((r: { state: string }) => r.state)).toEqual(patches.map(() => 'patched'));
    const after = patches.map((p) => readFileSync(path.join(base, p.file), 'utf8'));
    expect(applyPatches(base).map((r: { state: string }) => r.state)).toEqual(patches.map(() => 'already patched'));
    expect(patches.map((p) => readFileSync(path.join(base, p.file), 'utf8'))).toEqual(after);
  });

  it('fails loudly when a dependency changed and the original code is not there, or the file is gone', () => {
    const base = path.join(tmp, 'changed');
    unpatchedTree(base);
    writeFileSync(path.join(base, patches[0].file), '// a newer version of this file\n');
    expect(() => applyPatches(base)).toThrow(/does not contain the expected code/);
    rmSync(path.join(base, patches[0].file));
    expect(() => applyPatches(base)).toThrow(/ENOENT/);
  });
});
