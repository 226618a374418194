// The Node checks shared by setup.sh and install.sh (scripts/lib/node-build.sh) and scripts/check-addons.mjs,
// run for real in this Node. What cannot exist here is faked and named: FakeOldNode (this node reporting
// version 18.19.0, Debian 12's own), FakeStaleAddon (a package whose load fails the way an addon built for
// another Node's ABI does), FakeHeaders (a headers dir of another Node version), FakeNpm (an `npm rebuild` that
// logs its call: the real one compiles for minutes).
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteDriverFor } from '../../src/companion/db/sqlite.js';
import { ROOT } from '../support/childProcess.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'node-build-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function sh(script: string, env: NodeJS.ProcessEnv = {}) {
  return spawnSync('bash', ['-c', `set -euo pipefail; . scripts/lib/node-build.sh; ${script}`], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env } });
}

/** Runs one of node-build.sh's checks; `continued` says whether the script went on past it. */
function check(fn: string, env: NodeJS.ProcessEnv = {}) {
  const r = sh(`${fn}; echo continued`, env);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, continued: r.stdout.includes('continued') };
}

/** An executable in a fresh directory, which a test puts first on the PATH. */
function executableDir(dir: string, name: string, body: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, name), body);
  chmodSync(path.join(dir, name), 0o755);
  return dir;
}

describe('scripts/check-addons.mjs', () => {
  it('loads and uses every native addon in this Node, with the SQLite driver this Node uses', () => {
    const out = execFileSync(process.execPath, ['scripts/check-addons.mjs'], { cwd: ROOT, encoding: 'utf8' });
    const lines = out.trim().split('\n');
    expect(lines.map((l) => l.split(/\s+/)[1])).toEqual(['@discordjs/opus', 'naudiodon2', 'speaker-sys', 'onnxruntime-node', 'koffi', sqliteDriverFor()]);
    for (const l of lines) expect(l).toMatch(/^ok {6}/);
  });

  it('names an addon built for another Node, with both ABIs, and lists it for npm rebuild', () => {
    // a copy of the project's node_modules (links) with @discordjs/opus replaced by FakeStaleAddon
    const proj = path.join(tmp, 'proj');
    mkdirSync(path.join(proj, 'scripts'), { recursive: true });
    cpSync(path.join(ROOT, 'scripts/check-addons.mjs'), path.join(proj, 'scripts/check-addons.mjs'));
    writeFileSync(path.join(proj, 'package.json'), '{"name":"proj","private":true}');
    mkdirSync(path.join(proj, 'node_modules/@discordjs/opus'), { recursive: true });
    for (const d of readdirSync(path.join(ROOT, 'node_modules'))) {
      if (d !== '@discordjs') symlinkSync(path.join(ROOT, 'node_modules', d), path.join(proj, 'node_modules', d));
    }
    writeFileSync(path.join(proj, 'node_modules/@discordjs/opus/package.json'), '{"name":"@discordjs/opus","main":"index.js"}');
    writeFileSync(
      path.join(proj, 'node_modules/@discordjs/opus/index.js'),
      `throw new Error("The module '/x/opus.node'\\nwas compiled against a different Node.js version using\\nNODE_MODULE_VERSION 115. This version of Node.js requires\\nNODE_MODULE_VERSION ${process.versions.modules}.");`,
    );
    const r = spawnSync(process.execPath, ['scripts/check-addons.mjs'], { cwd: proj, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/^FAILED {2}@discordjs\/opus {2}.*The module '\/x\/opus\.node'/m);
    expect(r.stdout).toContain(`built for another Node (ABI 115); this is Node ${process.version} (ABI ${process.versions.modules})`);
    expect(r.stdout).toMatch(/^ok {6}naudiodon2/m);
    const failed = spawnSync(process.execPath, ['scripts/check-addons.mjs', '--failed'], { cwd: proj, encoding: 'utf8' });
    expect(failed.stdout.trim()).toBe('@discordjs/opus');
  });
});

describe('scripts/lib/node-build.sh', () => {
  it('a Node older than 20.10 stops with exit 3 and how to fix it (FakeOldNode)', () => {
    const dir = path.join(tmp, 'oldnode');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'v18.cjs'), "Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '18.19.0' } }); Object.defineProperty(process, 'version', { value: 'v18.19.0' });");
    const bin = executableDir(dir, 'node', `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} --require ${JSON.stringify(path.join(dir, 'v18.cjs'))} "$@"\n`);
    const old = check('node_supported_or_exit', { PATH: `${bin}:${process.env.PATH}` });
    expect([old.status, old.continued]).toEqual([3, false]);
    expect(old.stderr).toContain('Node.js v18.19.0');
    expect(old.stderr).toContain('too old: speaker-agent needs Node 20.10 or newer');
    expect(old.stderr).toContain('sudo apt-get install nodejs npm');
    expect(old.stderr).toContain('sudo npm install -g node@24 npm@11');
    const current = check('node_supported_or_exit');
    expect([current.status, current.continued]).toEqual([0, true]);
  });

  it("stops when Debian's npm would build the addons for Debian's own Node (FakeDebianNpm)", () => {
    // Debian's npm lives in /usr/share/nodejs; here a stand-in tree is named by DEBIAN_NODEJS_DIR
    const debian = path.join(tmp, 'usr-share-nodejs');
    executableDir(path.join(debian, 'npm/bin'), 'npm-cli.js', '#!/bin/sh\necho 9.2.0\n');
    const bin = path.join(tmp, 'debnpm-bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(path.join(debian, 'npm/bin/npm-cli.js'), path.join(bin, 'npm'));
    const r = check('npm_matches_node_or_exit', { PATH: `${bin}:${process.env.PATH}`, DEBIAN_NODEJS_DIR: debian });
    if ((process.config.variables as { node_shared?: boolean }).node_shared !== true) {
      expect([r.status, r.continued]).toEqual([3, false]);
      expect(r.stderr).toContain("npm is Debian's");
      expect(r.stderr).toContain('sudo npm install -g npm@11');
    } else {
      expect([r.status, r.continued]).toEqual([0, true]); // this node is Debian's own: Debian's npm builds for it
    }
    const own = check('npm_matches_node_or_exit');
    expect([own.status, own.continued]).toEqual([0, true]);
  });

  it("builds against headers of exactly this node's version, never a configured nodedir of another (FakeHeaders)", () => {
    const fake = path.join(tmp, 'headers18');
    mkdirSync(path.join(fake, 'include/node'), { recursive: true });
    writeFileSync(path.join(fake, 'include/node/common.gypi'), '{}');
    writeFileSync(path.join(fake, 'include/node/node_version.h'), '#define NODE_MAJOR_VERSION 18\n#define NODE_MINOR_VERSION 19\n#define NODE_PATCH_VERSION 0\n');
    const r = sh('use_matching_node_headers; echo "nodedir=${npm_config_nodedir:-}"', { npm_config_nodedir: fake });
    expect(r.status).toBe(0);
    expect(r.stderr).toContain(`npm's nodedir (${fake}) holds headers of Node 18.19.0, not ${process.versions.node}: not using it`);
    const chosen = /nodedir=(.*)/.exec(r.stdout)![1];
    expect(chosen).not.toBe(fake);
    // what was chosen (if anything) holds this node's headers
    if (chosen) {
      const h = execFileSync('cat', [path.join(chosen, 'include/node/node_version.h')], { encoding: 'utf8' });
      const v = ['MAJOR', 'MINOR', 'PATCH'].map((k) => new RegExp(`define NODE_${k}_VERSION (\\d+)`).exec(h)![1]).join('.');
      expect(v).toBe(process.versions.node);
    } else {
      expect(r.stderr).toContain('no headers for Node');
    }
  });
  it("vendored_addons_sum: a hash of what the vendored addons' builds read (binding.gyp, package.json, src/), not their docs or build output", () => {
    const proj = path.join(tmp, 'vendored-sum');
    for (const a of ['naudiodon2', 'speaker-sys']) {
      cpSync(path.join(ROOT, 'vendor', a), path.join(proj, 'vendor', a), { recursive: true, filter: (src) => !/\/(build|node_modules)$/.test(src) });
    }
    const sum = (dir: string) => {
      const r = sh(`vendored_addons_sum ${JSON.stringify(dir)}`);
      expect(r.status, r.stderr).toBe(0);
      return r.stdout.trim();
    };
    const original = sum(proj);
    expect(original).toMatch(/^[0-9a-f]{64}$/);
    expect(sum(ROOT)).toBe(original); // the checkout, with its build output, hashes the same as a copy without it
    mkdirSync(path.join(proj, 'vendor/speaker-sys/build/Release'), { recursive: true });
    writeFileSync(path.join(proj, 'vendor/speaker-sys/build/Release/speaker_sys.node'), 'built');
    writeFileSync(path.join(proj, 'vendor/speaker-sys/README.md'), 'a docs-only change'); // no rebuild for it
    expect(sum(proj)).toBe(original);
    const gyp = path.join(proj, 'vendor/naudiodon2/binding.gyp');
    writeFileSync(gyp, readFileSync(gyp, 'utf8') + '\n');
    const gypChanged = sum(proj);
    expect(gypChanged).not.toBe(original);
    writeFileSync(path.join(proj, 'vendor/naudiodon2/src/new_file.c'), ''); // a file added counts
    expect(sum(proj)).not.toBe(gypChanged);
    const c = path.join(proj, 'vendor/speaker-sys/src/node_preload.c');
    const before = sum(proj);
    writeFileSync(c, readFileSync(c, 'utf8') + '\n/* a fix */\n');
    const fixed = sum(proj);
    expect(fixed).not.toBe(before);
    rmSync(c);
    expect([before, fixed]).not.toContain(sum(proj)); // a file gone counts too
  });

  it('ensure_vendored_addons_current rebuilds the vendored addons only when their sources changed (FakeNpm)', () => {
    const proj = path.join(tmp, 'vendored-rebuild');
    for (const a of ['naudiodon2', 'speaker-sys']) {
      for (const f of ['src', 'binding.gyp', 'package.json']) cpSync(path.join(ROOT, 'vendor', a, f), path.join(proj, 'vendor', a, f), { recursive: true });
    }
    mkdirSync(path.join(proj, 'node_modules'), { recursive: true });
    const log = path.join(tmp, 'fake-npm.log');
    const bin = executableDir(path.join(tmp, 'fake-npm-bin'), 'npm', `#!/bin/sh\necho "npm $* build_from_source=$npm_config_build_from_source cwd=$PWD" >> ${JSON.stringify(log)}\n[ -z "$FAKE_NPM_FAIL" ]\n`);
    const ensure = (env: NodeJS.ProcessEnv = {}) => {
      rmSync(log, { force: true });
      const r = check(`ensure_vendored_addons_current ${JSON.stringify(proj)}`, { PATH: `${bin}:${process.env.PATH}`, ...env });
      return { ...r, calls: existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [] };
    };
    // never recorded here (an install from before the record was kept): rebuilt once, and recorded
    const first = ensure();
    expect([first.status, first.continued]).toEqual([0, true]);
    expect(first.calls).toEqual([`npm rebuild naudiodon2 speaker-sys --no-audit --no-fund build_from_source=true cwd=${proj}`]);
    expect(first.stdout).toContain('rebuilding naudiodon2 speaker-sys (no record of the sources they were built from)');
    expect(ensure().calls).toEqual([]);
    // an update changes a C source (not the lockfile): rebuilt once
    writeFileSync(path.join(proj, 'vendor/speaker-sys/src/node_preload.c'), '/* changed */\n');
    // a build that fails is not recorded: it returns non-zero and the next run tries again
    const failed = ensure({ FAKE_NPM_FAIL: '1' });
    expect(failed.calls).toHaveLength(1);
    expect(failed.stdout).toContain('rebuilding naudiodon2 speaker-sys (their sources changed since they were built)');
    expect(failed.status).not.toBe(0);
    expect(ensure().calls).toHaveLength(1);
    expect(ensure().calls).toEqual([]);
  });
});
