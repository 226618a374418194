// `speaker-agent doctor`'s command line (src/cli/commands/doctor.ts): what its help promises. The checks themselves
// are test/cli/doctor.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBE_MS } from '../../../src/cli/echoCheck.js';
import { deviceDirs, runCli, type DeviceDirs } from '../../support/cli.js';

let dev: DeviceDirs;
beforeAll(() => {
  dev = deviceDirs();
});
afterAll(() => dev.remove());

describe('doctor --help', () => {
  it('regression: it said the echo probe is 1.5 s; it is 2.5 s and may be played twice', async () => {
    const r = await runCli(['doctor', '--help'], dev.env);
    expect(r.code).toBe(0);
    // commander wraps long descriptions: the option's text up to the next option, on one line
    const skipEcho = /--skip-echo\s+([^]*?)\n\s+-/.exec(r.stdout)?.[1].replace(/\s+/g, ' ');
    expect(skipEcho).toContain(`do not play the ${PROBE_MS / 1000} s noise probe`);
    expect(skipEcho).toMatch(/twice/);
  }, 60_000);
});
