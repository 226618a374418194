// A bare agent process for the benchmark and process-level tests: settings from config + SPEAKER_AGENT_*
// variables, identity from the state dir (created if missing), the real audio backend and mixer, JSON log lines
// on stdout. The CLI (`speaker-agent run`) is the product's entry point; this keeps the measurement free of it.
import { smallBufferPool } from '../../src/common/bufferPool.js';

smallBufferPool(); // first, as src/cli/main.ts does: before the agent's modules make their Buffers
await import('./agentProcessRun.js');
