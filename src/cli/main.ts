// Entry point of `speaker-agent` (bin/speaker-agent.js imports this). Long-running commands (run, companion)
// resolve only when they shut down; then the process exits with the command's code, even if a native addon
// still holds the event loop open.
import { smallBufferPool } from '../common/bufferPool.js';
import { isolateNativeStdout } from './stdio.js';

smallBufferPool(); // first: the program's modules (and speaker-sys, below) make Buffers as they load
isolateNativeStdout();
const { main } = await import('./program.js');

const code = await main();
// A wake word thread given up while it started (a model read that never returns: wakeThread.ts) cannot be joined:
// node's exit would wait on it for ever. The doctor's wake check can leave one; then leave as the daemon does.
const { wakeStartsLeftBehind } = await import('../agent/wake/wakeThread.js');
if (wakeStartsLeftBehind() > 0) await (await import('../common/exitNow.js')).exitNow(code);
process.exit(code);
