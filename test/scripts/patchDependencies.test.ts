// scripts/patch-dependencies.mjs: the installed tree carries every patch, and applying is checked and idempotent.
import { spawnSync } from 'node:child_process';
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

  // bench/weriftAsShipped.mjs: the anchor of a patch's benchmark (call-setup: SCTP's retransmission timer) is werift
  // with the patches it names undone, every other patch kept. test/vendor/weriftSctpRetransmission.test.ts runs werift under
  // it and sees the shipped timer.
  it('bench/weriftAsShipped.mjs undoes exactly the named patches as werift loads, and refuses a name that selects none', async () => {
    // @ts-expect-error plain JavaScript module, no type declarations
    const hooks = (await import('../../bench/weriftAsShippedHooks.mjs')) as {
      initialize(d: { undo: string }): void;
      load(url: string, ctx: object, next: (u: string, c: object) => Promise<{ source: string }>): Promise<{ source: string }>;
      loadSync(url: string, ctx: object, next: (u: string, c: object) => { source: string }): { source: string };
    };
    const file = path.join(ROOT, 'node_modules/werift/lib/index.mjs');
    const url = `file://${file}`;
    const next = async () => ({ format: 'module', source: readFileSync(file, 'utf8') });
    expect(() => hooks.initialize({ undo: '' })).toThrow(/names no werift patch/);
    expect(() => hooks.initialize({ undo: 'var SCTP_RTO_INITIAL = 3;' })).toThrow(/names no werift patch/); // the original, not the patched text
    const marker = 'speaker-agent patch: SCTP retransmission';
    hooks.initialize({ undo: marker });
    const { source } = await hooks.load(url, {}, next);
    const sctp = patches.filter((p) => p.to.includes(marker));
    expect(sctp.length).toBeGreaterThan(0);
    for (const p of sctp) {
      expect(source).toContain(p.from);
      expect(source).not.toContain(p.to);
    }
    for (const p of patches.filter((q) => !sctp.includes(q) && q.file === 'node_modules/werift/lib/index.mjs')) expect(source).toContain(p.to);
    expect(hooks.loadSync(url, {}, () => ({ source: readFileSync(file, 'utf8') })).source).toBe(source); // Node 22.15+'s in-thread hook
    const other = await hooks.load('file:///elsewhere.mjs', {}, async () => ({ source: 'x' }));
    expect(other.source).toBe('x');
    // and this Node takes the hook (module.registerHooks where it has it, else module.register): werift imports
    // under it with nothing on stderr (Node 26 warns that module.register is deprecated)
    const r = spawnSync(process.execPath, ['--import', path.join(ROOT, 'bench/weriftAsShipped.mjs'), '--input-type=module', '-e', "const w = await import('werift'); console.log(typeof w.RTCPeerConnection)"], {
      cwd: ROOT,
      env: { ...process.env, BENCH_UNDO_PATCH: marker },
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('function');
    const refused = spawnSync(process.execPath, ['--import', path.join(ROOT, 'bench/weriftAsShipped.mjs'), '-e', ''], { cwd: ROOT, env: { ...process.env, BENCH_UNDO_PATCH: '' }, encoding: 'utf8' });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/names no werift patch/);
  });
});
