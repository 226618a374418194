// Entry point of `speaker-agent` (bin/speaker-agent.js imports this). Long-running commands (run, companion)
// resolve only when they shut down; then the process exits with the command's code, even if a native addon
// still holds the event loop open.
import { isolateNativeStdout } from './stdio.js';

isolateNativeStdout();
const { main } = await import('./program.js');

process.exit(await main());
