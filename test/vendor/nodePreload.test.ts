// vendor/speaker-sys's node_preload.so, the library the systemd units preload into node (src/node_preload.c):
// real node processes started with and without it, their anonymous memory read from /proc.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import koffi from 'koffi';
import { describe, expect, it } from 'vitest';

const { nodePreloadPath } = createRequire(import.meta.url)('speaker-sys') as typeof import('speaker-sys');
const major = Number(process.versions.node.split('.')[0]);

/** Anonymous memory (KB) of a fresh node right after start, with or without the preload (the units' malloc arenas). */
function anonymousKb(preload: boolean): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(/Anonymous:\\s+(\\d+)/.exec(require("fs").readFileSync("/proc/self/smaps_rollup", "utf8"))[1])'], {
    env: { ...process.env, MALLOC_ARENA_MAX: '2', LD_PRELOAD: preload ? nodePreloadPath : '' },
    encoding: 'utf8',
  });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return Number(r.stdout);
}

describe('node_preload.so', () => {
  it('is built beside the addons', () => {
    expect(existsSync(nodePreloadPath)).toBe(true);
  });

  // Node 24+ take V8's locks through abseil with its debug deadlock detection on; node turns it off only after its
  // first lock has built the 1 MB lock-order graph (nodejs/node#57582 comes too late). Before Node 24: no abseil.
  it(`in this node (${process.version}) its constructor finds abseil's switch from Node 22 on`, () => {
    // loaded here as ld.so would preload it: the constructor runs and records whether it found the symbol
    const lib = koffi.load(nodePreloadPath);
    expect(lib.func('int speaker_sys_node_preload_switched_off()')()).toBe(major >= 22 ? 1 : 0);
  });

  // Node 24+ take V8's locks through abseil with its debug deadlock detection on; node turns it off only after its
  // first lock has built the 1 MB lock-order graph (nodejs/node#57582 comes too late). Before Node 24: no graph.
  it(`regression: Node 24+ builds abseil's 1 MB deadlock graph before it turns detection off (this node: ${process.version})`, () => {
    // alternating pairs, the least of each side: start-up threads and arenas vary a little from run to run
    const without: number[] = [];
    const withIt: number[] = [];
    for (let i = 0; i < 5; i++) {
      without.push(anonymousKb(false));
      withIt.push(anonymousKb(true));
    }
    const saved = Math.min(...without) - Math.min(...withIt);
    if (major >= 24) {
      // 262,139 int32 = 1,024 KB, written at start; should node make its call before its first lock, this fails:
      // then the units' LD_PRELOAD is no longer needed on that Node
      expect(saved, 'the graph is built without the library and not with it').toBeGreaterThanOrEqual(768);
      expect(saved).toBeLessThan(1400); // and nothing else changes
    } else {
      expect(Math.abs(saved)).toBeLessThan(256); // nothing to avoid here: the same process
    }
  });

  it('does nothing in a program that is not node, and says nothing', () => {
    const r = spawnSync('sh', ['-c', 'echo $((6 * 7))'], { env: { ...process.env, LD_PRELOAD: nodePreloadPath }, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('42\n');
  });

  it('the check can fail: a missing library is an ld.so error on stderr', () => {
    const r = spawnSync(process.execPath, ['-e', ''], { env: { ...process.env, LD_PRELOAD: `${nodePreloadPath}.missing` }, encoding: 'utf8' });
    expect(r.stderr).toMatch(/cannot be preloaded/);
  });
});
