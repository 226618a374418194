// The openWakeWord engine with real ONNX Runtime in its worker thread, on held-out voices and texts of the wake
// test set (test/support/wakeCorpus.ts: voices and texts the threshold was not chosen on); and its privacy:
// ONNX Runtime's own telemetry stays off.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/common/logger.js';
import { modelsDir, OpenWakeWordSpotter, phraseModelFor, sensitivityToThreshold } from '../../../src/agent/wake/openWakeWord.js';
import type { WakeThread } from '../../../src/agent/wake/wakeThread.js';
import { DEFAULT_WAKE_PHRASE, DEFAULT_WAKE_SENSITIVITY, openWakeWordEngine, type WakeEvent } from '../../../src/agent/wake/wakeWord.js';
import { HELDOUT_VOICES, nonWakeSegments, RATE, wakeClips } from '../../support/wakeCorpus.js';
import { feedAsCapture as feed, nsAt48, runClips } from '../../support/wakeFeed.js';

const root = path.resolve(import.meta.dirname, '../../..');

describe('wake word engine (openWakeWord on ONNX Runtime in a worker thread)', () => {
  let engine: WakeThread;
  const events: WakeEvent[] = [];
  let at48 = 0;

  beforeAll(async () => {
    engine = (await openWakeWordEngine({ phrase: DEFAULT_WAKE_PHRASE, sensitivity: DEFAULT_WAKE_SENSITIVITY, logger: silentLogger })) as WakeThread;
    engine.onWake((e) => events.push(e));
  }, 60_000);
  afterAll(() => engine?.close());

  it('runs openWakeWord for the default phrase', () => {
    expect(engine.engine).toBe('openwakeword');
    expect(engine.phrase).toBe('hey jarvis');
  });

  // 10 dB SNR is the bar (>= 95 % there, bench/wake-word.bench.ts reports it); asserted here with room for
  // one miss in 60 so the test pins the engine, not the last percent.
  it('hears the phrase from every held-out voice at 10 dB SNR over noise and music, alone and before a command, and places its end', async () => {
    const clips = wakeClips(DEFAULT_WAKE_PHRASE, 'heldout', 10);
    expect(clips.length).toBe(60);
    const r = await runClips(engine, events, clips, at48);
    at48 = r.at48;
    expect(r.mostPerClip, 'one detection per phrase').toBeLessThanOrEqual(1);
    expect([...r.phrases]).toEqual(['hey jarvis']);
    expect(r.misses.length, r.misses.join('; ')).toBeLessThanOrEqual(3);
    const offsetsMs = r.offsetsMs;
    offsetsMs.sort((a, b) => a - b);
    // the end is placed within a step or two of the truth: the pre-roll (50 ms) then starts near the command
    expect(Math.abs(offsetsMs[offsetsMs.length >> 1])).toBeLessThan(120);
    for (const off of offsetsMs) expect(Math.abs(off)).toBeLessThan(400);
  }, 180_000);

  // Similar phrases that hold the name ("Davis and Jarvis") do fire: the bench counts them in its false accepts.
  it('does not fire on minutes of held-out narration, noise and music', async () => {
    events.length = 0;
    let seconds = 0;
    const labels: string[] = [];
    for (const seg of nonWakeSegments(DEFAULT_WAKE_PHRASE, 'heldout', { maxSeconds: 700 })) {
      if (seg.label.startsWith('similar:')) continue;
      const before = events.length;
      const start = at48;
      at48 = feed(engine, seg.pcm, at48);
      await engine.drained();
      if (events.length > before) labels.push(`${seg.label} at ${events.slice(before).map((e) => Number(e.endedAtNs - nsAt48(start)) / 1e9).join(', ')} s`);
      seconds += seg.pcm.length / RATE;
    }
    expect(seconds).toBeGreaterThanOrEqual(500);
    expect(events, `fired in ${labels.join(', ')}`).toEqual([]);
  }, 240_000);
});

describe('openWakeWord: sleeping through quiet', () => {
  it('computes nothing in a quiet room, and still hears a phrase said into it, placing its end', async () => {
    const sp = await OpenWakeWordSpotter.open({ phrase: 'hey jarvis', model: phraseModelFor('hey jarvis')!, threshold: sensitivityToThreshold(0.5) });
    try {
      const [clip] = wakeClips(DEFAULT_WAKE_PHRASE, 'heldout', 20, { voices: HELDOUT_VOICES.slice(0, 1), backgrounds: [null] });
      const quiet = new Int16Array(RATE * 10).map((_, i) => (i % 7) - 3); // a quiet microphone's noise, RMS 2
      const before = sp.computedSteps;
      expect(await sp.process(quiet)).toEqual([]);
      const slept = 125 - (sp.computedSteps - before); // 10 s = 125 steps
      expect(slept).toBeGreaterThan(90); // all but the first 27 steps (the replay ring fills first)
      const found = await sp.process(clip.pcm);
      expect(found.length).toBe(1);
      expect(Math.abs(found[0].endSample - (quiet.length + clip.phraseEnd)) / 16).toBeLessThan(150); // ms
    } finally {
      sp.close();
    }
  }, 60_000);
});

// Half steps (the phrase model also asked 40 ms after a step, while a score rises): they cost nothing in a room
// without speech, and run around a phrase, where the detection may come from one.
describe('openWakeWord: half steps', () => {
  it('computes none in room noise, and some around a phrase, which is heard once', async () => {
    const sp = await OpenWakeWordSpotter.open({ phrase: 'hey jarvis', model: phraseModelFor('hey jarvis')!, threshold: sensitivityToThreshold(0.5) });
    try {
      // room noise at about -50 dBFS, no speech, 10 s, in 20 ms pieces as the worker gets them
      const [noiseClip] = wakeClips(DEFAULT_WAKE_PHRASE, 'heldout', 20, { voices: HELDOUT_VOICES.slice(0, 1), backgrounds: ['pink'] });
      const noise = noiseClip.pcm.subarray(0, RATE).slice();
      for (let k = 0; k < 10; k++) for (let i = 0; i < noise.length; i += 320) expect(await sp.process(noise.subarray(i, i + 320))).toEqual([]);
      expect(sp.computedSteps).toBeGreaterThan(100);
      expect(sp.halfSteps).toBe(0);
      const found = [];
      for (let i = 0; i < noiseClip.pcm.length; i += 320) found.push(...(await sp.process(noiseClip.pcm.subarray(i, i + 320))));
      expect(found.length).toBe(1);
      expect(sp.halfSteps).toBeGreaterThan(0);
    } finally {
      sp.close();
    }
  }, 60_000);
});

describe('openWakeWord: sensitivity', () => {
  it('maps 0..1 to a falling threshold, 0.3 at the default', () => {
    expect(sensitivityToThreshold(0.5)).toBeCloseTo(0.3, 10);
    expect(sensitivityToThreshold(0)).toBeCloseTo(0.9, 10);
    expect(sensitivityToThreshold(1)).toBeCloseTo(0.03, 10);
    for (let s = 0; s < 1; s += 0.05) expect(sensitivityToThreshold(s + 0.05)).toBeLessThan(sensitivityToThreshold(s));
  });
});

// ONNX Runtime 1.30's Linux library keeps a device id and an event database under ~/.cache/Microsoft and has an
// uploader to Microsoft's collector, unless ORT_DISABLE_TELEMETRY is set when it loads. The control run (the
// library loaded as a plain program would) shows the check can fail.
describe('openWakeWord: ONNX Runtime telemetry is off', () => {
  const runIn = (home: string, script: string): void => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
    // as a user's environment has it: ONNX Runtime also keeps its telemetry off by itself where it sees a CI
    // system's variables (CI, GITHUB_ACTIONS, TF_BUILD, JENKINS_URL...), which would make the control pass for nothing
    for (const k of ['ORT_DISABLE_TELEMETRY', 'CI', 'CONTINUOUS_INTEGRATION', 'GITHUB_ACTIONS', 'TF_BUILD', 'JENKINS_URL', 'BUILD_BUILDID', 'BUILD_ID', 'GITLAB_CI', 'BUILDKITE', 'CIRCLECI', 'TRAVIS']) delete env[k];
    // a file, not -e: the worker thread would inherit --input-type
    const file = path.join(home, 'run.mts');
    writeFileSync(file, script);
    execFileSync(process.execPath, ['--import', 'tsx', file], { cwd: root, env, stdio: 'pipe', timeout: 60_000 });
    rmSync(file);
  };

  it('the engine writes no telemetry state; ONNX Runtime loaded without it does', () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'ort-home-'));
    const control = mkdtempSync(path.join(os.tmpdir(), 'ort-home-'));
    try {
      runIn(home, `
        import { openWakeWordEngine } from '${root}/src/agent/wake/wakeWord.ts';
        import { silentLogger } from '${root}/src/common/logger.ts';
        const e = await openWakeWordEngine({ phrase: 'hey jarvis', sensitivity: 0.5, logger: silentLogger });
        for (let i = 0; i < 150; i++) e.feed(new Int16Array(960).map(() => (Math.random() - 0.5) * 2000), BigInt(i) * 20000000n);
        await e.drained();
        await e.close();`);
      expect(existsSync(path.join(home, '.cache', 'Microsoft'))).toBe(false);
      runIn(control, `
        import { createRequire } from 'node:module';
        const ort = createRequire(${JSON.stringify(root + '/')})('onnxruntime-node');
        await ort.InferenceSession.create(${JSON.stringify(path.join(modelsDir(), 'hey_jarvis_v0.1.onnx'))});`);
      expect(existsSync(path.join(control, '.cache', 'Microsoft', 'DeveloperTools', '.onnxruntime'))).toBe(true);
    } finally {
      rmSync(home, { recursive: true, force: true });
      rmSync(control, { recursive: true, force: true });
    }
  }, 120_000);
});
