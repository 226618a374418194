// The shape of a wake verifier's data (../wakeVerifier.ts), apart so the generated modules beside it need not
// import the verifier (an import cycle).
/** What a generated module under ./verifiers holds. */
export interface VerifierData {
  /** the built-in phrase model (file name) it was trained for */
  model: string;
  /** 16 x 96 float32 weights, little-endian, base64 (the embeddings window, oldest embedding first) */
  weights: string;
  bias: number;
  /** probability needed to accept */
  threshold: number;
  /** how it was trained (documentation only) */
  trainedOn: string;
}
