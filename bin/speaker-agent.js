#!/usr/bin/env node
// Entry point of the `speaker-agent` command: runs the bundled CLI (npm run build -> dist/speaker-agent.js).
import('../dist/speaker-agent.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/speaker-agent.js')) {
    console.error('speaker-agent is not built: run `npm run build` in the project directory.');
    process.exit(78);
  }
  throw err;
});
