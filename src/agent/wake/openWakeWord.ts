// Wake word spotting with openWakeWord's models (vendor/openwakeword-models) on ONNX Runtime (onnxruntime-node's
// CPU build, an npm package with prebuilt linux-x64 and linux-arm64 libraries). Runs inside the wake worker thread
// (wakeWorker.ts), or directly in a benchmark that scans hours of audio faster than real time.
//
// The pipeline is openWakeWord's own streaming one (openwakeword/utils.py AudioFeatures, model.py), step for step,
// because the phrase models were trained on exactly these features:
// - every 80 ms (1280 samples at 16 kHz): the melspectrogram model over those samples plus the 480 before them
//   (8 new 10 ms frames of 32 mel bands), scaled x/10 + 2; samples are int16 values as float, not -1..1;
// - an embedding (96 values) of the last 76 mel frames;
// - the phrase model over the last 16 embeddings (1.28 s) -> a score 0..1.
// A detection is a score above the threshold; the next 1.6 s cannot fire again (the same phrase scores high over
// several steps). Its end is placed at the end of the earliest step with a score >= 0.05 among the 6 steps before
// the one that fired (the start of the score's rise; the score may dip inside it): measured on the tuning set, that
// lands -9 ms from the real end (p50; p10 -60..-133, p90 +27..+100), where the step that passes the threshold
// lands +70..+100 ms late (p90 +230..+390).
//
// Half steps (#16, latency): while the last step's score is rising (>= 0.05, the rise score below), the phrase model
// is also asked 40 ms after each step, on the phase 40 ms later: the same 10 ms mel frames (4 new ones), the
// embeddings of windows 80 ms apart ending at the half, the same model. So a phrase whose score would pass the
// threshold between two steps is heard 40 ms sooner, and the steps themselves are computed exactly as before. In
// a room without speech the score stays below 0.05 and nothing more is computed.
//
// CPU: in a quiet room nothing needs computing. After 1.44 s of quiet steps (RMS below QUIET_RMS, about -58 dBFS)
// the spotter sleeps (score 0: a window of quiet holds no phrase); the first step with sound wakes it, and the last
// REPLAY_STEPS steps (kept raw) are run through the pipeline at once (about 10 ms of CPU), which leaves the state
// exactly as continuous processing would have. Measured: bench/wake-word.bench.ts, idle rows.
//
// Privacy: ONNX Runtime 1.30's Linux build has Microsoft telemetry (a device id in ~/.cache and an uploader).
// ORT_DISABLE_TELEMETRY=1 must be in the process environment before the library loads; disableOnnxTelemetry()
// sets it, and test/agent/wake/openWakeWord.test.ts checks on a real engine that nothing is written or sent.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { AgentError } from '../errors.js';
import type { Detection } from './keyphraseSpotter.js';
import { verifierFor, type WakeVerifier } from './wakeVerifier.js';

const require = createRequire(import.meta.url);

const STEP = 1280; // 80 ms at 16 kHz
const CONTEXT = 480; // 3 mel hops before the step (openWakeWord's melspectrogram call)
const MEL_BANDS = 32;
const MEL_WINDOW = 76;
const EMBEDDING = 96;
const EMBEDDINGS = 16;
/** steps after a detection that cannot fire again (1.6 s: longer than the phrase's high scores last) */
const REFRACTORY_STEPS = 20;
/** a step quieter than this (RMS of int16 samples; ~-58 dBFS, below a quiet room's microphone noise with speech
 *  anywhere in it) counts as quiet */
export const QUIET_RMS = 40;
/** quiet steps before the spotter sleeps: the classifier's window (16) and 2 more */
const SLEEP_AFTER = EMBEDDINGS + 2;
/** steps replayed on waking: 16 embeddings, each over the 76 mel frames (10 steps) before it, and one spare */
const REPLAY_STEPS = EMBEDDINGS + Math.ceil(MEL_WINDOW / 8) + 1;
/** the score at which a detection's rise starts, and how many steps back it is looked for (see the header) */
const RISE_SCORE = 0.05;
const RISE_STEPS = 6;
/** the half step (40 ms), at which the phrase model is also asked while a score is rising (see the header) */
const HALF = STEP / 2;
/** mel frames kept: the window, and enough before it for the 16 windows of the half-step phase (4 + 8 x 15) */
const MEL_HISTORY = MEL_WINDOW + 4 + 8 * (EMBEDDINGS - 1) + 4;

/** The phrase models that ship with the agent (vendor/openwakeword-models), by their phrase. */
export const BUILT_IN_PHRASES: Record<string, string> = {
  'hey jarvis': 'hey_jarvis_v0.1.onnx',
  alexa: 'alexa_v0.1.onnx',
  'hey mycroft': 'hey_mycroft_v0.1.onnx',
  'hey rhasspy': 'hey_rhasspy_v0.1.onnx',
};

/** "Hey, Jarvis!" -> "hey jarvis" (how phrases are compared with the built-in ones) */
export function normalisePhrase(phrase: string): string {
  return phrase.toLowerCase().replace(/[^a-z' ]+/g, ' ').replace(/\s+/g, ' ').trim();
}

export function modelsDir(): string {
  return path.join(path.dirname(require.resolve('openwakeword-models/package.json')), 'models');
}

/** The phrase model for a phrase: the configured file, else the built-in one for the phrase, else undefined. */
export function phraseModelFor(phrase: string, modelFile?: string): string | undefined {
  if (modelFile) return modelFile;
  const builtIn = BUILT_IN_PHRASES[normalisePhrase(phrase)];
  return builtIn ? path.join(modelsDir(), builtIn) : undefined;
}

/** Sensitivity 0..1 -> score threshold. Chosen on the tuning part of the wake test set: at 0.3 "hey jarvis" was
 *  accepted 95 % at 10 dB SNR with no false accept in 1.33 h, at 0.2 98 % with 1.5 an hour. The default
 *  sensitivity 0.5 gives 0.3; the lower half raises it linearly to 0.9, the upper half lowers it tenfold per 0.5. */
export function sensitivityToThreshold(sensitivity: number): number {
  if (sensitivity <= 0.5) return 0.9 - 1.2 * sensitivity;
  return 0.3 * 10 ** (-2 * (sensitivity - 0.5));
}

export function disableOnnxTelemetry(): void {
  process.env.ORT_DISABLE_TELEMETRY = '1';
}

type Ort = typeof import('onnxruntime-node');
type Session = import('onnxruntime-node').InferenceSession;

function loadOrt(): Ort {
  disableOnnxTelemetry();
  try {
    return require('onnxruntime-node') as Ort;
  } catch (cause) {
    throw new AgentError('audio', `wake word engine: ONNX Runtime does not load on ${process.platform}-${process.arch} (the npm package onnxruntime-node has linux-x64 and linux-arm64 builds; elsewhere use listening.wakeEngine: pocketsphinx)`, { cause });
  }
}

export interface OpenWakeWordOptions {
  phrase: string;
  /** the phrase model (.onnx): a built-in one or one trained with openWakeWord */
  model: string;
  /** score 0..1 needed for a detection */
  threshold: number;
  /** the second stage for a built-in phrase model (wakeVerifier.ts): default on where one ships; false runs the
   *  phrase model alone (benchmarks compare the two) */
  verify?: boolean;
}

/** One computed step, for tools that train a verifier on the engine's own features. */
export type StepObserver = (score: number, embeddings: Float32Array, endSample: number) => void;

export class OpenWakeWordSpotter {
  /** samples given since the start */
  private fed = 0;
  private readonly pending = new Int16Array(STEP);
  private pendingN = 0;
  /** the last CONTEXT + STEP samples, as float, the melspectrogram's input */
  private readonly audio = new Float32Array(CONTEXT + STEP);
  /** mel frames, newest last (MEL_HISTORY x MEL_BANDS; the embedding's window is the last MEL_WINDOW) */
  private readonly mel = new Float32Array(MEL_HISTORY * MEL_BANDS).fill(1);
  private readonly melWindow = new Float32Array(MEL_WINDOW * MEL_BANDS);
  private readonly embeddings = new Float32Array(EMBEDDINGS * EMBEDDING);
  /** the half-step phase: its input (the 480 samples before the half and the half), its 16 embeddings (80 ms
   *  apart, 40 ms after the step ones), and the `fed` of the step after which they were last brought up to date */
  private readonly halfAudio = new Float32Array(CONTEXT + HALF);
  private readonly halfEmbeddings = new Float32Array(EMBEDDINGS * EMBEDDING);
  private halfEmbeddingsAt = -1;
  private halfDone = false;
  /** scores of the last REFRACTORY_STEPS steps, newest last */
  private readonly recent: number[] = [];
  private refractory = 0;
  private closed = false;
  /** the last REPLAY_STEPS steps, raw, oldest first once full (a ring: step k at (k % REPLAY_STEPS) * STEP) */
  private readonly ring = new Int16Array(REPLAY_STEPS * STEP);
  private steps = 0;
  private quietSteps = 0;
  private asleep = false;
  /** steps actually computed (the rest slept), and half steps: for benchmarks */
  computedSteps = 0;
  halfSteps = 0;
  /** steps (and half steps) over the threshold that the verifier turned down: for benchmarks */
  vetoedSteps = 0;
  /** sees every step (training tools) */
  observer?: StepObserver;

  private constructor(
    private readonly ort: Ort,
    private readonly melModel: Session,
    private readonly embeddingModel: Session,
    private readonly phraseModel: Session,
    readonly phrase: string,
    private readonly threshold: number,
    readonly verifier: WakeVerifier | undefined,
  ) {}

  static async open(o: OpenWakeWordOptions): Promise<OpenWakeWordSpotter> {
    if (!(o.threshold > 0 && o.threshold < 1)) throw new AgentError('config_invalid', `wake threshold must be between 0 and 1, got ${o.threshold}`);
    if (!existsSync(o.model)) throw new AgentError('config_invalid', `wake word model not found: ${o.model}`);
    const ort = loadOrt();
    // one thread, no spinning: the engine is a background task beside a live call on a small board
    const opts = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' as const, graphOptimizationLevel: 'all' as const, extra: { session: { intra_op: { allow_spinning: '0' } } } };
    const open = async (file: string, what: string): Promise<Session> => {
      try {
        return await ort.InferenceSession.create(file, opts);
      } catch (cause) {
        throw new AgentError('config_invalid', `wake word engine: ${what} ${file} is not an ONNX model it can run: ${(cause as Error).message}`, { cause });
      }
    };
    const dir = modelsDir();
    const melModel = await open(path.join(dir, 'melspectrogram.onnx'), 'the melspectrogram model');
    const embeddingModel = await open(path.join(dir, 'embedding_model.onnx'), 'the embedding model');
    const phraseModel = await open(o.model, 'the phrase model');
    const shape = phraseModel.inputMetadata?.[0];
    if (shape && 'shape' in shape && Array.isArray(shape.shape) && (shape.shape[1] !== EMBEDDINGS || shape.shape[2] !== EMBEDDING)) {
      throw new AgentError('config_invalid', `wake word model ${o.model} takes input ${JSON.stringify(shape.shape)}, not openWakeWord's [1, ${EMBEDDINGS}, ${EMBEDDING}]`);
    }
    const verifier = o.verify === false ? undefined : verifierFor(o.model);
    const spotter = new OpenWakeWordSpotter(ort, melModel, embeddingModel, phraseModel, normalisePhrase(o.phrase), o.threshold, verifier);
    await spotter.warmUp();
    return spotter;
  }

  /** Fills the feature window with quiet noise (openWakeWord starts from embeddings of noise too), so the first
   *  1.28 s after a start are scored: a wake word said at once is heard. */
  private async warmUp(): Promise<void> {
    let seed = 1;
    const noise = new Int16Array(STEP);
    for (let k = 0; k < EMBEDDINGS; k++) {
      for (let i = 0; i < STEP; i++) noise[i] = ((seed = (seed * 1103515245 + 12345) >>> 0) % 2000) - 1000;
      await this.step(noise);
    }
    this.fed = 0;
  }

  /** Spots in 16 kHz mono samples; returns the detections whose phrase ended in them (usually none), and the
   *  scores of each 80 ms step (for tuning). */
  async process(pcm16k: Int16Array, scores?: number[]): Promise<Detection[]> {
    if (this.closed) throw new AgentError('internal', 'wake word engine: spotter is closed');
    const out: Detection[] = [];
    let i = 0;
    while (i < pcm16k.length) {
      const n = Math.min(STEP - this.pendingN, pcm16k.length - i);
      this.pending.set(pcm16k.subarray(i, i + n), this.pendingN);
      this.pendingN += n;
      i += n;
      if (this.pendingN >= HALF && !this.halfDone) {
        this.halfDone = true;
        const last = this.recent.length > 0 ? this.recent[this.recent.length - 1] : 0;
        if (!this.asleep && this.refractory === 0 && last >= RISE_SCORE) {
          const score = await this.halfStep(this.pending.subarray(0, HALF));
          if (score >= this.threshold && this.verified(this.halfEmbeddings)) {
            this.refractory = REFRACTORY_STEPS;
            // the rise's start among the last steps, the one just before this half included
            let back = 0;
            for (let k = Math.min(RISE_STEPS - 1, this.recent.length - 1); k >= 0; k--) {
              if (this.recent[this.recent.length - 1 - k] >= RISE_SCORE) {
                back = k;
                break;
              }
            }
            out.push({ phrase: this.phrase, endSample: Math.max(0, this.fed - back * STEP), score });
          }
        }
      }
      if (this.pendingN < STEP) break;
      this.pendingN = 0;
      this.halfDone = false;
      const score = await this.gatedStep(this.pending);
      scores?.push(score);
      this.observer?.(score, this.embeddings, this.fed);
      this.recent.push(score);
      if (this.recent.length > REFRACTORY_STEPS) this.recent.shift();
      if (this.refractory > 0) this.refractory--;
      else if (score >= this.threshold && this.verified(this.embeddings)) {
        this.refractory = REFRACTORY_STEPS;
        let back = 0; // steps from the first step of the rise to this one
        for (let k = Math.min(RISE_STEPS, this.recent.length - 1); k > 0; k--) {
          if (this.recent[this.recent.length - 1 - k] >= RISE_SCORE) {
            back = k;
            break;
          }
        }
        out.push({ phrase: this.phrase, endSample: Math.max(0, this.fed - back * STEP), score });
      }
    }
    return out;
  }

  /** The second stage's word on the window that just passed the threshold (no verifier: yes). Turned down, the
   *  next steps are still looked at: the phrase keeps scoring for a few of them, its window better centred. */
  private verified(embeddings: Float32Array): boolean {
    if (!this.verifier || this.verifier.accepts(embeddings)) return true;
    this.vetoedSteps++;
    return false;
  }

  /** A step through the pipeline, or none while asleep (see the header). */
  private async gatedStep(samples: Int16Array): Promise<number> {
    this.ring.set(samples, (this.steps % REPLAY_STEPS) * STEP);
    this.steps++;
    let energy = 0;
    for (let i = 0; i < STEP; i++) energy += samples[i] * samples[i];
    const quiet = Math.sqrt(energy / STEP) < QUIET_RMS;
    this.quietSteps = quiet ? this.quietSteps + 1 : 0;
    if (this.asleep) {
      if (quiet) {
        this.fed += STEP;
        return 0;
      }
      this.asleep = false;
      // replay the kept steps, oldest first; the last one is this step
      this.fed -= (REPLAY_STEPS - 1) * STEP;
      let score = 0;
      for (let k = this.steps - REPLAY_STEPS; k < this.steps; k++) {
        const at = (((k % REPLAY_STEPS) + REPLAY_STEPS) % REPLAY_STEPS) * STEP;
        score = await this.step(this.ring.subarray(at, at + STEP));
      }
      return score;
    }
    if (this.quietSteps >= SLEEP_AFTER && this.steps >= REPLAY_STEPS) this.asleep = true;
    return this.step(samples);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of [this.melModel, this.embeddingModel, this.phraseModel]) void s.release();
  }

  private async step(samples: Int16Array): Promise<number> {
    const { Tensor } = this.ort;
    this.fed += STEP;
    this.computedSteps++;
    this.audio.copyWithin(0, STEP);
    for (let k = 0; k < STEP; k++) this.audio[CONTEXT + k] = samples[k];
    const melOut = await this.melModel.run({ [this.melModel.inputNames[0]]: new Tensor('float32', this.audio, [1, this.audio.length]) });
    const frames = melOut[this.melModel.outputNames[0]].data as Float32Array;
    const nNew = Math.min(MEL_WINDOW, Math.floor(frames.length / MEL_BANDS));
    this.mel.copyWithin(0, nNew * MEL_BANDS);
    const at = (MEL_HISTORY - nNew) * MEL_BANDS;
    for (let k = 0; k < nNew * MEL_BANDS; k++) this.mel[at + k] = frames[frames.length - nNew * MEL_BANDS + k] / 10 + 2;
    this.melWindow.set(this.mel.subarray((MEL_HISTORY - MEL_WINDOW) * MEL_BANDS));
    this.embeddings.copyWithin(0, EMBEDDING);
    this.embeddings.set(await this.embed(this.melWindow), (EMBEDDINGS - 1) * EMBEDDING);
    return this.classify(this.embeddings);
  }

  /** The score 40 ms after the last step: the same pipeline on the phase 40 ms later (its mel frames are the same
   *  10 ms frames, so its earlier windows come from the history; its embeddings are kept while it is asked step
   *  after step, and rebuilt from the history when it was not asked at the step before). */
  private async halfStep(half: Int16Array): Promise<number> {
    const { Tensor } = this.ort;
    this.halfSteps++;
    this.halfAudio.set(this.audio.subarray(this.audio.length - CONTEXT));
    for (let k = 0; k < HALF; k++) this.halfAudio[CONTEXT + k] = half[k];
    const melOut = await this.melModel.run({ [this.melModel.inputNames[0]]: new Tensor('float32', this.halfAudio, [1, this.halfAudio.length]) });
    const frames = melOut[this.melModel.outputNames[0]].data as Float32Array;
    const nNew = Math.floor(frames.length / MEL_BANDS); // 4
    const keep = MEL_WINDOW - nNew;
    this.melWindow.set(this.mel.subarray((MEL_HISTORY - keep) * MEL_BANDS));
    for (let k = 0; k < nNew * MEL_BANDS; k++) this.melWindow[keep * MEL_BANDS + k] = frames[frames.length - nNew * MEL_BANDS + k] / 10 + 2;
    const newest = await this.embed(this.melWindow);
    if (this.halfEmbeddingsAt === this.fed - STEP) {
      this.halfEmbeddings.copyWithin(0, EMBEDDING);
    } else {
      // the half-step windows of the 15 steps before: they end 8j - nNew frames before the history's end
      for (let j = EMBEDDINGS - 1; j >= 1; j--) {
        const end = MEL_HISTORY - (8 * j - nNew);
        this.melWindow.set(this.mel.subarray((end - MEL_WINDOW) * MEL_BANDS, end * MEL_BANDS));
        this.halfEmbeddings.set(await this.embed(this.melWindow), (EMBEDDINGS - 1 - j) * EMBEDDING);
      }
    }
    this.halfEmbeddings.set(newest, (EMBEDDINGS - 1) * EMBEDDING);
    this.halfEmbeddingsAt = this.fed;
    return this.classify(this.halfEmbeddings);
  }

  /** The embedding (96 values, a copy) of a window of MEL_WINDOW mel frames. */
  private async embed(window: Float32Array): Promise<Float32Array> {
    const { Tensor } = this.ort;
    const out = await this.embeddingModel.run({ [this.embeddingModel.inputNames[0]]: new Tensor('float32', window, [1, MEL_WINDOW, MEL_BANDS, 1]) });
    return (out[this.embeddingModel.outputNames[0]].data as Float32Array).slice(0, EMBEDDING);
  }

  private async classify(embeddings: Float32Array): Promise<number> {
    const { Tensor } = this.ort;
    const r = await this.phraseModel.run({ [this.phraseModel.inputNames[0]]: new Tensor('float32', embeddings, [1, EMBEDDINGS, EMBEDDING]) });
    return (r[this.phraseModel.outputNames[0]].data as Float32Array)[0];
  }
}
