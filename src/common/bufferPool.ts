// Buffer's pool back to Node 20's size. Called first by the entry points (src/cli/main.ts; the benches' agent and
// floor), before the modules that make Buffers at load time (werift's constants, the settings, the keys) load.
//
// Why: every small Buffer (a packet, a header, a key) is a slice of the current pool and keeps the whole pool alive
// as long as it lives, so a few long-lived slices pin whole pools. Node 26 raised the pool from 8 KiB to 64 KiB.
// Issue #18, heap snapshots of the agent in a call: six pools alive on both Nodes, 6 x 64 KiB on Node 26 against
// 6 x 8 KiB on Node 20; set when the memory keeper started (after the call's set-up), three 64 KiB pools of the
// start-up stayed pinned. A pool still serves Buffers up to half its size, the agent's packets among them, so the
// cost is one 8 KiB allocation every few dozen packets, as on Node 20. The setting is per thread: worker threads
// (wake word, recogniser, encoder) keep their Node's size; they make few Buffers.

/** Buffer's pool size on Node 20 (Node 26 made it 64 KiB). */
export const BUFFER_POOL_BYTES = 8 * 1024;

/** Sets Buffer.poolSize to BUFFER_POOL_BYTES where it is larger (a smaller one is left alone); returns it. Pools
 *  made from now on have that size; the current one is used up first. */
export function smallBufferPool(): number {
  if (Buffer.poolSize > BUFFER_POOL_BYTES) Buffer.poolSize = BUFFER_POOL_BYTES;
  return Buffer.poolSize;
}
