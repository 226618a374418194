// Transcribes a clone sample (10..30 s) faster than one decoder can: the audio is cut at its quietest moments
// into segments of a few seconds, which the recogniser decodes concurrently (it runs up to its configured
// number of decoders in parallel), and the texts are joined in order. Cutting in pauses keeps words whole.
import type { Recognizer } from '../speech/recognizer.js';

const SEGMENT_SECONDS = 5;
const SEARCH_SECONDS = 1.5;
const FRAME = 320; // 20 ms at 16 kHz

/** Sample indices where to cut pcm into about `SEGMENT_SECONDS`-long parts, each at the quietest 20 ms frame
 *  within ±SEARCH_SECONDS of the even split point. */
export function splitPoints(pcm: Int16Array, rate: number): number[] {
  const parts = Math.max(1, Math.round(pcm.length / rate / SEGMENT_SECONDS));
  const cuts: number[] = [];
  for (let k = 1; k < parts; k++) {
    const ideal = Math.round((pcm.length * k) / parts);
    const from = Math.max(0, ideal - SEARCH_SECONDS * rate);
    const to = Math.min(pcm.length - FRAME, ideal + SEARCH_SECONDS * rate);
    let best = ideal;
    let bestEnergy = Infinity;
    for (let s = from; s <= to; s += FRAME / 2) {
      let e = 0;
      for (let i = s; i < s + FRAME; i++) e += pcm[i] * pcm[i];
      if (e < bestEnergy) {
        bestEnergy = e;
        best = s + FRAME / 2;
      }
    }
    cuts.push(best);
  }
  return cuts;
}

export async function transcribeSample(recognizer: Recognizer, pcm16k: Int16Array): Promise<string> {
  const cuts = [0, ...splitPoints(pcm16k, 16_000), pcm16k.length];
  const texts = await Promise.all(
    cuts.slice(1).map((end, i) => recognizer.recognize(pcm16k.subarray(cuts[i], end), { mode: 'dictation' }).then((r) => r.text.trim())),
  );
  return texts.filter(Boolean).join(' ');
}
