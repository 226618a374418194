// Starts the virtual sound card (PulseAudio null sinks, scripts/virtual-audio.sh) once for the whole run, so
// every test that opens an audio device, plays into the microphone or reads the mixer uses real ALSA devices.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { rmSync } from 'node:fs';
// @ts-expect-error plain JavaScript build script, no type declarations
import { bundle } from '../../scripts/build.mjs';

const root = path.resolve(import.meta.dirname, '../..');
// SPEAKER_AGENT_TEST_PULSE_DIR gives a run its own sound server, so two vitest runs in one tree (engineers working
// in parallel) do not stop each other's daemon at teardown.
const pulseDir = () => process.env.SPEAKER_AGENT_TEST_PULSE_DIR ?? path.join(root, '.test-runtime', 'pulse');

/** The CLI tests run what users run: the esbuild bundle (npm run build), built fresh for this run. */
const cliDir = path.join(root, '.test-runtime', `cli-${process.pid}`);

export async function setup(): Promise<void> {
  await (bundle as (o: object) => Promise<unknown>)({ outdir: cliDir, quiet: true });
  process.env.SPEAKER_AGENT_TEST_CLI = path.join(cliDir, 'speaker-agent.js');
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
  rmSync(cliDir, { recursive: true, force: true });
  const dir = pulseDir();
  try {
    execFileSync(path.join(root, 'scripts/virtual-audio.sh'), ['stop'], {
      env: { ...process.env, SPEAKER_AGENT_PULSE_DIR: dir },
    });
  } catch {
    /* already gone */
  }
}
