// scripts/install.sh in a throwaway, container-less fake root (DESTDIR), run twice: the second run changes
// no file (the whole tree is hashed: paths, modes, contents, link targets) and makes no changing call.
// What cannot exist here is stubbed on PATH, each named Fake* and logging its calls:
//   FakeSystemctl (no systemd as PID 1 in a test; FAKE_SYSTEMD_STATE=offline answers as in a chroot), FakeAptGet + FakeDpkgQuery (no package installs on the
//   test machine; the fake dpkg database starts empty so the first run must install), FakeGetent + FakeUseradd
//   + FakeUsermod + FakeChown (the service user exists only in the fake root's /etc/passwd), FakeId (the
//   script requires root), FakeNpm (`npm ci` would download and compile native addons for minutes: it links
//   the checkout's already-built packages instead; onnxruntime-node is copied, as install.sh prunes it; `npm
//   rebuild` is logged only; FAKE_NPM_CI_FAIL=1 makes `npm ci` fail as a lost download does), FakePython3 (only
//   with FAKE_NO_EXCHANGE=1: a filesystem that cannot exchange two directories).
// Enrollment is real: the installed CLI enrolls against a real companion server.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync as readLink, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startTestCompanion, type TestCompanion } from '../support/cli.js';

const run = promisify(execFile);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sa-install-'));
const fakeRoot = path.join(tmp, 'root');
const bin = path.join(tmp, 'bin');
const logs = path.join(tmp, 'logs');
let companion: TestCompanion;

const STUBS: Record<string, string> = {
  // FakeSystemctl: unit state in $FAKE_ROOT/.fake-systemd/{enabled,active}
  systemctl: `
st="$FAKE_ROOT/.fake-systemd"; mkdir -p "$st"; touch "$st/enabled" "$st/active"
echo "systemctl $*" >> "$FAKE_LOGS/calls.log"
args=(); for a in "$@"; do case "$a" in --quiet|--now) ;; *) args+=("$a");; esac; done
verb=\${args[0]}; unit=\${args[1]:-}
case "$verb" in
  is-enabled) grep -qxF "$unit" "$st/enabled" ;;
  is-active) grep -qxF "$unit" "$st/active" ;;
  is-system-running) state=\${FAKE_SYSTEMD_STATE:-running}; echo "$state"; [ "$state" = running ] ;;
  enable) grep -qxF "$unit" "$st/enabled" || echo "$unit" >> "$st/enabled" ;;
  start|restart) grep -qxF "$unit" "$st/active" || echo "$unit" >> "$st/active" ;;
  disable) sed -i "/^$unit\\$/d" "$st/enabled" "$st/active" ;;
  daemon-reload) ;;
  *) echo "FakeSystemctl: unsupported $*" >&2; exit 1 ;;
esac`,
  // FakeDpkgQuery / FakeAptGet: a package database in $FAKE_ROOT/.fake-dpkg
  'dpkg-query': `
db="$FAKE_ROOT/.fake-dpkg"; touch "$db" 2>/dev/null || { mkdir -p "$(dirname "$db")"; touch "$db"; }
pkg=\${@: -1}; grep -qxF "$pkg" "$db" && printf 'install ok installed' || exit 1`,
  'apt-get': `
echo "apt-get $*" >> "$FAKE_LOGS/calls.log"
db="$FAKE_ROOT/.fake-dpkg"
if [ "$1" = install ]; then for p in "$@"; do case "$p" in -*|install) ;; *) echo "$p" >> "$db";; esac; done; fi`,
  getent: `
f="$FAKE_ROOT/etc/$1"; [ -f "$f" ] && grep "^$2:" "$f"`,
  useradd: `
echo "useradd $*" >> "$FAKE_LOGS/calls.log"
name=\${@: -1}; mkdir -p "$FAKE_ROOT/etc"
echo "$name:x:999:999::/var/lib/$name:/usr/sbin/nologin" >> "$FAKE_ROOT/etc/passwd"
echo "$name:x:999:" >> "$FAKE_ROOT/etc/group"
grep -q '^audio:' "$FAKE_ROOT/etc/group" || echo "audio:x:29:" >> "$FAKE_ROOT/etc/group"
sed -i "s/^audio:x:29:\\(.*\\)$/audio:x:29:\\1,$name/; s/^audio:x:29:,/audio:x:29:/" "$FAKE_ROOT/etc/group"`,
  usermod: `echo "usermod $*" >> "$FAKE_LOGS/calls.log"`,
  userdel: `echo "userdel $*" >> "$FAKE_LOGS/calls.log"`,
  chown: `echo "chown $*" >> "$FAKE_LOGS/chown.log"`,
  id: `[ "$1" = -u ] && echo 0 || exec /usr/bin/id "$@"`,
  // FakePython3 for one case only: FAKE_NO_EXCHANGE=1 answers install.sh's directory exchange as a filesystem
  // without RENAME_EXCHANGE does (EINVAL, exit 3); everything else is the real python3
  python3: `
if [ -n "\${FAKE_NO_EXCHANGE:-}" ] && [ "$1" = - ]; then
  script=$(cat); if grep -q RENAME_EXCHANGE <<< "$script"; then echo "install: exchanging $2 and $3: Invalid argument (FakePython3)" >&2; exit 3; fi
  exec /usr/bin/python3 - "\${@:2}" <<< "$script"
fi
exec /usr/bin/python3 "$@"`,
  npm: `
echo "npm $*" >> "$FAKE_LOGS/calls.log"
[ "$1" = rebuild ] && exit 0 # logged only: the linked packages are the checkout's, already built
[ "$1" = ci ] || { echo "FakeNpm: unsupported $*" >&2; exit 1; }
# FAKE_NPM_CI_FAIL: a download that fails half way, after npm ci has emptied node_modules (as the real one does)
if [ -n "\${FAKE_NPM_CI_FAIL:-}" ]; then rm -rf node_modules; mkdir -p node_modules/.partial; echo "npm error network ETIMEDOUT (FakeNpm)" >&2; exit 1; fi
mkdir -p node_modules
for d in "$CHECKOUT/node_modules"/* "$CHECKOUT/node_modules"/.bin; do ln -sfn "$d" "node_modules/$(basename "$d")"; done
# copied, not linked: install.sh prunes its other platforms' libraries
rm node_modules/onnxruntime-node && cp -a "$CHECKOUT/node_modules/onnxruntime-node" node_modules/`,
};

function env(root = fakeRoot, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...extra,
    PATH: `${bin}:${process.env.PATH}`,
    DESTDIR: root,
    FAKE_ROOT: root,
    FAKE_LOGS: logs,
    CHECKOUT: ROOT,
    SPEAKER_AGENT_WORKSPACE_KEY: '',
  };
}

const install = (...args: string[]) => installIn(fakeRoot, {}, ...args);
async function installIn(root: string, extra: NodeJS.ProcessEnv, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run('bash', [path.join(ROOT, 'scripts/install.sh'), ...args], { env: env(root, extra), timeout: 120_000 });
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    throw new Error(`install.sh ${args[0] ?? ''} exited ${e.code}\nstdout:\n${e.stdout}\nstderr:\n${e.stderr}`);
  }
}

/** Every path below the fake root with its type, mode and content hash (or link target). */
function treeHash(dir: string): { hash: string; entries: string[] } {
  const entries: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      const rel = path.relative(dir, p);
      const st = lstatSync(p);
      if (st.isSymbolicLink()) entries.push(`${rel} -> ${readLink(p)}`);
      else if (st.isDirectory()) {
        entries.push(`${rel}/ ${(st.mode & 0o7777).toString(8)}`);
        walk(p);
      } else entries.push(`${rel} ${(st.mode & 0o7777).toString(8)} ${createHash('sha256').update(readFileSync(p)).digest('hex')}`);
    }
  };
  walk(dir);
  return { hash: createHash('sha256').update(entries.join('\n')).digest('hex'), entries };
}

const readLog = (name: string) => (existsSync(path.join(logs, name)) ? readFileSync(path.join(logs, name), 'utf8').trim().split('\n').filter(Boolean) : []);
const clearLogs = () => rmSync(logs, { recursive: true, force: true }) ?? mkdirSync(logs, { recursive: true });

beforeAll(async () => {
  companion = await startTestCompanion();
  mkdirSync(bin, { recursive: true });
  mkdirSync(fakeRoot, { recursive: true });
  mkdirSync(logs, { recursive: true });
  for (const [name, body] of Object.entries(STUBS)) {
    writeFileSync(path.join(bin, name), `#!/usr/bin/env bash\n# Fake${name} for the install test (see the header of install.test.ts)\n${body.trim()}\n`);
    chmodSync(path.join(bin, name), 0o755);
  }
}, 60_000);
afterAll(async () => {
  await companion.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe('scripts/install.sh in a fake root', () => {
  let first: { hash: string; entries: string[] };

  it('installs: packages, project, user, units, enrollment, start', async () => {
    const r = await install('--server-url', companion.url, '--workspace-key', companion.workspaceKey, '--yes');
    expect(r.stdout).toContain('==> done');
    const calls = readLog('calls.log');
    expect(calls).toContain('apt-get update -qq');
    expect(calls.some((c) => c.startsWith('apt-get install') && c.includes('portaudio19-dev') && c.includes('libssl-dev'))).toBe(true);
    expect(calls).toContain('npm ci --omit=dev --no-audit --no-fund');
    expect(calls.some((c) => c.startsWith('useradd --system') && c.includes('--groups audio') && c.endsWith('speaker-agent'))).toBe(true);
    expect(calls).toEqual(expect.arrayContaining(['systemctl daemon-reload', 'systemctl enable --quiet speaker-agent.service', 'systemctl start speaker-agent.service']));

    const unit = readFileSync(path.join(fakeRoot, 'etc/systemd/system/speaker-agent.service'), 'utf8');
    expect(unit).toMatch(new RegExp(`^ExecStart=/opt/speaker-agent/bin/launch-node\\.sh ${process.execPath} .*-- /opt/speaker-agent/bin/speaker-agent\\.js run --virtual-audio never$`, 'm'));
    expect(statSync(path.join(fakeRoot, 'opt/speaker-agent/bin/launch-node.sh')).mode & 0o777).toBe(0o755);
    expect(existsSync(path.join(fakeRoot, 'opt/speaker-agent/dist/speaker-agent.js'))).toBe(true);
    // ONNX Runtime's libraries: this board's only (the package ships win32, darwin and both linux ones)
    const ortBin = path.join(fakeRoot, 'opt/speaker-agent/node_modules/onnxruntime-node/bin/napi-v6');
    expect(readdirSync(ortBin)).toEqual(['linux']);
    expect(readdirSync(path.join(ortBin, 'linux'))).toEqual([process.arch]);
    expect(existsSync(path.join(ROOT, 'node_modules/onnxruntime-node/bin/napi-v6/win32'))).toBe(true); // the checkout's untouched
    const wrapper = readFileSync(path.join(fakeRoot, 'usr/local/bin/speaker-agent'), 'utf8');
    expect(wrapper).toContain('CONFIGURATION_DIRECTORY="${CONFIGURATION_DIRECTORY:-/etc/speaker-agent}"');
    // regression: STATE_DIRECTORY alone sent `sudo speaker-agent companion ...` to a new database in the agent's directory
    expect(wrapper).toContain('SPEAKER_AGENT_COMPANION_DATA_DIR="${SPEAKER_AGENT_COMPANION_DATA_DIR:-/var/lib/speaker-agent-companion}"');
    expect(wrapper).toContain(`exec "/opt/speaker-agent/bin/launch-node.sh" "${process.execPath}" -- "/opt/speaker-agent/bin/speaker-agent.js" "$@"`);
    // regression (a review of years of upgrades): the Node pinned at install time gone (removed, another path),
    // the command died with "exec: ...: not found", `doctor` with it; it says what to run and runs on the PATH's
    // node (the wrapper as written, pointed at this checkout's CLI and at a Node that is not there)
    const moved = path.join(fakeRoot, 'tmp-wrapper');
    writeFileSync(moved, wrapper.replaceAll(process.execPath, '/nonexistent/bin/node').replaceAll('/opt/speaker-agent/bin/', path.join(ROOT, 'bin/')), { mode: 0o755 });
    const w = spawnSync(moved, ['--version'], { encoding: 'utf8', env: { ...process.env, PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin` } });
    expect(w.stderr).toContain('/nonexistent/bin/node, the Node this speaker was installed with, is gone');
    expect(w.stderr).toContain('sudo scripts/install.sh');
    expect(w.stderr).toContain(`running with ${process.execPath} meanwhile`);
    expect(w.status).toBe(0);
    expect(w.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const none = spawnSync(moved, ['--version'], { encoding: 'utf8', env: { ...process.env, PATH: '/nonexistent' } }); // no node anywhere
    expect(none.status).toBe(127);
    expect(none.stderr).toContain('and there is no node on the PATH (/nonexistent)');
    rmSync(moved);

    const config = JSON.parse(readFileSync(path.join(fakeRoot, 'etc/speaker-agent/config.json'), 'utf8')) as { server: { url: string } };
    expect(config.server.url).toBe(companion.url);
    expect(statSync(path.join(fakeRoot, 'etc/speaker-agent/config.json')).mode & 0o777).toBe(0o640);
    expect(statSync(path.join(fakeRoot, 'var/lib/speaker-agent/identity.json')).mode & 0o777).toBe(0o600);
    expect(readLog('chown.log')).toContain(`chown root:speaker-agent ${fakeRoot}/etc/speaker-agent/config.json`);
    // enrolled for real: the companion knows this client with a secret
    const id = JSON.parse(readFileSync(path.join(fakeRoot, 'var/lib/speaker-agent/identity.json'), 'utf8')) as { clientId: string };
    const row = companion.server.context.db.prepare('SELECT secret_hash FROM clients WHERE id = ?').get(id.clientId) as { secret_hash: string | null } | undefined;
    expect(row?.secret_hash).toBeTruthy();
    first = treeHash(fakeRoot);
  }, 180_000);

  it("regression: `sudo speaker-agent doctor` ignored the service's EnvironmentFile (/etc/speaker-agent/environment): it checked another server, device or CA than the running agent's", async () => {
    // the wrapper as written, pointed at this checkout's CLI and at the fake root's /etc and /var/lib
    const wrapper = readFileSync(path.join(fakeRoot, 'usr/local/bin/speaker-agent'), 'utf8');
    expect(wrapper).toContain('load_environment_file "/etc/speaker-agent/environment"');
    const moved = path.join(tmp, 'wrapper-env');
    writeFileSync(
      moved,
      wrapper.replaceAll('/opt/speaker-agent/bin/', path.join(ROOT, 'bin/')).replaceAll('/etc/speaker-agent', path.join(fakeRoot, 'etc/speaker-agent')).replaceAll('/var/lib/speaker-agent', path.join(fakeRoot, 'var/lib/speaker-agent')),
      { mode: 0o755 },
    );
    const envFile = path.join(fakeRoot, 'etc/speaker-agent/environment');
    writeFileSync(envFile, '# what a maker adds to the service\nSPEAKER_AGENT_SERVER_URL="http://127.0.0.1:9"\n');
    try {
      const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'SPEAKER_AGENT_SERVER_URL'));
      const configOf = (env: NodeJS.ProcessEnv) => {
        const r = spawnSync(moved, ['doctor', '--json', '--skip-call', '--skip-echo'], { encoding: 'utf8', env, timeout: 60_000 });
        const checks = (JSON.parse(r.stdout) as { checks: { name: string; detail: string }[] }).checks;
        return checks.find((c) => c.name === 'config')!.detail;
      };
      expect(configOf(base)).toMatch(/: server http:\/\/127\.0\.0\.1:9\/?$/);
      // a variable given on the command line wins over the file, as the CLI's own overrides always did
      expect(configOf({ ...base, SPEAKER_AGENT_SERVER_URL: companion.url })).toMatch(new RegExp(`: server ${companion.url.replaceAll('.', '\\.')}/?$`));
      // without the file: config.json's server
      rmSync(envFile);
      expect(configOf(base)).toMatch(new RegExp(`: server ${companion.url.replaceAll('.', '\\.')}/?$`));
    } finally {
      rmSync(envFile, { force: true });
      rmSync(moved);
    }
  }, 180_000);

  it('a second run changes nothing: same file tree, no changing call', async () => {
    const chownFirst = readLog('chown.log');
    clearLogs();
    const r = await install('--server-url', companion.url, '--workspace-key', companion.workspaceKey, '--yes');
    expect(r.stdout).not.toContain('==> installing');
    const second = treeHash(fakeRoot);
    expect(second.entries).toEqual(first.entries);
    expect(second.hash).toBe(first.hash);
    const changing = readLog('calls.log').filter((c) => !/^systemctl is-(enabled|active|system-running)/.test(c));
    expect(changing).toEqual([]);
    // ownership is re-asserted to the same values (chown is idempotent), never to anything new
    expect(readLog('chown.log')).toEqual(chownFirst);
  }, 180_000);

  it("an update that changes only the vendored addons' sources rebuilds them in place and restarts the service", async () => {
    // the stamp of the sources they were built from, as an older release's sources would have left it
    const stamp = path.join(fakeRoot, 'opt/speaker-agent/node_modules/.speaker-agent-vendored.sha256');
    const built = readFileSync(stamp, 'utf8');
    writeFileSync(stamp, '0'.repeat(64) + '\n');
    clearLogs();
    const r = await install('--yes');
    expect(r.stdout).toContain('==> rebuilding naudiodon2 speaker-sys (their sources changed since they were built)');
    const calls = readLog('calls.log');
    expect(calls).toContain('npm rebuild naudiodon2 speaker-sys --no-audit --no-fund');
    expect(calls).not.toContain('npm ci --omit=dev --no-audit --no-fund'); // the lockfile did not change
    expect(calls).toContain('systemctl restart speaker-agent.service');
    expect(readFileSync(stamp, 'utf8')).toBe(built);
    clearLogs();
    await install('--yes');
    expect(readLog('calls.log').filter((c) => c.startsWith('npm'))).toEqual([]);
  }, 180_000);

  it('an upgrade whose files changed is staged beside the installed release, which it then replaces', async () => {
    const live = path.join(fakeRoot, 'opt/speaker-agent');
    const entry = path.join(live, 'dist/speaker-agent.js');
    const shipped = readFileSync(entry, 'utf8');
    // what an older release left: another entry, and a file this one no longer ships
    writeFileSync(entry, '// an older release\n');
    writeFileSync(path.join(live, 'dist/retired.js'), '// gone in this release\n');
    clearLogs();
    const r = await install('--yes');
    expect(r.stdout).toContain('==> staging the new release in /opt/speaker-agent.staging (the installed one is kept until it is ready)');
    expect(readFileSync(entry, 'utf8')).toBe(shipped);
    expect(existsSync(path.join(live, 'dist/retired.js'))).toBe(false);
    const calls = readLog('calls.log');
    expect(calls.filter((c) => c.startsWith('npm'))).toEqual([]); // the same lockfile: node_modules was copied
    expect(calls).toContain('systemctl restart speaker-agent.service');
    expect(readdirSync(path.join(fakeRoot, 'opt')).sort()).toEqual(['speaker-agent']); // no stage, no previous
  }, 180_000);

  // Regression: npm ci ran in the installed tree, after its new files were written there; it empties node_modules
  // first, so a download that failed left a speaker that did not start again until a rerun succeeded.
  it('an upgrade whose npm ci fails leaves the installed release as it was, and the next run completes it', async () => {
    const live = path.join(fakeRoot, 'opt/speaker-agent');
    const stamp = path.join(live, 'node_modules/.speaker-agent-lock.sha256');
    const current = readFileSync(stamp, 'utf8');
    // installed from an older lockfile: this run must download
    writeFileSync(stamp, current.replace(/^[0-9a-f]{64}/, '0'.repeat(64)));
    writeFileSync(path.join(live, 'dist/speaker-agent.js'), '// an older release\n');
    const before = treeHash(live);
    clearLogs();
    const failed = await installIn(fakeRoot, { FAKE_NPM_CI_FAIL: '1' }, '--yes').then(
      () => 'succeeded',
      (err: Error) => err.message,
    );
    expect(failed).toMatch(/exited 3/);
    expect(failed).toContain('install: npm ci failed: the installed release in /opt/speaker-agent is unchanged (its service keeps running)');
    expect(treeHash(live).entries).toEqual(before.entries);
    expect(readdirSync(path.join(fakeRoot, 'opt')).sort()).toEqual(['speaker-agent']);
    expect(readLog('calls.log').filter((c) => /^systemctl (start|restart|stop)/.test(c))).toEqual([]);

    clearLogs();
    await install('--yes');
    expect(readLog('calls.log')).toEqual(expect.arrayContaining(['npm ci --omit=dev --no-audit --no-fund', 'systemctl restart speaker-agent.service']));
    expect(readFileSync(stamp, 'utf8')).toBe(current);
    expect(readFileSync(path.join(live, 'dist/speaker-agent.js'), 'utf8')).toBe(readFileSync(path.join(ROOT, 'dist/speaker-agent.js'), 'utf8'));
    expect(readdirSync(path.join(fakeRoot, 'opt')).sort()).toEqual(['speaker-agent']);
  }, 180_000);

  it('where the filesystem cannot exchange two directories, the upgrade swaps by two renames', async () => {
    const live = path.join(fakeRoot, 'opt/speaker-agent');
    writeFileSync(path.join(live, 'dist/speaker-agent.js'), '// an older release\n');
    clearLogs();
    const r = await installIn(fakeRoot, { FAKE_NO_EXCHANGE: '1' }, '--yes');
    expect(r.stderr).toContain('Invalid argument (FakePython3)');
    expect(readFileSync(path.join(live, 'dist/speaker-agent.js'), 'utf8')).toBe(readFileSync(path.join(ROOT, 'dist/speaker-agent.js'), 'utf8'));
    expect(readdirSync(path.join(fakeRoot, 'opt')).sort()).toEqual(['speaker-agent']);
    expect(readLog('calls.log')).toContain('systemctl restart speaker-agent.service');
  }, 180_000);

  it('an upgrade installed with --no-start is restarted by the next run that starts services', async () => {
    const live = path.join(fakeRoot, 'opt/speaker-agent');
    writeFileSync(path.join(live, 'dist/speaker-agent.js'), '// an older release\n');
    clearLogs();
    await install('--yes', '--no-start');
    expect(readLog('calls.log').filter((c) => /^systemctl (start|restart)/.test(c))).toEqual([]);
    expect(existsSync(path.join(live, '.restart-pending'))).toBe(true);
    clearLogs();
    const r = await install('--yes');
    expect(r.stdout).not.toContain('staging'); // nothing new to install: only the restart it still owed
    expect(readLog('calls.log')).toContain('systemctl restart speaker-agent.service');
    expect(existsSync(path.join(live, '.restart-pending'))).toBe(false);
  }, 180_000);

  it('a second install.sh while one runs stops at once and changes nothing', async () => {
    const live = path.join(fakeRoot, 'opt/speaker-agent');
    const before = treeHash(live);
    // the lock a running install.sh holds: on the directory that holds the release (--no-fork: the killed
    // process is the one that holds it)
    const holder = spawn('flock', ['--no-fork', path.join(fakeRoot, 'opt'), 'sleep', '30'], { stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 300));
      clearLogs();
      const failed = await install('--yes').then(() => 'succeeded', (err: Error) => err.message);
      expect(failed).toMatch(/exited 3/);
      expect(failed).toContain('install: another install.sh is running');
      expect(treeHash(live).entries).toEqual(before.entries);
      expect(readLog('calls.log').filter((c) => !/^systemctl is-/.test(c))).toEqual([]);
    } finally {
      holder.kill();
      await new Promise((r) => holder.once('exit', r));
    }
  }, 60_000);

  it('a swap cut off between its two renames (power lost) is put back by the next run', async () => {
    const live = path.join(fakeRoot, 'opt/speaker-agent');
    const before = treeHash(live);
    renameSync(live, `${live}.previous`);
    clearLogs();
    const r = await install('--yes');
    expect(r.stdout).toContain('==> putting back /opt/speaker-agent (an earlier upgrade was cut off while swapping)');
    expect(r.stdout).not.toContain('staging');
    expect(treeHash(live).entries).toEqual(before.entries);
    expect(readLog('calls.log').filter((c) => c.startsWith('npm'))).toEqual([]);
    expect(readdirSync(path.join(fakeRoot, 'opt')).sort()).toEqual(['speaker-agent']);
  }, 180_000);

  it('--uninstall removes the service and the project but keeps config and identity', async () => {
    clearLogs();
    await install('--uninstall');
    expect(existsSync(path.join(fakeRoot, 'etc/systemd/system/speaker-agent.service'))).toBe(false);
    expect(existsSync(path.join(fakeRoot, 'opt/speaker-agent'))).toBe(false);
    expect(existsSync(path.join(fakeRoot, 'var/lib/speaker-agent/identity.json'))).toBe(true);
    expect(readLog('calls.log')).toEqual(expect.arrayContaining(['systemctl disable --now speaker-agent.service', 'systemctl daemon-reload']));
  }, 60_000);
});

// A chroot, a container, an image being built: systemctl answers "offline" (the real one in a Debian root does;
// scripts/check-debian-root.sh runs install.sh in one).
describe('scripts/install.sh where systemd is not running', () => {
  const root = path.join(tmp, 'root-offline');
  const offline = { FAKE_SYSTEMD_STATE: 'offline' };
  let first: { hash: string; entries: string[] };

  it('installs and enables the unit, starts nothing, enrolls without contacting the server, and says so', async () => {
    mkdirSync(root, { recursive: true });
    clearLogs();
    const r = await installIn(root, offline, '--server-url', companion.url, '--workspace-key', companion.workspaceKey, '--yes');
    expect(r.stdout).toMatch(/^==> systemd is not running here \(systemctl: offline; a chroot or a container\): speaker-agent\.service enabled, not started; they start at the next boot$/m);
    expect(r.stdout).toMatch(/^==> done\. On the booted machine: sudo speaker-agent doctor/m);
    const calls = readLog('calls.log');
    expect(calls).toContain('systemctl enable --quiet speaker-agent.service');
    expect(calls.filter((c) => /^systemctl (daemon-reload|start|restart)/.test(c))).toEqual([]);
    expect(calls.some((c) => c.startsWith('apt-get install') && c.includes(' systemd'))).toBe(true);
    expect(existsSync(path.join(root, 'etc/systemd/system/speaker-agent.service'))).toBe(true);
    // configured and an identity made, but the server was not asked: it has never seen this client
    const config = JSON.parse(readFileSync(path.join(root, 'etc/speaker-agent/config.json'), 'utf8')) as { server: { url: string } };
    expect(config.server.url).toBe(companion.url);
    const id = JSON.parse(readFileSync(path.join(root, 'var/lib/speaker-agent/identity.json'), 'utf8')) as { clientId: string };
    expect(companion.server.context.db.prepare('SELECT id FROM clients WHERE id = ?').get(id.clientId)).toBeUndefined();
    first = treeHash(root);
  }, 180_000);

  it('a second run changes nothing either', async () => {
    clearLogs();
    const r = await installIn(root, offline, '--server-url', companion.url, '--workspace-key', companion.workspaceKey, '--yes');
    expect(r.stdout).toMatch(/not started; they start at the next boot/);
    expect(treeHash(root).entries).toEqual(first.entries);
    expect(readLog('calls.log').filter((c) => !/^systemctl is-(enabled|active|system-running)/.test(c))).toEqual([]);
  }, 180_000);
});

// Regression: `--companion` without `--server-url` on a booted machine verified the enrollment against the
// companion it had installed but not yet started: "enrollment failed", on every run. And SERVICE_USER was used for
// the directories but not written into the units (User= stayed speaker-agent). FakeSystemctl starts nothing, so
// the "local" companion is the test's real one (COMPANION_URL, its workspace key given).
describe('scripts/install.sh --companion on a running systemd, another service user', () => {
  const root = path.join(tmp, 'root-companion');
  const user = { SERVICE_USER: 'voicebox', COMPANION_URL: '' };

  it('starts its companion first and enrolls against it; the units run as that user', async () => {
    user.COMPANION_URL = companion.url;
    mkdirSync(root, { recursive: true });
    clearLogs();
    const r = await installIn(root, user, '--companion', '--workspace-key', companion.workspaceKey, '--yes');
    expect(r.stdout).toContain('==> starting speaker-agent-companion.service (the agent enrolls against it)');
    const calls = readLog('calls.log');
    expect(calls).toEqual(expect.arrayContaining(['systemctl start speaker-agent.service', 'systemctl start speaker-agent-companion.service']));
    // the companion before the enrollment, so before the agent (before: both in step 7, the agent first)
    expect(calls.indexOf('systemctl start speaker-agent-companion.service')).toBeLessThan(calls.indexOf('systemctl start speaker-agent.service'));
    const config = JSON.parse(readFileSync(path.join(root, 'etc/speaker-agent/config.json'), 'utf8')) as { server: { url: string; workspaceKey: string } };
    expect(config.server.url).toBe(companion.url);
    // enrolled for real: the companion knows this client with a secret
    const id = JSON.parse(readFileSync(path.join(root, 'var/lib/speaker-agent/identity.json'), 'utf8')) as { clientId: string };
    const row = companion.server.context.db.prepare('SELECT secret_hash FROM clients WHERE id = ?').get(id.clientId) as { secret_hash: string | null } | undefined;
    expect(row?.secret_hash).toBeTruthy();
    for (const u of ['speaker-agent.service', 'speaker-agent-companion.service']) {
      const unit = readFileSync(path.join(root, 'etc/systemd/system', u), 'utf8');
      expect(unit, u).toMatch(/^User=voicebox$/m);
      expect(unit, u).toMatch(/^Group=voicebox$/m);
    }
    expect(readLog('chown.log')).toContain(`chown root:voicebox ${root}/etc/speaker-agent/config.json`);
    // and again: the same path, nothing new
    clearLogs();
    await installIn(root, user, '--companion', '--workspace-key', companion.workspaceKey, '--yes');
    expect(readLog('calls.log').filter((c) => !/^systemctl is-(enabled|active|system-running)/.test(c))).toEqual([]);
  }, 240_000);

  it('regression (from a review): an upgrade run without --companion left the companion an earlier run installed on the old code; it is restarted too, never enabled or started', async () => {
    writeFileSync(path.join(root, 'opt/speaker-agent/dist/speaker-agent.js'), '// an older release\n');
    clearLogs();
    await installIn(root, user, '--yes');
    const calls = readLog('calls.log');
    expect(calls).toEqual(expect.arrayContaining(['systemctl restart speaker-agent.service', 'systemctl restart speaker-agent-companion.service']));
    expect(calls.filter((c) => /^systemctl (enable|start) .*companion/.test(c))).toEqual([]);
    // a companion the maker stopped stays stopped
    writeFileSync(path.join(root, 'opt/speaker-agent/dist/speaker-agent.js'), '// an older release\n');
    const active = path.join(root, '.fake-systemd/active');
    writeFileSync(active, readFileSync(active, 'utf8').replace('speaker-agent-companion.service\n', ''));
    clearLogs();
    await installIn(root, user, '--yes');
    expect(readLog('calls.log').filter((c) => /companion/.test(c) && !/^systemctl is-/.test(c))).toEqual([]);
  }, 240_000);
});
