// Feeding a wake word engine as the capture backend does: 48 kHz 20 ms frames stamped with the time of each
// frame's last sample, on a timeline that starts at T0.
import { resample } from '../../src/common/audio/resample.js';
import type { WakeWordEngine } from '../../src/agent/wake/wakeEngine.js';

export const FRAME = 960; // 20 ms at 48 kHz
const FRAME_NS = 20_000_000n;
const T0 = 5_000_000_000n;

/** Feeds 16 kHz audio from sample `offset48` of the engine's timeline; returns the next offset. */
export function feedAsCapture(engine: WakeWordEngine, pcm16k: Int16Array, offset48: number): number {
  const pcm = resample(pcm16k, 16000, 48000);
  let o = offset48;
  for (let i = 0; i + FRAME <= pcm.length; i += FRAME) {
    o += FRAME;
    engine.feed(pcm.subarray(i, i + FRAME), T0 + (BigInt(o) * FRAME_NS) / BigInt(FRAME) - 20_833n);
  }
  return o;
}

/** The time of 48 kHz sample `sample48` of that timeline. */
export const nsAt48 = (sample48: number): bigint => T0 + (BigInt(sample48) * 1_000_000_000n) / 48000n;
