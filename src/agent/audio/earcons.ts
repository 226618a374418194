// Earcons: the short sounds the agent plays itself, without a round trip to the service (listening opened,
// closed, muted, unmuted, service unreachable). Generated here (a few soft sine blips) or read from a WAV the
// user names (settings `earcons.<name>`: "default", "off" or a path). They are mixed into the downlink's next
// frame (Downlink's overlay), so they go out of the same playback stream as the assistant and an echo
// canceller's reference records them like any played audio (the half-duplex gate follows the service's audio
// only: see downlink.ts); the delay from the event is at most one frame being written plus the device's queue.
import { readFileSync } from 'node:fs';
import { resample } from '../../common/audio/resample.js';
import { decodeWav } from '../../common/audio/wav.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../protocol/media.js';
import { AgentError } from '../errors.js';

export const EARCON_NAMES = ['opened', 'closed', 'muted', 'unmuted', 'unreachable'] as const;
export type EarconName = (typeof EARCON_NAMES)[number];

/** A setting's value: "default" (generated), "off", or the path of a WAV file. */
export type EarconSetting = string;

/** Longest earcon accepted from a WAV (a sound, not a song: it delays nothing, but it masks the assistant). */
const MAX_EARCON_MS = 3_000;

/** Tone segments [frequency Hz, ms] of the generated earcons: rising = open, falling = close. */
const DESIGNS: Record<EarconName, [number, number][]> = {
  opened: [[880, 60], [1320, 80]],
  closed: [[1320, 60], [880, 80]],
  muted: [[660, 80], [0, 40], [440, 120]],
  unmuted: [[440, 80], [0, 40], [660, 120]],
  unreachable: [[330, 120], [0, 60], [330, 120], [0, 60], [262, 200]],
};

/** A generated earcon: soft sine segments (amplitude 0.2, 5 ms fades, so no clicks). */
export function generateEarcon(name: EarconName): Int16Array {
  const segs = DESIGNS[name];
  const total = segs.reduce((n, [, ms]) => n + Math.round((ms * SAMPLE_RATE) / 1000), 0);
  const out = new Int16Array(total);
  const fade = Math.round(0.005 * SAMPLE_RATE);
  let pos = 0;
  for (const [hz, ms] of segs) {
    const n = Math.round((ms * SAMPLE_RATE) / 1000);
    if (hz > 0) {
      for (let i = 0; i < n; i++) {
        const env = Math.min(1, i / fade, (n - 1 - i) / fade);
        out[pos + i] = Math.round(Math.sin((2 * Math.PI * hz * i) / SAMPLE_RATE) * 0.2 * 32767 * env);
      }
    }
    pos += n;
  }
  return out;
}

/** Reads a WAV earcon as 48 kHz mono; AgentError('config_invalid') naming the setting when it cannot. */
export function loadEarconWav(file: string, name: EarconName): Int16Array {
  let decoded: ReturnType<typeof decodeWav>;
  try {
    decoded = decodeWav(readFileSync(file));
  } catch (err) {
    throw new AgentError('config_invalid', `earcons.${name}: cannot read the WAV ${file}: ${(err as Error).message} (use "default", "off" or a 16-bit PCM WAV)`, { cause: err });
  }
  let mono = decoded.pcm;
  if (decoded.channels > 1) {
    mono = new Int16Array(Math.floor(decoded.pcm.length / decoded.channels));
    for (let i = 0; i < mono.length; i++) {
      let sum = 0;
      for (let c = 0; c < decoded.channels; c++) sum += decoded.pcm[i * decoded.channels + c];
      mono[i] = Math.round(sum / decoded.channels);
    }
  }
  const pcm = decoded.sampleRate === SAMPLE_RATE ? mono : resample(mono, decoded.sampleRate, SAMPLE_RATE);
  const max = (MAX_EARCON_MS * SAMPLE_RATE) / 1000;
  if (pcm.length > max) throw new AgentError('config_invalid', `earcons.${name}: ${file} is longer than ${MAX_EARCON_MS / 1000} s`);
  return pcm;
}

/** The sounds for each name from the settings: undefined = off. */
export function loadEarcons(settings: Record<EarconName, EarconSetting>): Partial<Record<EarconName, Int16Array>> {
  const out: Partial<Record<EarconName, Int16Array>> = {};
  for (const name of EARCON_NAMES) {
    const v = settings[name];
    if (v === 'off') continue;
    out[name] = v === 'default' ? generateEarcon(name) : loadEarconWav(v, name);
  }
  return out;
}

/**
 * Plays earcons by mixing them into the downlink's frames (Downlink calls mix() for every frame it writes).
 * A new earcon replaces one still playing (the newest state is the one to hear).
 */
export class EarconPlayer {
  private sound: Int16Array | undefined;
  private pos = 0;
  private readonly mixed = new Int16Array(FRAME_SAMPLES);
  /** hrtime (ns) of the last play() and of the first frame of it written to the device, for the latency bench */
  readonly timing = { requestedNs: 0n, firstWrittenNs: 0n };
  readonly stats = { played: 0, skippedOff: 0 };

  constructor(private readonly sounds: Partial<Record<EarconName, Int16Array>>) {}

  /** Starts an earcon; false when that earcon is off. */
  play(name: EarconName): boolean {
    const s = this.sounds[name];
    if (!s) {
      this.stats.skippedOff++;
      return false;
    }
    this.sound = s;
    this.pos = 0;
    this.timing.requestedNs = process.hrtime.bigint();
    this.timing.firstWrittenNs = 0n;
    this.stats.played++;
    return true;
  }

  get playing(): boolean {
    return this.sound !== undefined;
  }

  /** The frame to write: `frame` itself when nothing plays, else the mix (its own buffer; `frame` untouched). */
  mix(frame: Int16Array): Int16Array {
    const s = this.sound;
    if (!s) return frame;
    if (this.pos === 0) this.timing.firstWrittenNs = process.hrtime.bigint();
    const n = Math.min(frame.length, this.mixed.length);
    for (let i = 0; i < n; i++) {
      const v = frame[i] + (this.pos + i < s.length ? s[this.pos + i] : 0);
      this.mixed[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
    }
    this.pos += n;
    if (this.pos >= s.length) this.sound = undefined;
    return n === this.mixed.length ? this.mixed : this.mixed.subarray(0, n);
  }
}
