// The shape of a wake verifier's data (../wakeVerifier.ts), apart so the generated modules beside it need not
// import the verifier (an import cycle).
/** What a generated module under ./verifiers holds: a network with one hidden layer over the window of embeddings,
 *  P(phrase) = sigmoid(w2 . max(0, W1 x + b1) + bias). The features' standardisation is folded into W1 and b1. */
export interface VerifierData {
  /** the built-in phrase model (file name) it was trained for */
  model: string;
  /** features: 16 x 96 (the embeddings window, oldest embedding first) */
  inputs: number;
  /** hidden units (ReLU) */
  hidden: number;
  /** float32, little-endian, base64: W1 (hidden rows of `inputs`), then b1 (hidden), then w2 (hidden) */
  weights: string;
  /** the output unit's bias */
  bias: number;
  /** probability needed to accept */
  threshold: number;
  /** how it was trained (documentation only) */
  trainedOn: string;
}
