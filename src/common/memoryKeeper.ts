// Keeps a long-running process's memory flat: every `intervalMs` it looks at the JS heap and, once that has
// grown by `growthBytes` since the last full collection, asks V8 for one; on the next tick (the collection and
// the release of the freed Buffers' memory to malloc are done by then) it hands malloc's free memory back to the
// kernel (malloc_trim).
//
// Why: in a call the agent promotes short-lived objects (packets and their Buffers) into V8's old generation,
// which V8 collects only after it has grown by several MB; glibc then keeps the Buffers' freed memory in holes
// inside its arenas, returning only an arena's top by itself. Both showed as resident memory climbing through a
// 10-minute call (issue #5: no growth). The collection is V8's incremental one (speaker-sys memoryPressure():
// marking in steps, pauses of 9-16 ms measured on a busy 2-core machine; the sound card buffers 60 ms), about
// once a minute in a call.
//
// Once, when the process has run for `pageOutAfterMs` and `pageOutWhen()` says it is a quiet moment, it hands the
// resident pages of its read-only file mappings back to the kernel (speaker-sys pageOutFileMappings: madvise
// MADV_DONTNEED, then the page cache; not MADV_PAGEOUT, which does nothing to files the service's user cannot
// write): node's start-up code and V8's snapshot, ONNX Runtime's kernel registration, the libraries' init code,
// which never run again but stay resident (issues #15/#16/#18: ~30-40 MB of the agent's RSS). The code still in
// use faults back in within a second; that is why it waits for a quiet moment (no conversation). From Linux 6.7 it
// faults back one page at a time, not the 64 KB around each fault (userfaultfd write-protect registration turns the
// kernel's fault-around off for those mappings): issue #18, 41.7 -> 32.1 MB on Node 20, 54.8 -> 39.5 MB on Node 26.
import { createRequire } from 'node:module';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from './logger.js';
import { silentLogger } from './logger.js';

export interface MemoryKeeperOptions {
  /** how often the heap is looked at; default 10 s */
  intervalMs?: number;
  /** growth of the JS heap (used bytes) since the last full GC that triggers one; default 2 MB */
  growthBytes?: number;
  /** starts a full (mark-compact) GC, which may finish later; default: speaker-sys memoryPressure() (incremental),
   *  else gc() (atomic, see exposeGc()) */
  gc?: () => void;
  /** returns free malloc memory to the kernel; default: speaker-sys mallocTrim (glibc), else nothing */
  trim?: () => boolean;
  /** used bytes of the JS heap; default v8.getHeapStatistics().used_heap_size */
  heapUsed?: () => number;
  /** after this long (ms) the read-only file mappings are paged out once; 0 = never; default 0 */
  pageOutAfterMs?: number;
  /** whether now is a good moment for it (checked on each tick once pageOutAfterMs has passed); default always */
  pageOutWhen?: () => boolean;
  /** pages them out: bytes advised, or -errno; default speaker-sys pageOutFileMappings, else nothing */
  pageOut?: () => number;
  /** after the page-out, for the log: mappings that fault back page by page, or -errno why none (a kernel before
   *  6.7: EINVAL); default speaker-sys faultAroundOff */
  faultAroundOff?: () => number;
  /** V8's efficiency mode on for the process's life (efficiencyMode() below); default false */
  efficiencyMode?: boolean;
  logger?: Logger;
}

export interface MemoryKeeper {
  stop(): void;
  /** full GCs this keeper asked for */
  readonly collections: number;
  /** malloc_trim calls that returned memory */
  readonly trims: number;
  /** bytes of file mappings paged out (0 until it was done) */
  readonly pagedOutBytes: number;
}

export function startMemoryKeeper(o: MemoryKeeperOptions = {}): MemoryKeeper {
  const intervalMs = o.intervalMs ?? 10_000;
  const growth = o.growthBytes ?? 2 * 1024 * 1024;
  if (!(intervalMs > 0) || !(growth > 0)) throw new RangeError('memory keeper: intervalMs and growthBytes must be > 0');
  const gc = o.gc ?? defaultGc();
  const trim = o.trim ?? defaultTrim();
  const heapUsed = o.heapUsed ?? (() => v8.getHeapStatistics().used_heap_size);
  const log = o.logger ?? silentLogger;
  // bufferPool: what the entry point left it at (src/common/bufferPool.ts)
  if (o.efficiencyMode) log.info({ v8: process.versions.v8, efficiencyMode: efficiencyMode(), bufferPool: Buffer.poolSize }, 'memory keeper: V8 efficiency mode');
  let low = heapUsed(); // the heap's size after the last full GC, as near as we know it
  let collecting = false; // a collection was asked for on the previous tick
  let collections = 0;
  let trims = 0;
  const pageOutAfterMs = o.pageOutAfterMs ?? 0;
  const pageOut = o.pageOut ?? defaultPageOut();
  // an addon built before faultAroundOff lacks it (typed structurally for that reason)
  const faultAroundOff = o.faultAroundOff ?? (speakerSys() as { faultAroundOff?: () => number } | undefined)?.faultAroundOff;
  const startedAt = performance.now();
  let pagedOutBytes = pageOutAfterMs > 0 && pageOut ? 0 : -1; // -1: not to be done

  const maybePageOut = () => {
    if (pagedOutBytes !== 0 || performance.now() - startedAt < pageOutAfterMs || !(o.pageOutWhen?.() ?? true)) return;
    const rss0 = process.memoryUsage.rss();
    trim(); // what start-up freed inside malloc's arenas (ONNX Runtime's model loading: several MB) goes too
    const r = pageOut!();
    pagedOutBytes = r > 0 ? r : -1;
    if (r < 0) log.info({ errno: -r }, 'memory keeper: file mappings not paged out (/proc/self/smaps unreadable); skipped');
    else log.info({ mappedMb: Math.round(r / 1048576), singlePageMappings: faultAroundOff?.(), rssBeforeMb: +(rss0 / 1048576).toFixed(1), rssAfterMb: +(process.memoryUsage.rss() / 1048576).toFixed(1) }, 'memory keeper: start-up code paged out');
  };

  const tick = () => {
    maybePageOut();
    const used = heapUsed();
    if (collecting) {
      // Incremental marking finishes within a second or two; what it left is the new baseline.
      collecting = false;
      low = used;
      const released = trim();
      if (released) trims++;
      log.debug({ heapAfterMb: +(used / 1048576).toFixed(1), released }, 'memory keeper: collected');
      return;
    }
    if (used < low) low = used; // V8 collected by itself
    if (used - low < growth) return;
    gc();
    collections++;
    collecting = true;
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    stop: () => clearInterval(timer),
    get collections() {
      return collections;
    },
    get trims() {
      return trims;
    },
    get pagedOutBytes() {
      return Math.max(0, pagedOutBytes);
    },
  };
}

/**
 * Turns V8's efficiency mode on (V8 13 and later: Node 24+), unless node's command line turned it on or off. V8
 * made it for pages in the background: TurboFan starts at 3x the calls and fewer helper threads compile, so less
 * of V8's compilers runs, and less of its memory and of node's code stays resident. Issue #18, the agent in a call
 * on Node 26 with and without it, both at once (two rounds of 5 minutes): 35.9/36.6 against 39.5/40.8 MB, CPU
 * 3.73 against 3.88 % of a core, event-loop delay p99 6.0-6.1 ms either way. Not on Node 22 (V8 12, Maglev off by
 * default): 36.9 MB against Node 20's 32.3 with it, 36.1 against 32.0 without, CPU +6 %. Node 20's V8 has no such
 * mode (it would print "unrecognized flag"). V8 reads the flag at each decision, so setting it at run time (the
 * unit has one ExecStart for every Node) takes effect from then on.
 */
export function efficiencyMode(): 'on' | 'as node was started' | 'off on this V8' {
  if (Number(process.versions.v8.split('.')[0]) < 13) return 'off on this V8';
  if (process.execArgv.some((a) => /^--(no-)?efficiency-mode\b/.test(a))) return 'as node was started'; // the unit's choice stands
  v8.setFlagsFromString('--efficiency-mode');
  return 'on';
}

/**
 * V8's gc() as a function (a full, atomic collection): `globalThis.gc` when node runs with --expose-gc, else made
 * available the way jest's leak detector does it (the flag set at run time, read from a fresh context).
 */
export function exposeGc(): () => void {
  const global = (globalThis as { gc?: () => void }).gc;
  if (typeof global === 'function') return () => global();
  v8.setFlagsFromString('--expose-gc');
  const fn = runInNewContext('gc') as () => void;
  v8.setFlagsFromString('--no-expose-gc');
  return () => fn();
}

/** speaker-sys (vendor/speaker-sys), or undefined where the addon is not built: the keeper then falls back. */
function speakerSys(): typeof import('speaker-sys') | undefined {
  try {
    return createRequire(import.meta.url)('speaker-sys') as typeof import('speaker-sys');
  } catch {
    return undefined;
  }
}

function defaultGc(): () => void {
  const pressure = speakerSys()?.memoryPressure;
  return pressure ? () => pressure() : exposeGc(); // incremental; else the atomic gc()
}

function defaultPageOut(): (() => number) | undefined {
  const sys = speakerSys();
  return sys?.pageOutFileMappings ? () => sys.pageOutFileMappings() : undefined; // an addon built before it: none
}

/** Returns free malloc memory of every arena to the kernel now (glibc malloc_trim); false where it cannot. */
export function trimMalloc(): boolean {
  return speakerSys()?.mallocTrim() ?? false;
}

function defaultTrim(): () => boolean {
  const sys = speakerSys();
  return sys ? () => sys.mallocTrim() : () => false;
}
