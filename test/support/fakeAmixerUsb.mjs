#!/usr/bin/env node
// FakeAmixerUsb: stands in for `amixer` on a USB card whose only playback control, "Speaker", has a volume
// (37 coarse steps, stereo) but NO mute switch. Such a card cannot exist on the CI machine (no USB, no sound
// card), and the virtual PulseAudio card always has a switch, so the mixer's mute emulation is tested against
// this fake. It prints exactly the format real amixer prints (test/fixtures/amixer/usb-*.txt) and keeps its
// level in the file named by FAKE_AMIXER_STATE.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const stateFile = process.env.FAKE_AMIXER_STATE;
if (!stateFile) {
  process.stderr.write('FAKE_AMIXER_STATE not set\n');
  process.exit(1);
}
const MAX = 37;
let raw = existsSync(stateFile) ? Number(readFileSync(stateFile, 'utf8')) : 30;
const pct = () => Math.round((raw / MAX) * 100);
const db = () => (raw === 0 ? -37 : raw - MAX).toFixed(2);

const rest = [...args];
if (rest[0] !== '-c' || rest[1] !== '1') {
  process.stderr.write(`Invalid card number '${rest[1] ?? ''}'.\n`);
  process.exit(1);
}
rest.splice(0, 2);
if (rest[0] === '-M') rest.shift();
const [cmd, control, value] = rest;

const speaker = () =>
  `Simple mixer control 'Speaker',0\n  Capabilities: pvolume\n  Playback channels: Front Left - Front Right\n  Limits: Playback 0 - ${MAX}\n  Mono:\n` +
  `  Front Left: Playback ${raw} [${pct()}%] [${db()}dB]\n  Front Right: Playback ${raw} [${pct()}%] [${db()}dB]\n`;

if (cmd === 'scontents') {
  process.stdout.write(
    "Simple mixer control 'Auto Gain Control',0\n  Capabilities: pswitch pswitch-joined\n  Playback channels: Mono\n  Mono: Playback [on]\n" +
      "Simple mixer control 'Mic',0\n  Capabilities: cvolume cvolume-joined cswitch cswitch-joined\n  Capture channels: Mono\n  Limits: Capture 0 - 16\n  Mono: Capture 12 [75%] [18.00dB] [on]\n" +
      speaker(),
  );
  process.exit(0);
}
if ((cmd === 'sget' || cmd === 'sset') && control !== 'Speaker') {
  process.stderr.write(`amixer: Unable to find simple control '${control}',0\n\n`);
  process.exit(1);
}
if (cmd === 'sget') {
  process.stdout.write(speaker());
  process.exit(0);
}
if (cmd === 'sset') {
  const m = /^(\d+)%$/.exec(value ?? '');
  if (!m) {
    process.stderr.write('amixer: Invalid command!\n'); // mute/unmute on a control without a switch
    process.exit(1);
  }
  raw = Math.round((Number(m[1]) / 100) * MAX);
  writeFileSync(stateFile, String(raw));
  process.stdout.write(speaker());
  process.exit(0);
}
process.stderr.write(`fake amixer: unsupported arguments ${args.join(' ')}\n`);
process.exit(1);
