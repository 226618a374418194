// THE ECHO ROOM — an acoustic echo path on the virtual sound card (scripts/virtual-audio.sh), for the echo
// cancellation tests and bench (issue #15). What the agent plays into "speaker" comes back into the microphone:
//
//   speaker.monitor --parec--> delay D, gain g, room impulse response h --(+ near end + noise)--pacat--> mic_in -> mic
//
// It runs in its own process (echoRoomMain.ts), so a busy test process cannot make it underrun, and its delay
// search in a worker thread of that process (echoRoomSearch.ts), so its own measurement cannot either; its clock is
// the virtual card's (one output sample per input sample read), so the path neither drifts nor slips.
//
// - The delay is measured, not assumed: a probe recorder on "mic" is matched against what the room wrote (its
//   noise makes the match sharp even in silence), and each stream's sample clock is pinned to wall time by its
//   earliest chunk arrivals. The room sets its internal delay line so the speaker->mic delay (as two recorders
//   with the same 10 ms latency hear it) is the one asked for, keeps measuring it (every 500 ms) and reports it; a sudden rise of the streams' share (a pacat
//   underrun) is undone by dropping as much output; slow creep of the measurement is left alone (echoRoomMain.ts).
// - The impulse response is synthetic and sparse (cheap): a direct path, a few early reflections (3-23 ms) and a
//   decaying tail of random sparse taps to ~60 ms, normalised to unit energy; g = the attenuation (-6 dB: the
//   echo's power is the far end's power 6 dB down).
// - Near-end audio (a WAV's samples or a tone) is mixed in at a level relative to the echo's recent level, noise
//   at a fixed dBFS. Each component (echo, near end, noise, their sum) is kept, so metrics know exactly what
//   reached the microphone (test/support/echoMetrics.ts).
// - setDelay() changes the delay during a run (as a reopened device or a changed buffer would).
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const ROOM_RATE = 48_000;

export interface EchoRoomOptions {
  /** speaker -> mic delay of the direct path, 30-200 ms */
  delayMs: number;
  /** echo attenuation in dB (positive: 6 means -6 dB) */
  attenuationDb: number;
  /** 'synthetic' (default) or 'none' (a pure delay) */
  impulse?: 'synthetic' | 'none';
  /** white noise added at the mic, dBFS RMS (default -65) */
  noiseDbfs?: number;
  /** pacat's buffer into the mic (default 40 ms: the streams then take ~50 ms of the delay; 20 ms allows delays
   *  down to ~32 ms but underruns, and so glitches, more often on a loaded machine) */
  outputBufferMs?: number;
  /** seed of the impulse response and the noise (default 1) */
  seed?: number;
}

// A small deterministic PRNG (mulberry32, restFuzz.ts's), so a room is the same room in every run.
import { prng } from './restFuzz.js';
export { prng };

/** Sparse impulse response: tap positions (samples after the direct path) and gains, unit energy. */
export interface SparseImpulse {
  at: Int32Array;
  gain: Float32Array;
}

export function syntheticImpulse(seed = 1, kind: 'synthetic' | 'none' = 'synthetic'): SparseImpulse {
  const taps: Array<[number, number]> = [[0, 1]];
  if (kind === 'synthetic') {
    const rnd = prng(seed);
    // early reflections: walls and table, 3-23 ms, alternating sign
    for (const [ms, g] of [[3.1, -0.45], [7.4, 0.32], [11.9, -0.25], [17.2, 0.18], [22.8, -0.12]] as const) taps.push([Math.round((ms * ROOM_RATE) / 1000), g]);
    // tail: one random tap every ~0.4 ms from 25 to 60 ms, decaying 60 dB per 250 ms (a small living room)
    for (let ms = 25; ms < 60; ms += 0.2 + rnd() * 0.4) {
      const g = 0.15 * 10 ** ((-60 * (ms - 25)) / 250 / 20) * (rnd() < 0.5 ? -1 : 1) * (0.5 + rnd());
      taps.push([Math.round((ms * ROOM_RATE) / 1000), g]);
    }
  }
  const norm = Math.sqrt(taps.reduce((s, [, g]) => s + g * g, 0));
  return { at: Int32Array.from(taps.map(([a]) => a)), gain: Float32Array.from(taps.map(([, g]) => g / norm)) };
}

/** Deterministic filtering core of the room (no I/O): one output sample per input sample. */
export class RoomFilter {
  private readonly hist: Float32Array;
  private pos = 0;
  private readonly mask: number;
  delaySamples: number;
  readonly gain: number;
  constructor(
    readonly impulse: SparseImpulse,
    delaySamples: number,
    attenuationDb: number,
  ) {
    // history long enough for 250 ms of delay plus the impulse's length, a power of two for a cheap wrap
    let size = 1;
    while (size < 0.25 * ROOM_RATE + impulse.at[impulse.at.length - 1] + 1) size <<= 1;
    this.hist = new Float32Array(size);
    this.mask = size - 1;
    this.delaySamples = delaySamples;
    this.gain = 10 ** (-attenuationDb / 20);
  }

  /** Echo for each input sample (far end as played), written to `echo`. */
  process(input: Int16Array, echo: Float32Array): void {
    const { at, gain } = this.impulse;
    const taps = at.length;
    const d = this.delaySamples;
    for (let i = 0; i < input.length; i++) {
      this.hist[this.pos] = input[i];
      let acc = 0;
      for (let k = 0; k < taps; k++) acc += gain[k] * this.hist[(this.pos - d - at[k]) & this.mask];
      echo[i] = acc * this.gain;
      this.pos = (this.pos + 1) & this.mask;
    }
  }
}

/** What the room wrote into the microphone between startCapture() and stopCapture(), component by component. */
export interface RoomCapture {
  /** the echo component (what a perfect canceller removes) */
  echo: Int16Array;
  /** the near-end component (what the peer should hear) */
  near: Int16Array;
  /** everything written to the mic (echo + near + noise, clipped) */
  mic: Int16Array;
  /** the delay asked for from each index on (setDelay during the capture adds an entry) */
  delayLog: Array<{ index: number; delayMs: number }>;
  /** where the room corrected a glitch (a pacat underrun): that much silence was added to the capture there */
  glitches: Array<{ index: number; ms: number }>;
}

export interface DelayMeasurement {
  /** speaker -> mic delay of the direct path, as recorders on speaker.monitor and on mic hear it */
  delayMs: number;
  /** the part added by the room's internal delay line */
  internalMs: number;
  /** the part added by the PulseAudio streams (parec + pacat + remap) */
  pipeMs: number;
  /** times the room's input paused > 80 ms (a stalled room may have shifted the delay since it was measured) */
  stalls: number;
  /** times the room dropped output to bring the streams' share back to ~30 ms (after pacat underruns), and how much */
  corrections: number;
  droppedMs: number;
}

type FromRoom =
  | { t: 'ready' }
  | { t: 'reply'; id: number; value?: unknown; error?: string };

/** Controls an echo room in its own process. */
export class EchoRoom {
  private child: ChildProcess | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly dir = mkdtempSync(path.join(os.tmpdir(), 'echo-room-'));
  /** the delay measured at start (after the internal delay line was corrected) */
  measured: DelayMeasurement | undefined;

  constructor(readonly opts: EchoRoomOptions) {
    if (!(opts.delayMs >= 30 && opts.delayMs <= 200)) throw new Error(`echo room: delay ${opts.delayMs} ms is outside 30-200 ms`);
    if (!process.env.PULSE_SERVER) throw new Error('echo room: PULSE_SERVER is not set (scripts/virtual-audio.sh start)');
  }

  /** the room's process (its scheduling is checked by echoRoom.test.ts) */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the room and calibrates it to opts.delayMs; resolves with the measured delay. */
  async start(): Promise<DelayMeasurement> {
    const child = fork(path.join(import.meta.dirname, 'echoRoomMain.ts'), [JSON.stringify(this.opts)], {
      execArgv: ['--import', 'tsx'],
      env: process.env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child = child;
    child.on('message', (m: FromRoom) => {
      if (m.t !== 'reply') return;
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error) w?.reject(new Error(m.error));
      else w?.resolve(m.value);
    });
    child.on('exit', (code, signal) => {
      for (const [, w] of this.waiting) w.reject(new Error(`echo room exited (${code ?? signal})`));
      this.waiting.clear();
    });
    await new Promise<void>((resolve, reject) => {
      child.on('message', (m: FromRoom) => m.t === 'ready' && resolve());
      child.once('exit', (code) => reject(new Error(`echo room exited with ${code} before it was ready`)));
    });
    this.measured = await this.setDelay(this.opts.delayMs);
    return this.measured;
  }

  private request(cmd: string, arg?: unknown): Promise<unknown> {
    const c = this.child;
    if (!c?.connected) return Promise.reject(new Error('echo room is not running'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      c.send({ id, cmd, arg });
    });
  }

  /** Sets the speaker -> mic delay (measured and corrected); returns what it measured after the change. */
  async setDelay(delayMs: number): Promise<DelayMeasurement> {
    if (!(delayMs >= 30 && delayMs <= 200)) throw new Error(`echo room: delay ${delayMs} ms is outside 30-200 ms`);
    return (await this.request('setDelay', delayMs)) as DelayMeasurement;
  }

  /** The speaker -> mic delay, from the tracker's next measurement (within ~0.5 s). */
  async measureDelay(): Promise<DelayMeasurement> {
    return (await this.request('measure')) as DelayMeasurement;
  }

  /**
   * Speaks into the microphone: `pcm` (48 kHz mono) scaled so that its RMS over its non-silent part is
   * `relativeToEchoDb` dB relative to the echo's RMS over the last 5 s of echo (or, with no echo yet, at
   * `dbfs`). Resolves when queued, with the gain applied.
   */
  async playNearEnd(pcm: Int16Array, level: { relativeToEchoDb: number } | { dbfs: number }): Promise<{ gainDb: number }> {
    return (await this.request('near', { b64: Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64'), level })) as { gainDb: number };
  }

  /** Stops what playNearEnd queued. */
  async stopNearEnd(): Promise<void> {
    await this.request('stopNear');
  }

  /** RMS of the echo over the last 5 s of windows that carried echo, dBFS (-Infinity before any). */
  async echoLevelDbfs(): Promise<number> {
    return (await this.request('echoLevel')) as number;
  }

  async startCapture(): Promise<void> {
    await this.request('startCapture');
  }

  async stopCapture(): Promise<RoomCapture> {
    const r = (await this.request('stopCapture', this.dir)) as { files: Record<'echo' | 'near' | 'mic', string>; delayLog: RoomCapture['delayLog']; glitches: RoomCapture['glitches'] };
    const load = (f: string) => {
      const b = readFileSync(f);
      rmSync(f, { force: true });
      return new Int16Array(b.buffer, b.byteOffset, b.length / 2);
    };
    return { echo: load(r.files.echo), near: load(r.files.near), mic: load(r.files.mic), delayLog: r.delayLog, glitches: r.glitches };
  }

  async stop(): Promise<void> {
    const c = this.child;
    if (c && c.exitCode === null && c.signalCode === null) {
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
