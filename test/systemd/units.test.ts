// The systemd units pass `systemd-analyze verify` (no warnings) and carry the properties issue #4 asks for.
// verify checks that ExecStart's binary exists, so each unit is verified from a temp copy whose
// /usr/bin/node and /opt/speaker-agent are replaced by this machine's node and this checkout (install.sh does
// the same rewrite when node lives elsewhere).
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { AUDIO_THREAD_PRIORITY } from '../../src/agent/audio/portAudioBackend.js';
import { unitNodeFlags } from '../../bench/unitFlags.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const UNITS = ['speaker-agent.service', 'speaker-agent-companion.service'];
const tmp = mkdtempSync(path.join(os.tmpdir(), 'units-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function localCopy(unit: string, extra = ''): string {
  const text = readFileSync(path.join(root, 'systemd', unit), 'utf8')
    .replaceAll('/usr/bin/node', process.execPath)
    .replaceAll('/opt/speaker-agent', root)
    .replace('[Service]\n', `[Service]\n${extra}`);
  const file = path.join(tmp, unit);
  writeFileSync(file, text);
  return file;
}

async function verify(file: string): Promise<{ code: number; stderr: string }> {
  try {
    const r = await run('systemd-analyze', ['verify', file]);
    return { code: 0, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

function directives(unit: string): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const line of readFileSync(path.join(root, 'systemd', unit), 'utf8').split('\n')) {
    const r = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (r) m.set(r[1], [...(m.get(r[1]) ?? []), r[2]]);
  }
  return m;
}

describe('systemd units', () => {
  for (const unit of UNITS) {
    it(`${unit} passes systemd-analyze verify without warnings`, async () => {
      const r = await verify(localCopy(unit));
      expect(r.stderr.trim()).toBe('');
      expect(r.code).toBe(0);
    });

    it(`${unit}: notify service, restarted always, watchdog, hardened`, () => {
      const d = directives(unit);
      const one = (k: string) => d.get(k)?.[0];
      expect(one('Type')).toBe('notify');
      expect(one('NotifyAccess')).toBe('main');
      expect(one('Restart')).toBe('always');
      expect(Number(one('RestartSec'))).toBeLessThanOrEqual(5);
      expect(Number(one('WatchdogSec'))).toBeGreaterThan(0);
      expect(one('After')).toContain('network-online.target');
      expect(one('Wants')).toContain('network-online.target');
      expect(one('StateDirectory')).toMatch(/^speaker-agent/);
      for (const k of ['NoNewPrivileges', 'ProtectHome', 'PrivateTmp', 'RestrictSUIDSGID', 'LockPersonality']) {
        expect(one(k), k).toBe('yes');
      }
      expect(one('ProtectSystem')).toBe('strict');
      expect(one('RestrictAddressFamilies')).toBe('AF_UNIX AF_INET AF_INET6 AF_NETLINK');
      expect(one('CapabilityBoundingSet')).toBe('');
      expect(one('User')).toBe('speaker-agent');
    });
  }

  it('the agent unit waits for sound, may use ALSA devices only, and keeps its config in /etc', () => {
    const d = directives('speaker-agent.service');
    expect(d.get('After')?.[0]).toContain('sound.target');
    expect(d.get('SupplementaryGroups')?.[0]).toBe('audio');
    expect(d.get('DevicePolicy')?.[0]).toBe('closed');
    expect(d.get('DeviceAllow')).toEqual(['char-alsa rw']);
    expect(d.get('ConfigurationDirectory')?.[0]).toBe('speaker-agent');
    // the speaker's own card, waited for if it is late: never a virtual one
    expect(d.get('ExecStart')?.[0]).toMatch(/speaker-agent\.js run --virtual-audio never$/);
    // the audio threads' real-time priority (portAudioBackend.ts AUDIO_THREAD_PRIORITY), no capability needed
    expect(d.get('LimitRTPRIO')).toEqual([String(AUDIO_THREAD_PRIORITY)]);
    expect(d.get('RestrictRealtime')).toBeUndefined();
  });

  it('the companion unit runs `speaker-agent companion` without any device access', () => {
    const d = directives('speaker-agent-companion.service');
    expect(d.get('ExecStart')?.[0]).toMatch(/speaker-agent\.js companion$/);
    expect(d.get('PrivateDevices')?.[0]).toBe('yes');
  });

  // install.sh rewrites /opt/speaker-agent to its PREFIX and builds node_modules there as setup.sh does here
  it('both units preload vendor/speaker-sys\'s node_preload.so, which the build puts where they look', () => {
    for (const unit of UNITS) {
      const preload = directives(unit).get('Environment')?.find((e) => e.startsWith('LD_PRELOAD='));
      expect(preload, unit).toBe('LD_PRELOAD=/opt/speaker-agent/node_modules/speaker-sys/build/Release/node_preload.so');
      expect(existsSync(preload!.slice('LD_PRELOAD='.length).replace('/opt/speaker-agent', root)), unit).toBe(true);
    }
  });

  it('regression: the benches read the units\' node flags (they failed once the unit gave `run` an option of its own)', () => {
    expect(unitNodeFlags('speaker-agent.service', 'run')).toEqual(['--max-semi-space-size=1', '--no-sparkplug']);
    expect(unitNodeFlags('speaker-agent-companion.service', 'companion')).toEqual([]);
  });

  // the ExecStart lines as written, paths rewritten as install.sh does, with the CLI's --version for the command
  for (const [unit, command] of [['speaker-agent.service', 'run'], ['speaker-agent-companion.service', 'companion']] as const) {
    it(`${unit}: ExecStart starts node through bin/launch-node.sh, also with a Node that refuses a flag`, () => {
      const line = directives(unit).get('ExecStart')![0].replaceAll('/usr/bin/node', process.execPath).replaceAll('/opt/speaker-agent', root);
      const argv = line.split(' ');
      const version = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
      const script = argv.indexOf(path.join(root, 'bin/speaker-agent.js'));
      expect(argv[script + 1]).toBe(command);
      const asWritten = spawnSync(argv[0], [...argv.slice(1, script + 1), '--version'], { encoding: 'utf8' });
      expect(asWritten.stderr).toBe('');
      expect(asWritten.stdout.trim()).toBe(version);
      const dash = argv.indexOf('--');
      const refused = spawnSync(argv[0], [...argv.slice(1, dash), '--no-flag-this-node-knows', ...argv.slice(dash, script + 1), '--version'], { encoding: 'utf8' });
      expect(refused.stdout.trim()).toBe(version);
      expect(refused.stderr).toContain('refuses the option --no-flag-this-node-knows');
    });
  }

  it('verify does flag a broken unit (the check above can fail)', async () => {
    const r = await verify(localCopy('speaker-agent.service', 'NoSuchDirective=1\n'));
    expect(r.stderr).toMatch(/Unknown key 'NoSuchDirective'/);
  });
});
