// Real audio in and out of the virtual sound card (scripts/virtual-audio.sh), plus small signal helpers:
// - recordSource('speaker.monitor', ms): what the agent played, through PulseAudio's own recorder (parec)
// - speakIntoMic(samples): plays samples into the virtual microphone through pacat
// - tone(), dominantFrequency(), rms(): test signals and their analysis (Goertzel, no dependencies)
import { spawn, type ChildProcess } from 'node:child_process';

const RATE = 48_000;
const RAW = ['--format=s16le', `--rate=${RATE}`, '--channels=1', '--raw', '--latency-msec=10'];

/** A running recorder of a PulseAudio source; stop() returns the samples recorded so far. */
export interface Recording {
  stop(): Promise<Int16Array>;
}

export function startRecording(source: string): Recording {
  const child = spawn('parec', [`--device=${source}`, ...RAW], { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return {
    async stop() {
      await killAndWait(child);
      const all = Buffer.concat(chunks);
      if (all.length === 0 && stderr) throw new Error(`parec recorded nothing from ${source}: ${stderr.trim()}`);
      const aligned = Buffer.alloc(all.length & ~1);
      all.copy(aligned, 0, 0, aligned.length);
      return new Int16Array(aligned.buffer, aligned.byteOffset, aligned.length / 2);
    },
  };
}

export async function recordSource(source: string, ms: number): Promise<Int16Array> {
  const rec = startRecording(source);
  await sleep(ms);
  return rec.stop();
}

/** Plays samples into a sink (default the virtual microphone's mic_in) and resolves when pacat has drained. */
export function playIntoSink(samples: Int16Array, sink = 'mic_in'): { done: Promise<void>; stop: () => Promise<void> } {
  const child = spawn('pacat', ['--playback', `--device=${sink}`, ...RAW], { env: process.env, stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 || signal === 'SIGTERM' ? resolve() : reject(new Error(`pacat exited ${code ?? signal}: ${stderr.trim()}`)),
    );
  });
  child.stdin.on('error', () => {}); // killed while writing
  child.stdin.end(Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength));
  return { done, stop: () => killAndWait(child) };
}

export function tone(freqHz: number, ms: number, amplitude = 8000): Int16Array {
  const n = Math.round((RATE * ms) / 1000);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * freqHz * i) / RATE));
  return out;
}

export function rms(samples: Int16Array, from = 0, to = samples.length): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += samples[i] * samples[i];
  return to > from ? Math.sqrt(sum / (to - from)) : 0;
}

/** Power of one frequency in a block (Goertzel), normalised by block length. */
export function goertzelPower(samples: Int16Array, freqHz: number, from = 0, to = samples.length): number {
  const w = (2 * Math.PI * freqHz) / RATE;
  const coeff = 2 * Math.cos(w);
  let s1 = 0;
  let s2 = 0;
  for (let i = from; i < to; i++) {
    const s0 = samples[i] + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  const n = Math.max(1, to - from);
  return (s1 * s1 + s2 * s2 - coeff * s1 * s2) / (n * n);
}

/** The strongest frequency between 50 Hz and 4 kHz, in 10 Hz steps, over the loudest second of the signal. */
export function dominantFrequency(samples: Int16Array): number {
  const win = Math.min(samples.length, RATE);
  let bestStart = 0;
  let bestRms = -1;
  for (let start = 0; start + win <= samples.length; start += RATE / 10) {
    const r = rms(samples, start, start + win);
    if (r > bestRms) {
      bestRms = r;
      bestStart = start;
    }
  }
  let best = 0;
  let bestPower = -1;
  for (let f = 50; f <= 4000; f += 10) {
    const p = goertzelPower(samples, f, bestStart, bestStart + win);
    if (p > bestPower) {
      bestPower = p;
      best = f;
    }
  }
  return best;
}

/** Fraction of the block's energy at freqHz (1 = a pure tone). */
export function toneFraction(samples: Int16Array, freqHz: number, from = 0, to = samples.length): number {
  const total = rms(samples, from, to) ** 2;
  if (total === 0) return 0;
  // A pure sine of amplitude A has mean power A^2/2 and Goertzel power A^2/4.
  return Math.min(1, (2 * goertzelPower(samples, freqHz, from, to)) / total);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function killAndWait(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * Waits until cond() holds (polling every 10 ms), failing after timeoutMs. PulseAudio's ALSA plugin takes
 * up to ~1 s after a stream starts before audio flows on the virtual card, so tests wait for the first frames.
 */
export async function waitUntil(cond: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/**
 * Runs a PulseAudio CLI command (e.g. "kill-sink-input 7", which pactl cannot do) through
 * module-cli-protocol-unix, loaded on first use next to the daemon's native socket.
 */
export async function pulseCli(command: string): Promise<string> {
  const { execFile } = await import('node:child_process');
  const net = await import('node:net');
  const server = process.env.PULSE_SERVER ?? '';
  const native = server.replace(/^unix:/, '');
  if (!native.startsWith('/')) throw new Error(`pulseCli needs PULSE_SERVER=unix:/path, got ${JSON.stringify(server)}`);
  const socket = native.replace(/native$/, 'cli');
  const { existsSync } = await import('node:fs');
  if (!existsSync(socket)) {
    await new Promise<void>((resolve, reject) =>
      execFile('pactl', ['load-module', 'module-cli-protocol-unix', `socket=${socket}`], { env: process.env }, (err) => (err ? reject(err) : resolve())),
    );
  }
  return new Promise((resolve, reject) => {
    const c = net.createConnection(socket);
    let out = '';
    c.on('data', (d) => (out += d.toString()));
    c.on('error', reject);
    c.on('connect', () => c.end(`${command}\n`));
    c.on('close', () => resolve(out));
  });
}

/**
 * Records `source` in windows of `windowMs` until one window's dominant frequency is `freqHz`, failing after
 * `timeoutMs`. For tests that check a device *recovers* (not how fast): on a loaded machine parec itself can
 * take a second to attach, so one fixed window may hold only silence. Returns the window that matched.
 */
export async function hearTone(source: string, freqHz: number, timeoutMs = 8000, windowMs = 1000): Promise<Int16Array> {
  const end = performance.now() + timeoutMs;
  const heard: number[] = [];
  for (;;) {
    const rec = startRecording(source);
    await sleep(windowMs);
    const samples = await rec.stop();
    const f = dominantFrequency(samples);
    if (f === freqHz) return samples;
    heard.push(samples.length === 0 ? -1 : rms(samples, 0, samples.length) < 1 ? 0 : f);
    if (performance.now() > end) {
      throw new Error(
        `${source} did not carry ${freqHz} Hz within ${timeoutMs} ms; windows heard (Hz, 0 = silence, -1 = nothing recorded): ${heard.join(', ')}`,
      );
    }
  }
}
