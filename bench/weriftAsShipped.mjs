// `node --import ./bench/weriftAsShipped.mjs`: werift's ES module loads with some of its checked patches
// (scripts/patch-dependencies.mjs) undone in memory, those whose patched text contains BENCH_UNDO_PATCH, to
// measure them against werift as shipped in one run. Node 22.15 and later take in-thread hooks
// (module.registerHooks; Node 26 deprecates module.register); Node 20 takes register().
import module from 'node:module';
import { initialize, loadSync } from './weriftAsShippedHooks.mjs';

const data = { undo: process.env.BENCH_UNDO_PATCH ?? '' };
if (typeof module.registerHooks === 'function') {
  initialize(data);
  module.registerHooks({ load: loadSync });
} else {
  module.register('./weriftAsShippedHooks.mjs', import.meta.url, { data });
}
