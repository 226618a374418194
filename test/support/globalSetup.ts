// Starts the virtual sound card (PulseAudio null sinks, scripts/virtual-audio.sh) once for the whole run, so
// every test that opens an audio device, plays into the microphone or reads the mixer uses real ALSA devices.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
// SPEAKER_AGENT_TEST_PULSE_DIR gives a run its own sound server, so two vitest runs in one tree (engineers working
// in parallel) do not stop each other's daemon at teardown.
const pulseDir = () => process.env.SPEAKER_AGENT_TEST_PULSE_DIR ?? path.join(root, '.test-runtime', 'pulse');

export function setup(): void {
  const dir = pulseDir();
  mkdirSync(dir, { recursive: true });
  const out = execFileSync(path.join(root, 'scripts/virtual-audio.sh'), ['start'], {
    env: { ...process.env, SPEAKER_AGENT_PULSE_DIR: dir },
    encoding: 'utf8',
  });
  for (const line of out.split('\n')) {
    const m = /^export (\w+)=(.*)$/.exec(line.trim());
    if (m) process.env[m[1]] = m[2];
  }
}

export function teardown(): void {
  const dir = pulseDir();
  try {
    execFileSync(path.join(root, 'scripts/virtual-audio.sh'), ['stop'], {
      env: { ...process.env, SPEAKER_AGENT_PULSE_DIR: dir },
    });
  } catch {
    /* already gone */
  }
}
