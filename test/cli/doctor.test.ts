// `speaker-agent doctor` (src/cli/doctor.ts) as a maker meets it, run as the real CLI against a real companion and
// the virtual sound card: the fix for a rejection follows the server's code, an installed speaker checked without
// sudo says so (and finds the running service), PortAudio's ALSA noise stays off the terminal, and the privacy
// mute is reported. From a review of the maker's experience (regressions named after the bugs).
// Each test spawns the CLI (~5-10 s for a doctor run on a loaded machine): hence the longer timeouts.
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/agent/errors.js';
import { startStatusServer } from '../../src/agent/statusServer.js';
import { libopusVersion } from '../../src/common/audio/libopusDecoder.js';
import { nodeReadsSystemCaVariable, systemCaSetting } from '../../src/common/certificateTrust.js';
import { deviceDirs, enrollDevice, json, ROOT, runCli, startTestCompanion, type DeviceDirs, type TestCompanion } from '../support/cli.js';
import { canMount, lastingDir } from '../support/mounts.js';
import { stuckFile } from '../support/stuckFifo.js';
import { serverCertificate } from '../support/tlsCertificates.js';

interface Check {
  name: string;
  status: string;
  detail: string;
  fix?: string;
}

let companion: TestCompanion;
let dev: DeviceDirs;
beforeAll(async () => {
  companion = await startTestCompanion();
  dev = deviceDirs();
  await enrollDevice(dev, companion);
}, 60_000);
afterAll(async () => {
  dev.remove();
  await companion.close();
});

/** doctor --json without the call and the echo probe (not what these tests are about; they cost seconds) */
async function doctor(env: NodeJS.ProcessEnv, as: { uid?: number; gid?: number } = {}): Promise<{ checks: Record<string, Check>; stdout: string; stderr: string; code: number | null }> {
  const r = await runCli(['doctor', '--json', '--skip-call', '--skip-echo'], env, 60_000, as);
  const j = json<{ checks: Check[] }>(r);
  return { checks: Object.fromEntries(j.checks.map((c) => [c.name, c])), stdout: r.stdout, stderr: r.stderr, code: r.code };
}

describe('doctor: a rejection is explained by the server\'s code', () => {
  it('regression: a wrong workspace key got the lost-secret fix (restore identity.json, or reset the client then `enroll --reset-identity`)', async () => {
    const r = await doctor({ ...dev.env, SPEAKER_AGENT_WORKSPACE_KEY: 'wk_typo' });
    const c = r.checks['device headers (TOFU)'];
    expect(c.status).toBe('fail');
    expect(c.detail).toContain('INVALID_WORKSPACE_KEY');
    expect(c.fix).toMatch(/check the workspace key \(dashboard -> workspace settings\)/);
    expect(c.fix).toContain('speaker-agent enroll --workspace-key');
    expect(c.fix).not.toMatch(/identity\.json|reset-identity|companion client reset/);
  }, 120_000);

  it('regression: a secret mismatch advised `enroll --reset-identity` after the admin reset, which abandons the client id just reset; the advised plain `enroll` is accepted for the same id', async () => {
    const lost = deviceDirs();
    try {
      const { clientId } = json<{ clientId: string }>(await enrollDevice(lost, companion));
      const file = path.join(lost.stateDir, 'identity.json');
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), clientSecret: 'y'.repeat(43) }), { mode: 0o600 });
      const c = (await doctor(lost.env)).checks['device headers (TOFU)'];
      expect(c.status).toBe('fail');
      expect(c.detail).toContain('SECRET_MISMATCH');
      expect(c.fix).toMatch(/restore identity\.json from a backup/);
      expect(c.fix).toContain(`speaker-agent companion client reset ${clientId}`);
      expect(c.fix).not.toContain('reset-identity');
      expect(c.fix).not.toMatch(/workspace key/);
      // the fix, followed word for word: the same client id is enrolled again with this device's secret
      expect((await runCli(['companion', 'client', 'reset', clientId, '--data-dir', companion.dataDir], lost.env)).code).toBe(0);
      const again = await runCli(['enroll', '--json'], lost.env);
      expect(again.code, again.stdout + again.stderr).toBe(0);
      expect(json<{ verdict: string; clientId: string }>(again)).toMatchObject({ verdict: 'accepted', clientId });
    } finally {
      lost.remove();
    }
  }, 120_000);
});

// as root only (CI is): the directories belong to the service, as install.sh makes them, and doctor runs as a maker
describe.skipIf(process.getuid?.() !== 0)('doctor on an installed speaker, without sudo', () => {
  it('regression: an unreadable config.json (EACCES) got "fix the file or remove it and run enroll", and the running service was "not running"', async () => {
    const svc = deviceDirs();
    // the service's socket candidates as on a speaker (its state directory, /run/speaker-agent), not the test's
    delete svc.env.SPEAKER_AGENT_STATUS_SOCKET;
    const socketPath = path.join(svc.stateDir, 'status.sock');
    try {
      mkdirSync(svc.configDir, { mode: 0o750 });
      writeFileSync(path.join(svc.configDir, 'config.json'), JSON.stringify({ server: { url: companion.url, workspaceKey: companion.workspaceKey } }), { mode: 0o640 });
      chownSync(svc.configDir, 0, 4243); // /etc/speaker-agent: root:speaker-agent 0750
      mkdirSync(svc.stateDir, { mode: 0o700 });
      writeFileSync(path.join(svc.stateDir, 'mic.json'), '{"muted": false}\n', { mode: 0o600 });
      const server = await startStatusServer({ socketPath, snapshot: () => ({ listening: { micMuted: false } }) });
      chownSync(svc.stateDir, 4242, 4243); // /var/lib/speaker-agent: the service's, 0700
      chmodSync(svc.root, 0o755);
      try {
        const r = await doctor(svc.env, { uid: 4244, gid: 4244 }); // a maker: neither root nor in the service's group
        expect(r.checks.config.status).toBe('fail');
        expect(r.checks.config.detail).toMatch(/permission denied/);
        expect(r.checks.config.fix).toContain('sudo speaker-agent doctor');
        expect(r.checks.config.fix).not.toMatch(/remove/);
        const service = r.checks['agent service'];
        expect(service.status).toBe('warn');
        expect(service.detail).toContain(`permission denied on ${socketPath}`);
        expect(service.detail).not.toMatch(/not running/);
        expect(service.fix).toContain('sudo speaker-agent doctor');
        expect(r.checks['privacy mute'].detail).toMatch(/permission denied/);
      } finally {
        await server.close();
      }
    } finally {
      svc.remove();
    }
  }, 120_000);
});

describe('doctor and the agent service', () => {
  it('regression: with no usable config it looked at no status socket and said "not running" beside a running agent', async () => {
    const svc = deviceDirs();
    try {
      mkdirSync(svc.configDir, { recursive: true });
      writeFileSync(path.join(svc.configDir, 'config.json'), '{"server": ');
      const server = await startStatusServer({ socketPath: svc.env.SPEAKER_AGENT_STATUS_SOCKET!, snapshot: () => ({ listening: { micMuted: false } }) });
      try {
        const r = await doctor(svc.env);
        expect(r.checks.config.status).toBe('fail');
        expect(r.checks.config.fix).toMatch(/fix the file/); // really broken JSON: that fix is the right one
        expect(r.checks['agent service']).toMatchObject({ status: 'pass', detail: `running (status socket ${svc.env.SPEAKER_AGENT_STATUS_SOCKET})` });
      } finally {
        await server.close();
      }
    } finally {
      svc.remove();
    }
  }, 120_000);
});

describe('doctor output', () => {
  it('regression: the PortAudio addon check printed ~64 "ALSA lib ... Unknown PCM" lines on the terminal', async () => {
    const r = await runCli(['doctor', '--skip-call', '--skip-echo'], dev.env, 60_000);
    expect(r.stdout).toMatch(/^addon: PortAudio\s+ok\s+naudiodon2: \d+ devices/m);
    expect(r.stderr.split('\n').filter((l) => l.includes('ALSA lib'))).toEqual([]);
  }, 120_000);
});

describe('doctor and the privacy mute', () => {
  it('regression: a muted microphone (or a corrupt mic.json, which counts as muted) was never mentioned: all green while the speaker could not hear', async () => {
    const micFile = path.join(dev.stateDir, 'mic.json');
    try {
      expect((await runCli(['mic', 'off'], dev.env)).code).toBe(0); // no daemon: written to mic.json
      const muted = (await doctor(dev.env)).checks['privacy mute'];
      expect(muted).toMatchObject({ status: 'warn', fix: 'speaker-agent mic on' });
      expect(muted.detail).toMatch(/muted/);

      writeFileSync(micFile, '{"muted": ', { mode: 0o600 });
      const corrupt = (await doctor(dev.env)).checks['privacy mute'];
      expect(corrupt.status).toBe('warn');
      expect(corrupt.detail).toContain(micFile);
      expect(corrupt.detail).toMatch(/counts as muted/);
      expect(corrupt.fix).toMatch(/^speaker-agent mic on/);

      expect((await runCli(['mic', 'on'], dev.env)).code).toBe(0);
      expect((await doctor(dev.env)).checks['privacy mute']).toMatchObject({ status: 'pass' });
    } finally {
      writeFileSync(micFile, '{"muted": false}\n', { mode: 0o600 });
    }
  }, 180_000);
});

describe('doctor and a wake word engine that never starts', () => {
  it('regression: the doctor gave up a wake word start whose model read never returns, then hung at exit (node waits for every thread); it reports and exits', async () => {
    const model = stuckFile();
    try {
      const stuck = { ...dev.env, SPEAKER_AGENT_WAKE_ENGINE: 'openwakeword', SPEAKER_AGENT_WAKE_MODEL: model.path, SPEAKER_AGENT_WAKE_START_TIMEOUT_MS: '2000' };
      const r = await doctor(stuck); // runCli kills it after 60 s: the hang
      expect(r.checks['wake word']).toMatchObject({ status: 'fail', detail: expect.stringMatching(/did not start within 2 s/), fix: expect.stringMatching(/raise listening\.wakeStartTimeoutMs/) });
      expect(r.code).toBe(EXIT_CODES.audio);
    } finally {
      model.remove();
    }
  }, 90_000);
});

describe('doctor and a server with its own CA', () => {
  it('regression: a server whose certificate comes from its own CA (a home server, mkcert, step-ca) got "UNABLE_TO_VERIFY_LEAF_SIGNATURE" and "check the network"; it names the CA and how to give it to node, and that works', async () => {
    const cert = serverCertificate(-1, 30);
    const server = https.createServer({ key: cert.key, cert: cert.cert }, (_req, res) => res.end('{}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
      const base: NodeJS.ProcessEnv = { ...dev.env, SPEAKER_AGENT_SERVER_URL: url };
      for (const k of ['NODE_EXTRA_CA_CERTS', 'NODE_USE_SYSTEM_CA', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'NODE_OPTIONS']) delete base[k];
      const reach = (await doctor(base)).checks['server reachable'];
      expect(reach).toMatchObject({ status: 'fail', detail: `${url}: the server's certificate is not signed by a CA this device trusts (UNABLE_TO_VERIFY_LEAF_SIGNATURE)` });
      expect(reach.fix).toMatch(/NODE_EXTRA_CA_CERTS=\/path\/to\/ca\.pem \(a file the service's user can read, [^)]*\) in \/etc\/speaker-agent\/environment/);
      expect(reach.fix).not.toMatch(/firewall/);
      // the fix works: the CA given to node
      expect((await doctor({ ...base, NODE_EXTRA_CA_CERTS: cert.caFile })).checks['server reachable']).toMatchObject({ status: 'pass' });
      if (nodeReadsSystemCaVariable()) {
        // and the system's CAs, on a Node that reads them. The system store here is OpenSSL's, pointed at the test
        // CA by SSL_CERT_FILE: adding it to /etc/ssl/certs would change this machine for every program.
        expect(reach.fix).toContain('NODE_USE_SYSTEM_CA=1 there');
        expect((await doctor({ ...base, SSL_CERT_FILE: cert.caFile })).checks['server reachable']).toMatchObject({ status: 'fail' });
        expect((await doctor({ ...base, SSL_CERT_FILE: cert.caFile, NODE_USE_SYSTEM_CA: '1' })).checks['server reachable']).toMatchObject({ status: 'pass' });
      } else {
        // an older Node: the option its NODE_OPTIONS takes, which works the same way (OpenSSL's store pointed at the CA)
        const setting = systemCaSetting();
        expect(reach.fix).toContain(`or ${setting} there`);
        const flag = /^NODE_OPTIONS=(\S+)/.exec(setting)![1]!;
        expect((await doctor({ ...base, SSL_CERT_FILE: cert.caFile, NODE_OPTIONS: flag })).checks['server reachable']).toMatchObject({ status: 'pass' });
      }
    } finally {
      await new Promise((r) => server.close(r));
      cert.remove();
    }
  }, 180_000);
});

describe('doctor and a clock months behind', () => {
  it('regression: with fake-hwclock\'s old time the server\'s certificate was "not yet valid", the clock check passed ("server sent no Date") and the fix pointed at the network; the clock check fails and names time sync', async () => {
    // a real HTTPS server whose certificate starts in 400 days: what a device whose clock is 400 days behind sees
    const cert = serverCertificate(400, 800);
    const server = https.createServer({ key: cert.key, cert: cert.cert }, (_req, res) => res.end('{}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
      const r = await doctor({ ...dev.env, SPEAKER_AGENT_SERVER_URL: url, NODE_EXTRA_CA_CERTS: cert.caFile });
      const reach = r.checks['server reachable'];
      expect(reach.status).toBe('fail');
      expect(reach.detail).toMatch(/certificate is not yet valid by this machine's clock/);
      expect(reach.fix).toMatch(/timedatectl set-ntp true/);
      expect(reach.fix).not.toMatch(/firewall/);
      const clock = r.checks.clock;
      expect(clock.status).toBe('fail');
      expect(clock.detail).toMatch(/the server's certificate is not yet valid by it/);
      expect(clock.fix).toMatch(/UDP port 123/);
    } finally {
      await new Promise((r) => server.close(r));
      cert.remove();
    }
  }, 120_000);

  it('an expired certificate (a clock run ahead, or a renewal that failed): the clock only warns, and the fix names both', async () => {
    const cert = serverCertificate(-800, -400);
    const server = https.createServer({ key: cert.key, cert: cert.cert }, (_req, res) => res.end('{}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
      const r = await doctor({ ...dev.env, SPEAKER_AGENT_SERVER_URL: url, NODE_EXTRA_CA_CERTS: cert.caFile });
      expect(r.checks['server reachable']).toMatchObject({ status: 'fail' });
      expect(r.checks['server reachable']!.fix).toMatch(/timedatectl set-ntp true.*renew it on the server/);
      expect(r.checks.clock).toMatchObject({ status: 'warn' });
      expect(r.checks.clock!.detail).toMatch(/the server's certificate is expired by it \(is this time right\?\)/);
    } finally {
      await new Promise((r) => server.close(r));
      cert.remove();
    }
  }, 120_000);
});

// as root only (CI is): a private mount namespace shows the CLI another prebuild folder name
describe.skipIf(process.getuid?.() !== 0)('doctor after a Node or Debian upgrade', () => {
  it('regression (a review of years in a kitchen): the Opus check used the package\'s loader, which wants a folder named after this Node\'s ABI and glibc: "FAIL" beside a working agent, and a fix (npm ci) that empties the live node_modules; it loads Opus as the agent does', async () => {
    const prebuild = path.join(ROOT, 'node_modules/@discordjs/opus/prebuild');
    const [built] = readdirSync(prebuild);
    const shown = mkdtempSync(path.join(os.tmpdir(), 'opus-prebuild-'));
    // the same binary under the name a build for another glibc has (a Debian 12 -> 13 upgrade changes it)
    const renamed = built!.replace(/glibc-[\d.]+$/, 'glibc-0.1');
    expect(renamed).not.toBe(built);
    mkdirSync(path.join(shown, renamed));
    copyFileSync(path.join(prebuild, built!, 'opus.node'), path.join(shown, renamed, 'opus.node'));
    const wrap = ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', `mount --bind '${shown}' '${prebuild}' && exec "$@"`, 'sh'];
    try {
      const r = await runCli(['doctor', '--json', '--skip-call', '--skip-echo'], dev.env, 60_000, { wrap });
      const checks = Object.fromEntries(json<{ checks: Check[] }>(r).checks.map((c) => [c.name, c]));
      expect(checks['addon: Opus']).toMatchObject({ status: 'pass' });
      expect(checks['addon: Opus']!.detail).toMatch(/encodes a 20 ms frame to \d+ bytes/);

      // no binary at all: it fails, and the fix is setup.sh here (install.sh in the installed tree), never npm ci
      rmSync(path.join(shown, renamed), { recursive: true });
      const gone = await runCli(['doctor', '--json', '--skip-call', '--skip-echo'], dev.env, 60_000, { wrap });
      const opus = json<{ checks: Check[] }>(gone).checks.find((c) => c.name === 'addon: Opus')!;
      expect(opus.status).toBe('fail');
      expect(opus.fix).toMatch(/bash scripts\/setup\.sh/);
      expect(opus.fix).not.toMatch(/npm ci/);
    } finally {
      rmSync(shown, { recursive: true, force: true });
    }
  }, 180_000);
});

// as root only (CI is): a private mount namespace hides Debian's libopus from the CLI
describe.skipIf(process.getuid?.() !== 0)('doctor and the libraries the agent loads', () => {
  it("regression: a speaker updated with `git pull` alone (no libopus0: the call's decoder moved to Debian's libopus) was all green, and every call failed", async () => {
    const ok = (await doctor(dev.env)).checks['library: libopus'];
    expect(ok).toMatchObject({ status: 'pass' });
    expect(ok.detail).toMatch(/^libopus \d+\.\d+.*: decodes a 20 ms frame to 960 samples$/);

    // the library as a board without it has it: not there (an empty file in its place cannot be loaded)
    // the file the dynamic loader picks: loaded here, then read from this process's own mappings
    libopusVersion();
    const lib = /\s(\/\S*libopus\.so\.0\S*)$/m.exec(readFileSync('/proc/self/maps', 'utf8'))![1]!;
    const wrap = ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', `mount --bind /dev/null '${lib}' && exec "$@"`, 'sh'];
    const r = await runCli(['doctor', '--json', '--skip-call', '--skip-echo'], dev.env, 60_000, { wrap });
    const c = json<{ checks: Check[] }>(r).checks.find((x) => x.name === 'library: libopus')!;
    expect(c).toMatchObject({ status: 'fail', category: 'audio' });
    expect(c.detail).toMatch(/needs libopus\.so\.0/);
    expect(c.fix).toMatch(/^sudo apt install libopus0/);
    expect(r.code).not.toBe(0);
    expect(r.stderr).not.toMatch(/TypeError|at .*\.js:\d+/);
  }, 180_000);
});

describe('doctor and the state directory', () => {
  it.runIf(canMount)("regression: a state directory kept in memory (a tmpfs, or raspi-config's overlay file system) was not mentioned: the identity and the privacy mute went at every reboot", async () => {
    const mem = mkdtempSync(path.join(os.tmpdir(), 'doctor-tmpfs-'));
    execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', mem]);
    try {
      const state = path.join(mem, 'speaker-agent');
      const c = (await doctor({ ...dev.env, SPEAKER_AGENT_STATE_DIR: state })).checks['state storage'];
      expect(c).toMatchObject({ status: 'warn', detail: `the identity and the privacy mute will not survive a reboot: ${state} is on a tmpfs (memory) at ${mem}` });
      expect(c.fix).toMatch(/^keep the state directory on storage that survives a reboot/);
      // on a disk: lasts
      const disk = lastingDir();
      if (disk) expect((await doctor({ ...dev.env, SPEAKER_AGENT_STATE_DIR: path.join(disk, '.doctor-state-not-made') })).checks['state storage']).toMatchObject({ status: 'pass' });
    } finally {
      execFileSync('umount', [mem]);
      rmSync(mem, { recursive: true, force: true });
    }
  }, 180_000);
});

describe("doctor on a board whose ALSA default is a sound server the service cannot reach", () => {
  it("regression (Raspberry Pi OS desktop's pipewire-alsa, seen by the system service): the mixer failed on every call (\"Connection refused\") and the streams took PortAudio's first device; both now use the first card's own default, sysdefault", async () => {
    // alsa-lib's configuration as such a board has it: `default` a sound server's plugin whose server this user
    // cannot reach (PulseAudio's plugin at a socket nobody listens on, for PipeWire's), `sysdefault` the card
    // (here the virtual card). PULSE_SERVER would override the plugins' own servers, so it is left out.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'doctor-alsa-'));
    try {
      const nobody = `unix:${path.join(dir, 'nobody-listens', 'native')}`;
      const card = process.env.PULSE_SERVER!;
      const conf = path.join(dir, 'alsa.conf');
      writeFileSync(
        conf,
        // a file of its own, not alsa.conf with additions: alsa.conf's hooks (/etc/alsa/conf.d, ~/.asoundrc) would
        // override `default` after it
        [
          `pcm.default { type pulse server "${nobody}" }`,
          `ctl.default { type pulse server "${nobody}" }`,
          `pcm.sysdefault { type pulse server "${card}" }`,
          `ctl.sysdefault { type pulse server "${card}" }`,
          '',
        ].join('\n'),
      );
      const { PULSE_SERVER: _server, ...rest } = dev.env;
      const env = { ...rest, ALSA_CONFIG_PATH: conf };
      const { checks } = await doctor(env);
      expect(checks.playback).toMatchObject({ status: 'pass' });
      expect(checks.mixer.status).toBe('pass');
      expect(checks.mixer.detail).toMatch(/^card sysdefault \(ALSA's default sound server does not answer this user\), control Master: writable/);
      const devices = await runCli(['devices'], env, 60_000);
      expect(devices.stdout).toMatch(/configured capture: +default -> sysdefault\nconfigured playback: default -> sysdefault/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
