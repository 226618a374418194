// bin/launch-node.sh, which both units and the installed `speaker-agent` command start node through: a real node,
// a real shell. Years of upgrades bring a Node at another path and a Node that drops a V8 flag; before, the unit
// ran node directly, and either one left a service that never started again (203/EXEC, or "bad option" exit 9
// every 2 s).
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { journaldAvailable, runUnderJournald } from '../support/journald.js';

const LAUNCH = path.resolve(import.meta.dirname, '../../bin/launch-node.sh');
const NODE = process.execPath;
const PATH_WITH_NODE = `${path.dirname(NODE)}:/usr/bin:/bin`;

function launch(args: string[], env: NodeJS.ProcessEnv = { ...process.env, PATH: PATH_WITH_NODE }) {
  return spawnSync(LAUNCH, args, { encoding: 'utf8', env });
}

const PRINT = 'console.log(JSON.stringify({ execArgv: process.execArgv, argv: process.argv.slice(1), execPath: process.execPath, pid: process.pid }))';

describe('bin/launch-node.sh', () => {
  it('execs node with the flags and the script\'s own arguments untouched: node keeps the PID systemd watches', async () => {
    const child = spawn(LAUNCH, [NODE, '--max-semi-space-size=1', '--no-sparkplug', '--', '-e', PRINT, 'a b', '*', '--'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(err).toBe('');
    expect(code).toBe(0);
    const seen = JSON.parse(out) as { execArgv: string[]; argv: string[]; execPath: string; pid: number };
    expect(seen.pid).toBe(child.pid); // exec, not a child: Type=notify's NotifyAccess=main and the watchdog see node
    expect(seen.execPath).toBe(NODE);
    expect(seen.execArgv.slice(0, 2)).toEqual(['--max-semi-space-size=1', '--no-sparkplug']);
    expect(seen.argv).toEqual(['a b', '*', '--']); // no splitting, no globbing, a later -- passed on
  });

  it('passes the script\'s exit status on (systemd\'s Restart= and the start-failure hold read it)', () => {
    const r = launch([NODE, '--', '-e', 'process.exit(7)']);
    expect(r.status).toBe(7);
  });

  it('regression: a Node that refuses one of the unit\'s flags starts without that one, saying so (was exit 9, "bad option", forever)', () => {
    const r = launch([NODE, '--max-semi-space-size=1', '--no-such-flag-in-any-v8', '--no-sparkplug', '--', '-e', PRINT]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).execArgv.slice(0, 2)).toEqual(['--max-semi-space-size=1', '--no-sparkplug']);
    expect(r.stderr).toContain(`${NODE} (${process.version}) refuses the option --no-such-flag-in-any-v8: starting without it`);
    expect(r.stderr.trim().split('\n')).toHaveLength(1); // the flags node accepts are not named
    // the check is real: node itself refuses the flag
    expect(spawnSync(NODE, ['--no-such-flag-in-any-v8', '-e', '0']).status).toBe(9);
  });

  it('regression: the Node pinned at install time gone, it runs on the PATH\'s node and says what to run (was 203/EXEC)', () => {
    const r = launch(['/nonexistent/bin/node', '--no-sparkplug', '--', '-e', PRINT]);
    expect(r.stderr).toContain('/nonexistent/bin/node, the Node this speaker was installed with, is gone');
    expect(r.stderr).toContain("sudo scripts/install.sh' again");
    expect(r.stderr).toContain(`running with ${NODE} meanwhile`);
    expect(r.status).toBe(0);
    const seen = JSON.parse(r.stdout) as { execArgv: string[]; execPath: string };
    expect(seen.execPath).toBe(NODE);
    expect(seen.execArgv[0]).toBe('--no-sparkplug');
  });

  it('no node at all: exit 127 and why', () => {
    const r = launch(['/nonexistent/bin/node', '--', '-e', '0'], { ...process.env, PATH: '/nonexistent' });
    expect(r.status).toBe(127);
    expect(r.stderr).toContain('and there is no node on the PATH (/nonexistent)');
  });

  it.runIf(journaldAvailable())('under a real journald its notices are stored as warnings (journalctl -p warning shows them), node\'s own output at info', async () => {
    const r = await runUnderJournald('speaker-agent', [LAUNCH, '/nonexistent/bin/node', '--no-such-flag-in-any-v8', '--', '-e', 'console.log("node ran")'], {
      ...process.env,
      PATH: PATH_WITH_NODE,
      JOURNAL_STREAM: undefined,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.entries.map((e) => e.PRIORITY)).toEqual(['4', '4', '4', '6']);
    expect(r.entries.map((e) => e.MESSAGE)).toEqual([
      expect.stringContaining('/nonexistent/bin/node, the Node this speaker was installed with, is gone'),
      `speaker-agent: running with ${NODE} meanwhile`,
      expect.stringContaining('refuses the option --no-such-flag-in-any-v8: starting without it'),
      'node ran',
    ]);
  });

  it('a command line without -- before the script is refused, not run as flags', () => {
    const r = launch([NODE, '--no-sparkplug']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no -- before the script');
  });
});
