// The load hooks of bench/weriftAsShipped.mjs: werift/lib/index.mjs with the chosen patch's `to` put back to its
// `from`. A patch that is not found, or not installed, fails the load: the anchor must be what it says.
import { PATCHES } from '../scripts/patch-dependencies.mjs';

let patch;

export function initialize({ undo }) {
  const found = PATCHES.filter((p) => p.file === 'node_modules/werift/lib/index.mjs' && undo && p.from.includes(undo));
  if (found.length !== 1) throw new Error(`weriftAsShipped: BENCH_UNDO_PATCH=${JSON.stringify(undo)} names ${found.length} werift patches, not one`);
  patch = found[0];
}

function undone(url, result) {
  if (!url.endsWith('/node_modules/werift/lib/index.mjs')) return result;
  const source = String(result.source);
  if (!source.includes(patch.to)) throw new Error('weriftAsShipped: the patch to undo is not installed');
  return { ...result, source: source.replace(patch.to, patch.from) };
}

/** module.register()'s hook (Node 20): runs on the loader thread, asynchronous */
export async function load(url, context, nextLoad) {
  return undone(url, await nextLoad(url, context));
}

/** module.registerHooks()'s hook (Node 22.15+): runs in the thread that imports, synchronous */
export function loadSync(url, context, nextLoad) {
  return undone(url, nextLoad(url, context));
}
