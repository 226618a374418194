// The load hooks of bench/weriftAsShipped.mjs: werift/lib/index.mjs with the chosen patches' `to` put back to
// their `from`. A name that selects no patch, or a patch that is not installed, fails the load: the anchor must be
// what it says.
import { PATCHES } from '../scripts/patch-dependencies.mjs';

let chosen = [];

export function initialize({ undo }) {
  chosen = PATCHES.filter((p) => p.file === 'node_modules/werift/lib/index.mjs' && undo && p.to.includes(undo));
  if (chosen.length === 0) throw new Error(`weriftAsShipped: BENCH_UNDO_PATCH=${JSON.stringify(undo)} names no werift patch`);
}

function undone(url, result) {
  if (!url.endsWith('/node_modules/werift/lib/index.mjs')) return result;
  let source = String(result.source);
  for (const p of chosen) {
    if (!source.includes(p.to)) throw new Error('weriftAsShipped: a patch to undo is not installed');
    source = source.replace(p.to, p.from);
  }
  return { ...result, source };
}

/** module.register()'s hook (Node 20): runs on the loader thread, asynchronous */
export async function load(url, context, nextLoad) {
  return undone(url, await nextLoad(url, context));
}

/** module.registerHooks()'s hook (Node 22.15+): runs in the thread that imports, synchronous */
export function loadSync(url, context, nextLoad) {
  return undone(url, nextLoad(url, context));
}
