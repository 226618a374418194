// CI's closing lines for one Node: "Node vX: N passed, N failed, N skipped" from vitest's JSON report, then every
// failed test again with its message. A CI log is often read from its tail only, and the failure's own report
// (vitest's) sits in the middle of it when the first of the two Nodes failed.
// usage: node .ci/summary.mjs <vitest json report> <label>
import { readFileSync } from 'node:fs';

const [file, label] = process.argv.slice(2);
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (e) {
  console.log(`${label}: no test report (${e.message})`);
  process.exit(0);
}
const r = report;
console.log(`${label}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
for (const f of r.testResults ?? []) {
  for (const a of f.assertionResults ?? []) {
    if (a.status !== 'failed') continue;
    // the message without colours or its stack (the "at ..." lines); long ones (the echo tests' accounts) cut
    const msg = (a.failureMessages ?? []).join(' ').replace(/\x1b\[[0-9;]*m/g, '').split('\n    at ')[0];
    console.log(`  FAILED ${f.name.replace(`${process.cwd()}/`, '')} > ${a.fullName}: ${msg.slice(0, 3000)}`);
  }
  // a file that failed outside its tests (an import, a hook) has no failed test to name
  if (f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed')) {
    console.log(`  FAILED ${f.name.replace(`${process.cwd()}/`, '')}: ${String(f.message ?? '').split('\n')[0].slice(0, 3000)}`);
  }
}
