// Buffer's pool size (src/common/bufferPool.ts), in this process and in the CLI as it starts. Node 20 ships an
// 8 KiB pool, Node 26 a 64 KiB one: on Node 20 the Node 26 default is set by a preload (FakeNode26Pool) so both
// Nodes CI runs test the same thing.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUFFER_POOL_BYTES, smallBufferPool } from '../../src/common/bufferPool.js';
import { CLI } from '../support/cli.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'buffer-pool-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('smallBufferPool', () => {
  it("sets Buffer's pool back to Node 20's 8 KiB where a newer Node raised it; small Buffers still come from a pool", () => {
    const before = Buffer.poolSize;
    try {
      Buffer.poolSize = 64 * 1024; // as Node 26 ships it
      expect(smallBufferPool()).toBe(BUFFER_POOL_BYTES);
      expect(Buffer.poolSize).toBe(8 * 1024);
      // the current pool is used up first; the next is small, and a packet-sized Buffer is a slice of it
      let b = Buffer.allocUnsafe(100);
      for (let i = 0; i < 1000; i++) b = Buffer.allocUnsafe(100);
      expect(b.buffer.byteLength - (b.buffer.byteLength % 1024)).toBe(8 * 1024); // Node 26 adds 64 bytes to a pool
      expect(Buffer.allocUnsafe(5000).buffer.byteLength).toBe(5000); // over half a pool: a store of its own
      Buffer.poolSize = 4096; // a smaller pool, a maker's choice, is left alone
      expect(smallBufferPool()).toBe(4096);
    } finally {
      Buffer.poolSize = before;
    }
  });

  it('the CLI sets it first thing, from its entry, before the program loads (FakeNode26Pool)', () => {
    // The preload gives the process Node 26's pool and watches Buffer.poolSize: the first write's stack and the
    // value at exit.
    const preload = path.join(tmp, 'pool26.cjs');
    writeFileSync(
      preload,
      `let size = 64 * 1024, firstWrite;
Object.defineProperty(Buffer, 'poolSize', { configurable: true, enumerable: true, get: () => size, set: (v) => { firstWrite ??= new Error().stack; size = v; } });
process.on('exit', () => process.stderr.write('\\n' + JSON.stringify({ size, firstWrite }) + '\\n'));
`,
    );
    const r = spawnSync(process.execPath, ['--require', preload, CLI, '--version'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status, r.stderr).toBe(0);
    const line = r.stderr.split('\n').find((l) => l.startsWith('{"size"'));
    expect(line, r.stderr).toBeDefined();
    const seen = JSON.parse(line!) as { size: number; firstWrite?: string };
    expect(seen.size).toBe(BUFFER_POOL_BYTES);
    // written from the entry module's own top level (src/cli/main.ts, bundled as the CLI's entry), which imports
    // the program only after it: the stack has the entry and nothing of the program
    const frames = (seen.firstWrite ?? '').split('\n').slice(1);
    expect(frames.some((f) => f.includes(CLI)), seen.firstWrite).toBe(true);
    expect(frames.some((f) => /program/.test(f)), seen.firstWrite).toBe(false);
  });
});
