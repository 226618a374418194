// The wake word's second stage: openWakeWord's "custom verifier" idea (a logistic regression over the same
// features the phrase model sees: the last 16 embeddings of Google's speech embedding model, 16 x 96 values),
// asked only when the phrase model's score passes its threshold. The phrase model alone confuses "hey" + a
// name that sounds alike ("hey Charlie", "hey Marvin" for "hey jarvis"): it scored those up to 0.99 on the test
// set, as high as the phrase itself, so no threshold tells them apart; the embeddings still do.
//
// A verifier is trained for a built-in phrase model by scripts/train-wake-verifier.ts on the TUNING part of the
// wake test set plus phrases made for it ("hey" + common names, other voices), never on the held-out part that
// bench/wake-word.bench.ts reports. Its weights are a generated module in ./verifiers/.
import { createRequire } from 'node:module';
import path from 'node:path';
import { HEY_JARVIS_VERIFIER } from './verifiers/heyJarvis.js';
import type { VerifierData } from './verifiers/verifierData.js';

export type { VerifierData };

export class WakeVerifier {
  private readonly w: Float32Array;

  constructor(readonly data: VerifierData) {
    const bytes = Buffer.from(data.weights, 'base64');
    this.w = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  }

  get size(): number {
    return this.w.length;
  }

  /** P(the phrase) for a window of embeddings. */
  probability(embeddings: Float32Array): number {
    if (embeddings.length !== this.w.length) throw new RangeError(`wake verifier: ${embeddings.length} features, ${this.w.length} weights`);
    let z = this.data.bias;
    for (let i = 0; i < this.w.length; i++) z += this.w[i] * embeddings[i];
    return 1 / (1 + Math.exp(-z));
  }

  accepts(embeddings: Float32Array): boolean {
    return this.probability(embeddings) >= this.data.threshold;
  }
}

const BUILT_IN: VerifierData[] = [HEY_JARVIS_VERIFIER];

/** The verifier for a phrase model file, if one ships for it: only the built-in models (vendor/openwakeword-models)
 *  have one; a custom model runs alone. */
export function verifierFor(modelFile: string): WakeVerifier | undefined {
  const builtIn = path.resolve(path.dirname(modelFile)) === path.resolve(builtInModelsDir());
  const data = builtIn ? BUILT_IN.find((v) => v.model === path.basename(modelFile)) : undefined;
  return data ? new WakeVerifier(data) : undefined;
}

const require = createRequire(import.meta.url);
let dir: string | undefined;
/** vendor/openwakeword-models/models (the same place openWakeWord.ts's modelsDir() names; not imported from there,
 *  which imports this module) */
function builtInModelsDir(): string {
  return (dir ??= path.join(path.dirname(require.resolve('openwakeword-models/package.json')), 'models'));
}
