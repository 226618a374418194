// `speaker-agent enroll` (src/cli/commands/enroll.ts) as a maker meets it, run as the real CLI against a real
// companion: a rejected key or URL is not saved over the working one, the advice for a rejection follows the
// server's code (and, followed, works), and a full disk is a clear error naming the file that was not saved.
// From a review of the maker's experience (regressions named after the bugs).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceDirs, enrollDevice, json, onFullDisk, runCli, startTestCompanion, type DeviceDirs, type TestCompanion } from '../../support/cli.js';

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

const configOf = (d: DeviceDirs) => JSON.parse(readFileSync(path.join(d.configDir, 'config.json'), 'utf8')) as { server: { url: string; workspaceKey: string } };

describe('enroll: a rejection', () => {
  it('regression: `enroll --workspace-key wk_typo` saved the rejected key over the good one (the speaker broke at its next restart), and advised the lost-secret recovery', async () => {
    const before = readFileSync(path.join(dev.configDir, 'config.json'), 'utf8');
    const r = await runCli(['enroll', '--workspace-key', 'wk_typo'], dev.env);
    expect(r.code).toBe(4);
    expect(readFileSync(path.join(dev.configDir, 'config.json'), 'utf8')).toBe(before);
    expect(r.stdout).toMatch(/^Not saved: server\.workspaceKey/m);
    expect(r.stdout).toMatch(/check the workspace key \(dashboard -> workspace settings\), then `speaker-agent enroll --workspace-key/);
    expect(r.stdout).not.toMatch(/reset-identity|restore the original/);
    // said once: it was "The server rejected this device: the server rejected this device: ..."
    expect(r.stdout.match(/rejected this device/gi)).toHaveLength(1);
    expect(r.stdout).toContain('invalid_workspace_key');
    // the speaker still works with what it had
    expect(json<{ verdict: string; configChanged: string[] }>(await runCli(['enroll', '--json'], dev.env))).toMatchObject({ verdict: 'accepted', configChanged: [] });

    // a server URL that does not answer is not saved either
    const down = await runCli(['enroll', '--server-url', 'http://127.0.0.1:9', '--json'], dev.env);
    expect(down.code).toBe(5);
    expect(configOf(dev).server.url).toBe(companion.url);
  }, 120_000);

  it('--no-verify saves the values without asking the server, as before', async () => {
    const other = deviceDirs();
    try {
      const r = await runCli(['enroll', '--server-url', 'http://127.0.0.1:9', '--no-verify', '--json'], { ...other.env, SPEAKER_AGENT_WORKSPACE_KEY: 'wk_offline' });
      expect(r.code, r.stderr).toBe(0);
      expect(json<{ verdict: string; configChanged: string[] }>(r)).toMatchObject({ verdict: 'skipped', configChanged: ['server.url', 'server.workspaceKey'] });
      expect(configOf(other).server).toEqual({ url: 'http://127.0.0.1:9', workspaceKey: 'wk_offline' });
    } finally {
      other.remove();
    }
  }, 60_000);

  it('regression: a secret mismatch advised the admin reset then `enroll --reset-identity`, which abandons the client id just reset; the advised plain `enroll` is accepted for the same id', async () => {
    const lost = deviceDirs();
    try {
      const { clientId } = json<{ clientId: string }>(await enrollDevice(lost, companion));
      const file = path.join(lost.stateDir, 'identity.json');
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), clientSecret: 'y'.repeat(43) }), { mode: 0o600 });
      const r = await runCli(['enroll'], lost.env);
      expect(r.code).toBe(4);
      expect(r.stdout).toContain('secret_mismatch');
      expect(r.stdout).toMatch(/restore .*identity\.json from a backup/);
      expect(r.stdout).toContain(`speaker-agent companion client reset ${clientId}`);
      expect(r.stdout).not.toContain('reset-identity');
      expect(r.stdout.match(/rejected this device/gi)).toHaveLength(1);
      expect((await runCli(['companion', 'client', 'reset', clientId, '--data-dir', companion.dataDir], lost.env)).code).toBe(0);
      const again = await runCli(['enroll', '--json'], lost.env);
      expect(again.code, again.stdout + again.stderr).toBe(0);
      expect(json<{ verdict: string; clientId: string }>(again)).toMatchObject({ verdict: 'accepted', clientId });
    } finally {
      lost.remove();
    }
  }, 120_000);
});

// as root only (CI is): mounting the small filesystem
describe.skipIf(process.getuid?.() !== 0)('enroll on a full disk', () => {
  it('regression: a full disk gave a bare "ENOSPC: no space left on device, write"; it names the file and says the identity was not saved', async () => {
    const d = deviceDirs();
    try {
      mkdirSync(d.stateDir, { recursive: true });
      const r = await runCli(['enroll', '--server-url', companion.url, '--no-verify'], { ...d.env, SPEAKER_AGENT_WORKSPACE_KEY: companion.workspaceKey }, 25_000, { wrap: onFullDisk(d.stateDir) });
      expect(r.code).toBe(3);
      expect(r.stderr).toContain(path.join(d.stateDir, 'identity.json'));
      expect(r.stderr).toMatch(/no space left on device/);
      expect(r.stderr).toMatch(/identity was not saved/);
    } finally {
      d.remove();
    }
  }, 60_000);

  it('regression: a full disk under config.json gave a bare ENOSPC; it names config.json and says it was not saved', async () => {
    const d = deviceDirs();
    try {
      mkdirSync(d.configDir, { recursive: true });
      const r = await runCli(['enroll', '--server-url', companion.url, '--no-verify', '--json'], { ...d.env, SPEAKER_AGENT_WORKSPACE_KEY: companion.workspaceKey }, 25_000, { wrap: onFullDisk(d.configDir) });
      expect(r.code).toBe(3);
      const e = JSON.parse(r.stderr) as { error: { code: string; message: string } };
      expect(e.error.message).toContain(path.join(d.configDir, 'config.json'));
      expect(e.error.message).toMatch(/no space left on device/);
      expect(e.error.message).toMatch(/configuration was not saved/);
    } finally {
      d.remove();
    }
  }, 60_000);
});

// as root only (CI is): the CLI runs as a maker without sudo
describe.skipIf(process.getuid?.() !== 0)('enroll on an installed speaker, without sudo', () => {
  it('regression: an unreadable config.json (0600 root\'s) was reported as a broken file to fix or remove; it says permission denied and sudo', async () => {
    const svc = deviceDirs();
    try {
      mkdirSync(svc.configDir, { recursive: true, mode: 0o755 });
      writeFileSync(path.join(svc.configDir, 'config.json'), JSON.stringify({ server: { url: companion.url } }), { mode: 0o600 });
      mkdirSync(svc.stateDir, { recursive: true, mode: 0o755 });
      const r = await runCli(['enroll', '--check'], svc.env, 25_000, { uid: 4244, gid: 4244 });
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(/cannot read the configuration .*config\.json: permission denied\. Run it with sudo/);
      expect(r.stderr).not.toMatch(/remove the file/);
    } finally {
      svc.remove();
    }
  }, 60_000);
});
