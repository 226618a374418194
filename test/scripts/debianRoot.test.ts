// The README's first command on a fresh Debian 13 (trixie) root: scripts/check-debian-root.sh debootstraps it
// (cached), copies this checkout in, runs `bash scripts/setup.sh` (Debian's nodejs 20) and `npm start`, which
// must reach "demo done", then `scripts/install.sh --companion --yes` in the root, where systemd is not PID 1: the
// services installed and enabled, not started, and a second run changes nothing. Minutes of apt and native compiles, so it runs only when asked:
//   SPEAKER_AGENT_TEST_DEBIAN_ROOT=1 npx vitest run test/scripts/debianRoot.test.ts      (as root)
// The script exits 77 when it cannot run here (not root, no debootstrap, no network to Debian's mirror): skipped.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SCRIPT = path.resolve(import.meta.dirname, '../../scripts/check-debian-root.sh');
const enabled = process.env.SPEAKER_AGENT_TEST_DEBIAN_ROOT === '1';

describe('a fresh Debian 13 root', () => {
  it.skipIf(!enabled)(
    'bash scripts/setup.sh && npm start completes the scripted conversation, install.sh installs the services (skipped unless SPEAKER_AGENT_TEST_DEBIAN_ROOT=1: needs root, Debian\'s mirror, ~4 min)',
    async (ctx) => {
      let out = '';
      const code = await new Promise<number>((resolve, reject) => {
        const p = spawn('bash', [SCRIPT, 'trixie'], { stdio: ['ignore', 'pipe', 'pipe'] });
        p.stdout.on('data', (d: Buffer) => (out += d));
        p.stderr.on('data', (d: Buffer) => (out += d));
        p.on('error', reject);
        p.on('close', (c) => resolve(c ?? -1));
      });
      if (code === 77) ctx.skip(out.trim().split('\n').pop());
      expect(code, out).toBe(0);
      expect(out).toMatch(/OK \[trixie\]: bash scripts\/setup\.sh [\d.]+ s, npm start -> demo done [\d.]+ s, install\.sh [\d.]+ s/);
      expect(out).toContain('setup.sh run again: nothing to install');
      expect(out).toMatch(/^ {4}==> systemd is not running here \(systemctl: offline; a chroot or a container\): speaker-agent\.service speaker-agent-companion\.service enabled, not started/m);
      expect(out).toMatch(/install\.sh done in [\d.]+ s: units enabled, not started \(no systemd as PID 1\), enrolled, the installed addons load/);
      expect(out).toContain('install.sh run again: nothing changed');
    },
    45 * 60_000,
  );
});
