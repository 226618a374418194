// Runs before every test file (vitest setupFiles): puts the shared virtual sound card back into a known state.
// Files share one PulseAudio daemon, and a file that drives the volume functions leaves the speaker at 40 % (or
// muted), or an echo test leaves a loopback behind; a later file measuring what the speaker played would then read
// an attenuated signal. Each file starts from: sinks and mic at 100 %, unmuted, defaults speaker/mic, no loopback.
import { execFileSync } from 'node:child_process';
import { beforeAll } from 'vitest';
import { VIRTUAL } from './virtualAudio.js';

function pactl(...args: string[]): string {
  return execFileSync('pactl', args, { encoding: 'utf8', env: process.env, stdio: ['ignore', 'pipe', 'ignore'] });
}

beforeAll(() => {
  if (!process.env.PULSE_SERVER) return;
  for (const line of pactl('list', 'short', 'modules').split('\n')) {
    const [id, name, args = ''] = line.split('\t');
    // the speaker's keep-alive into "discard" is part of the card (scripts/virtual-audio.sh)
    if (name === 'module-loopback' && !args.includes('sink=discard')) pactl('unload-module', id);
  }
  pactl('set-default-sink', VIRTUAL.speakerSink);
  pactl('set-default-source', VIRTUAL.micSource);
  for (const sink of [VIRTUAL.speakerSink, VIRTUAL.micSink]) {
    pactl('set-sink-volume', sink, '100%');
    pactl('set-sink-mute', sink, '0');
  }
  pactl('set-source-volume', VIRTUAL.micSource, '100%');
  pactl('set-source-mute', VIRTUAL.micSource, '0');
});
