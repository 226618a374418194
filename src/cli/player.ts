// Plays a clip (any rate, mono s16) on a playback device, for test-speaker, say and stories. The device
// needs a frame every 20 ms (naudiodon waits rather than inserting silence), so frames are fed by a timer
// that keeps ~100 ms queued; onPosition reports how much has been heard, for word-by-word display.
import type { AudioBackend } from '../agent/audio/audioDevice.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../protocol/media.js';
import { resample } from '../common/audio/resample.js';

export interface PlayOptions {
  /** called about every 20 ms with the playback position in ms of the clip */
  onPosition?: (ms: number) => void;
  signal?: AbortSignal;
  /** target queue depth (default 100 ms) */
  leadMs?: number;
}

export async function playClip(
  backend: AudioBackend,
  deviceName: string,
  pcm: Int16Array,
  sampleRate: number,
  opts: PlayOptions = {},
): Promise<{ playedMs: number }> {
  const pcm48 = sampleRate === SAMPLE_RATE ? pcm : resample(pcm, sampleRate, SAMPLE_RATE);
  const device = backend.openPlayback(deviceName);
  let failure: Error | undefined;
  device.onError = (err) => {
    failure = err;
  };
  await device.start();
  const lead = opts.leadMs ?? 100;
  const frame = new Int16Array(FRAME_SAMPLES);
  const totalFrames = Math.ceil(pcm48.length / FRAME_SAMPLES);
  // a few frames of silence after the clip so its end is not cut by the stop
  const tailFrames = Math.ceil(lead / 20) + 2;
  let written = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      const tick = () => {
        if (failure) return done(failure);
        if (opts.signal?.aborted) return done();
        while (device.queuedMs < lead && written < totalFrames + tailFrames) {
          frame.fill(0);
          if (written < totalFrames) frame.set(pcm48.subarray(written * FRAME_SAMPLES, (written + 1) * FRAME_SAMPLES));
          device.write(frame);
          written++;
        }
        const heardMs = Math.max(0, Math.min(written * 20 - device.queuedMs, totalFrames * 20));
        opts.onPosition?.(heardMs);
        if (written >= totalFrames + tailFrames && device.queuedMs === 0) done();
      };
      const timer = setInterval(tick, 10);
      const done = (err?: Error) => {
        clearInterval(timer);
        if (err) reject(err);
        else resolve();
      };
      tick();
    });
  } finally {
    await device.stop();
  }
  return { playedMs: Math.min(written, totalFrames) * 20 };
}
