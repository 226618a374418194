// Entry point of `speaker-agent` (bin/speaker-agent.js imports this). Long-running commands (run, companion)
// resolve only when they shut down; then the process exits with the command's code, even if a native addon
// still holds the event loop open.
import { smallBufferPool } from '../common/bufferPool.js';
import { isolateNativeStdout } from './stdio.js';

smallBufferPool(); // first: the program's modules (and speaker-sys, below) make Buffers as they load
isolateNativeStdout();
const { main } = await import('./program.js');

process.exit(await main());
