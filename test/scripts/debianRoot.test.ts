// The README's first command on a fresh Debian 13 (trixie) root: scripts/check-debian-root.sh debootstraps it
// (cached), copies this checkout in, runs `bash scripts/setup.sh` (Debian's nodejs 20) and `npm start`, which
// must reach "demo done", then `scripts/install.sh --companion --yes` in the root, where systemd is not PID 1: the
// services installed and enabled, not started, and a second run changes nothing. Minutes of apt and native compiles, so it runs only when asked:
//   SPEAKER_AGENT_TEST_DEBIAN_ROOT=1 npx vitest run test/scripts/debianRoot.test.ts      (as root)
// The script exits 77 when it cannot run here (not root, no debootstrap, no network to Debian's mirror): skipped.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCheckScript } from '../support/checkScript.js';

const SCRIPT = path.resolve(import.meta.dirname, '../../scripts/check-debian-root.sh');
const enabled = process.env.SPEAKER_AGENT_TEST_DEBIAN_ROOT === '1';

describe('a fresh Debian 13 root', () => {
  it.skipIf(!enabled)(
    'bash scripts/setup.sh && npm start completes the scripted conversation, install.sh installs the services (skipped unless SPEAKER_AGENT_TEST_DEBIAN_ROOT=1: needs root, Debian\'s mirror, ~4 min)',
    async (ctx) => {
      const { code, out } = await runCheckScript(SCRIPT, ['trixie'], ctx.signal);
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
