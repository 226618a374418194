// Feeding a wake word engine as the capture backend does: 48 kHz 20 ms frames stamped with the time of each
// frame's last sample, on a timeline that starts at T0.
import { resample } from '../../src/common/audio/resample.js';
import type { WakeEvent, WakeWordEngine } from '../../src/agent/wake/wakeEngine.js';
import type { WakeClip } from './wakeCorpus.js';

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

/** What an engine made of a run of wake clips fed one after another (the engine's own timeline). */
export interface ClipRun {
  misses: string[];
  /** detected end - true end of each heard phrase, ms */
  offsetsMs: number[];
  /** the most detections any one clip gave, and every phrase named */
  mostPerClip: number;
  phrases: Set<string>;
  /** where the next clip starts on the timeline */
  at48: number;
}

/** Feeds each clip, waits for the engine to have spotted it, and matches its detections (within 1 s of the
 *  phrase's end). `events` is the list the engine's onWake fills. */
export async function runClips(engine: WakeWordEngine & { drained(): Promise<void> }, events: WakeEvent[], clips: WakeClip[], at48: number): Promise<ClipRun> {
  const r: ClipRun = { misses: [], offsetsMs: [], mostPerClip: 0, phrases: new Set(), at48 };
  for (const c of clips) {
    events.length = 0;
    const start = r.at48;
    r.at48 = feedAsCapture(engine, c.pcm, r.at48);
    await engine.drained();
    const trueEnd = nsAt48(start + c.phraseEnd * 3);
    const hit = events.find((e) => e.endedAtNs > trueEnd - 1_000_000_000n && e.endedAtNs < trueEnd + 1_000_000_000n);
    if (!hit) r.misses.push(`${c.voice} "${c.text}" over ${c.background}`);
    else r.offsetsMs.push(Number(hit.endedAtNs - trueEnd) / 1e6);
    r.mostPerClip = Math.max(r.mostPerClip, events.length);
    for (const e of events) r.phrases.add(e.phrase);
  }
  return r;
}
