// bin/environment-file.sh, which the installed `speaker-agent` command sources to load the unit's EnvironmentFile
// (/etc/speaker-agent/environment) as systemd does, so doctor and enroll see the service's overrides. Run by the
// shells a board has (dash is Debian's /bin/sh, bash), on a real file.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const LOADER = path.resolve(import.meta.dirname, '../../bin/environment-file.sh');
const dir = mkdtempSync(path.join(os.tmpdir(), 'envfile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NAMES = ['PLAIN', 'QUOTED', 'SINGLE', 'BLANKS', 'EMPTY', 'EQUALS', 'DOLLAR', 'TICKS', 'TWICE', 'GIVEN', 'NOEQ', 'SPACED', 'LAST'];

/** The variables NAMES after `load_environment_file FILE` in `shell`, with `given` already in the environment. */
function load(shell: string, file: string, given: Record<string, string> = {}, as: { uid?: number; gid?: number } = {}): Record<string, string | undefined> {
  const script = `. '${LOADER}' && load_environment_file "$1" && node -e 'console.log(JSON.stringify(Object.fromEntries(${JSON.stringify(NAMES)}.map((k) => [k, process.env[k]]))))'`;
  const env: NodeJS.ProcessEnv = { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, ...given };
  // stdin not a socket (node's pipes are): bash reads ~/.bashrc when it thinks rshd started it
  const r = spawnSync(shell, ['-c', script, 'sh', file], { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'], cwd: '/', ...as });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as Record<string, string | undefined>;
}

describe('bin/environment-file.sh', () => {
  const file = path.join(dir, 'environment');
  writeFileSync(
    file,
    [
      '# a comment',
      '  ; another (systemd takes both)',
      '',
      'PLAIN=/etc/ssl/private-ca.crt',
      'QUOTED="hw:CARD=Device,DEV=0"',
      "SINGLE='--jitless --max-old-space-size=40'",
      '  BLANKS =  around the = too',
      'SPACED=   around   ',
      'EMPTY=',
      'EQUALS=a=b=c',
      'DOLLAR=$(touch ' + path.join(dir, 'ran') + ')',
      'TICKS=`touch ' + path.join(dir, 'ran') + '`',
      'TWICE=first',
      'TWICE=second, as `echo KEY=new >> environment` makes it',
      'GIVEN=from the file',
      'GIVEN=from the file again',
      '9BAD=x',
      'TWO WORDS=x',
      'NOEQ',
      'LAST=no newline at the end',
    ].join('\n'),
  );

  for (const shell of ['dash', 'bash']) {
    it(`reads KEY=VALUE as systemd does, never as shell code (${shell}); a variable already set wins`, () => {
      const seen = load(shell, file, { GIVEN: 'from the command line' });
      expect(seen).toEqual({
        PLAIN: '/etc/ssl/private-ca.crt',
        QUOTED: 'hw:CARD=Device,DEV=0',
        SINGLE: '--jitless --max-old-space-size=40',
        BLANKS: 'around the = too',
        SPACED: 'around',
        EMPTY: '',
        EQUALS: 'a=b=c',
        DOLLAR: '$(touch ' + path.join(dir, 'ran') + ')',
        TICKS: '`touch ' + path.join(dir, 'ran') + '`',
        TWICE: 'second, as `echo KEY=new >> environment` makes it',
        GIVEN: 'from the command line',
        NOEQ: undefined,
        LAST: 'no newline at the end',
      });
      expect(spawnSync('test', ['-e', path.join(dir, 'ran')]).status).toBe(1); // nothing was run
    });
  }

  it('a missing file, or one this user may not read (no sudo), loads nothing and is no error', () => {
    expect(load('dash', path.join(dir, 'none'))).toEqual(Object.fromEntries(NAMES.map((k) => [k, undefined])));
    // root reads a file of mode 000 all the same: as root (CI), the reader is nobody
    const closed = path.join(os.tmpdir(), `envfile-closed-${process.pid}`);
    writeFileSync(closed, 'PLAIN=x\n');
    chmodSync(closed, 0o000);
    try {
      expect(load('dash', closed, {}, process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}).PLAIN).toBeUndefined();
    } finally {
      rmSync(closed, { force: true });
    }
  });
});
