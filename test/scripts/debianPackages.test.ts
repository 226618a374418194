// scripts/debian-packages.sh (sourced by setup.sh and install.sh): which package specs are unmet, and which
// name of "a|b" is installed. dpkg-query and apt-cache are stubbed on PATH (FakeDpkgQuery, FakeAptCache)
// with the answers a Debian 12 and a Debian 13 machine give; the shell functions are the real ones.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const LIB = path.resolve(import.meta.dirname, '../../scripts/debian-packages.sh');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sa-debpkgs-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Machine {
  installed: string[];
  /** apt-cache policy's Candidate per name; a name not listed is unknown to apt (no output at all) */
  candidates: Record<string, string>;
}

/** Runs `fn args...` with the library sourced, on a machine that answers as `m` does. */
async function call(m: Machine, fn: string, ...args: string[]): Promise<string[]> {
  const dir = mkdtempSync(path.join(tmp, 'm-'));
  const stub = (name: string, body: string) => {
    writeFileSync(path.join(dir, name), `#!/usr/bin/env bash\n${body}\n`);
    chmodSync(path.join(dir, name), 0o755);
  };
  // FakeDpkgQuery: `dpkg-query -W -f=... NAME`, as dpkg answers for an installed package, or fails
  stub('dpkg-query', `case " ${m.installed.join(' ')} " in *" \${@: -1} "*) printf 'install ok installed' ;; *) exit 1 ;; esac`);
  // FakeAptCache: `apt-cache policy NAME` in apt's layout
  const cases = Object.entries(m.candidates).map(([n, c]) => `  ${n}) printf '%s:\\n  Installed: (none)\\n  Candidate: %s\\n' ${n} '${c}' ;;`);
  stub('apt-cache', `[ "$1" = policy ] || exit 100\ncase "$2" in\n${cases.join('\n')}\n  *) ;;\nesac`);
  const { stdout } = await run('bash', ['-c', `set -euo pipefail; . "${LIB}"; ${fn} "$@"`, 'test', ...args], {
    env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
  });
  return stdout.split('\n').filter(Boolean);
}

const bookworm: Machine = {
  installed: ['libasound2', 'make'],
  candidates: { chromium: '120.0.6099.224-1~deb12u1', 'chromium-browser': '(none)', libasound2: '1.2.8-1+b1', sox: '14.4.2+git20190427-3.1' },
};
// Debian 13: libasound2 is only provided by libasound2t64 (apt has no candidate for the virtual name)
const trixie: Machine = {
  installed: ['libasound2t64', 'make'],
  candidates: { chromium: '156.0.8078.79-1~deb13u1', libasound2: '(none)', libasound2t64: '1.2.14-1+deb13u1', sox: '14.4.2+git20190427-5+b3' },
};
// A derivative that names the browser differently
const derivative: Machine = { installed: [], candidates: { 'chromium-browser': '1:120.0-1', sox: '14.4.2' } };

describe('deb_unmet', () => {
  it('lists the specs none of whose names is installed, in order', async () => {
    expect(await call(bookworm, 'deb_unmet', 'make', 'libasound2t64|libasound2', 'sox', 'chromium|chromium-browser')).toEqual([
      'sox',
      'chromium|chromium-browser',
    ]);
    expect(await call(trixie, 'deb_unmet', 'make', 'libasound2t64|libasound2', 'sox')).toEqual(['sox']);
  });

  it('is met by any installed alternative, not only the first', async () => {
    expect(await call(bookworm, 'deb_unmet', 'libasound2t64|libasound2')).toEqual([]);
  });
});

describe('deb_pick', () => {
  it('picks the first name apt can install, by release', async () => {
    expect(await call(bookworm, 'deb_pick', 'libasound2t64|libasound2', 'chromium|chromium-browser', 'sox')).toEqual(['libasound2', 'chromium', 'sox']);
    expect(await call(trixie, 'deb_pick', 'libasound2t64|libasound2', 'chromium|chromium-browser', 'sox')).toEqual(['libasound2t64', 'chromium', 'sox']);
    expect(await call(derivative, 'deb_pick', 'chromium|chromium-browser')).toEqual(['chromium-browser']);
  });

  it('skips a name apt knows only as a virtual package (Candidate: (none))', async () => {
    expect(await call(trixie, 'deb_pick', 'libasound2|libasound2t64')).toEqual(['libasound2t64']);
  });

  it('falls back to the first name when apt offers none, so apt-get reports that name', async () => {
    expect(await call(derivative, 'deb_pick', 'libpocketsphinx3|libpocketsphinx5', 'nosuchpkg')).toEqual(['libpocketsphinx3', 'nosuchpkg']);
  });
});

describe('setup.sh and install.sh', () => {
  it('both take their package list through the shared selection', () => {
    for (const f of ['setup.sh', 'install.sh']) {
      const s = readFileSync(path.resolve(import.meta.dirname, '../../scripts', f), 'utf8');
      expect(s, f).toMatch(/\. .*scripts\/debian-packages\.sh"?\n/);
      expect(s, f).toContain('deb_unmet "${PKGS[@]}"');
      expect(s, f).toContain('deb_pick "${unmet[@]}"');
      expect(s, f).not.toMatch(/dpkg-query -W/);
    }
  });
});
