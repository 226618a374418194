// Issue #18's anchor: a node process that runs nothing but the agent's memory keeper (efficiency mode, the one
// page-out of start-up code after a minute, malloc_trim) and its entry's Buffer pool size, and idles. Run beside the agents in
// node-versions.bench.ts on each Node, under the unit's flags and the service's environment, its RSS is that
// Node's floor: what any program pays for the runtime, before the agent's own code and data.
import { smallBufferPool } from '../src/common/bufferPool.js';

smallBufferPool(); // first, as the agent's entry (src/cli/main.ts) does
const { createLogger } = await import('../src/common/logger.js');
const { startMemoryKeeper } = await import('../src/common/memoryKeeper.js');

const logger = createLogger({ level: 'info', name: 'node-floor' });
startMemoryKeeper({ logger, efficiencyMode: true, pageOutAfterMs: 60_000 });
const alive = setInterval(() => undefined, 60_000); // the keeper's timer is unref'd
process.on('SIGTERM', () => {
  clearInterval(alive);
  process.exit(0);
});
