// .ci/summary.mjs on a real vitest JSON report: CI's log is often read from its tail, so its last lines must name
// every failed test with its message (stop 28's Node 20 run failed one test, and the tail shown named none).
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repo = path.resolve(import.meta.dirname, '../..');

describe('.ci/summary.mjs', () => {
  it('prints the counts, then each failed test with its file, its name and its message, without the stack', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ci-summary-'));
    writeFileSync(
      path.join(dir, 'sample.test.mjs'),
      `import { expect, it } from 'vitest';
it('passes', () => expect(1).toBe(1));
it('fails with its reason', () => expect(0.65, 'heard 0.65; canceller: converged').toBeGreaterThanOrEqual(0.8));
it.skip('is skipped', () => undefined);
`,
    );
    const report = path.join(dir, 'report.json');
    // vitest itself writes the report, as in .ci/run (exit 1: a test failed)
    await run(process.execPath, [path.join(repo, 'node_modules/vitest/vitest.mjs'), 'run', '--root', dir, '--reporter=json', `--outputFile.json=${report}`], { cwd: dir }).catch((e: { code?: number }) => {
      if (e.code !== 1) throw e;
    });
    const { stdout } = await run(process.execPath, [path.join(repo, '.ci/summary.mjs'), report, 'Node vX'], { cwd: dir });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toBe('Node vX: 1 passed, 1 failed, 1 skipped');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^ {2}FAILED sample\.test\.mjs > fails with its reason: AssertionError: heard 0\.65; canceller: converged: expected 0\.65 to be greater than or equal to 0\.8$/);
    expect(lines[1]).not.toMatch(/ at /);
  }, 60_000);

  it('a missing or unreadable report is said in one line, not a crash', async () => {
    const { stdout } = await run(process.execPath, [path.join(repo, '.ci/summary.mjs'), '/nonexistent/report.json', 'Node vX']);
    expect(stdout.trim()).toMatch(/^Node vX: no test report \(ENOENT/);
  });
});
