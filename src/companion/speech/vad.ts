// Voice activity detection for live calls: runs on every 20 ms frame of every call, so it is a few
// multiply-adds per sample and allocates nothing per frame.
//
// A frame is "speech-like" when it is both
//   - loud: energy above an adaptive noise floor (+10 dB) and above an absolute minimum, and
//   - voiced: the normalised autocorrelation of the signal (box-decimated to ~4 kHz) peaks above 0.5 at a
//     pitch lag (2.5..16 ms). Stationary noise (white noise, fan hum without harmonics) is loud but not voiced,
//     so it never starts an utterance, and the noise floor then adapts up to it.
// speech_start after minSpeechMs of speech-like frames (short gaps tolerated); speech_end once hangoverMs
// pass without a speech-like frame, so pauses between words do not end the utterance.
// A steady voiced sound (a fridge's or transformer's hum with harmonics, music, TV) is speech-like too, and as the
// floor does not learn from speech it would be one utterance for as long as it lasts. The caller bounds an
// utterance (IncomingAudio's maximum length) and then calls learnNoiseFloor(): the sound that filled a whole
// utterance becomes the floor, so it does not start the next one, and a voice 10 dB above it still does.

export type VadEvent = 'speech_start' | 'speech_end';

export interface VadOptions {
  sampleRate: number;
  /** nominal frame length (frames of any length are accepted; time is counted from their sample counts). */
  frameMs?: number;
  /** silence after the last voiced frame before speech_end (default 300 ms). */
  hangoverMs?: number;
  /** speech-like audio needed before speech_start (default 100 ms). */
  minSpeechMs?: number;
  /** absolute level below which nothing is speech (default -55 dBFS). */
  minLevelDbfs?: number;
}

const DECIMATED_RATE = 4000;
const VOICING_THRESHOLD = 0.5;
const SNR_DB = 10;

export class VoiceActivityDetector {
  private readonly sampleRate: number;
  /** ms of silence that end speech; a call's session may change it (turn_detection.silence_duration_ms) */
  hangoverMs: number;
  private readonly minSpeechMs: number;
  private readonly minLevel: number;
  private readonly decim: number;
  private readonly minLag: number;
  private readonly maxLag: number;
  private readonly win: number;
  private readonly hist: Float32Array; // last maxLag + win decimated samples, newest at the end
  private acc = 0; // partial decimation sum
  private accN = 0;
  private dc = 0;
  private noiseFloorDb = -60;
  private floorInitialised = false;
  /** mean power of the last ~second (normalised to full scale 1), for learnNoiseFloor() */
  private recentPower = 0;
  private speakingNow = false;
  private candidateMs = 0; // speech-like time accumulated before speech_start
  private gapMs = 0; // time since the last speech-like frame
  /** last frame's measurements, for diagnostics and tests */
  lastLevelDbfs = -Infinity;
  lastVoicing = 0;

  constructor(opts: VadOptions) {
    if (!Number.isFinite(opts.sampleRate) || opts.sampleRate < 8000) {
      throw new RangeError(`VoiceActivityDetector: sampleRate must be >= 8000, got ${opts.sampleRate}`);
    }
    this.sampleRate = opts.sampleRate;
    this.hangoverMs = opts.hangoverMs ?? 300;
    this.minSpeechMs = opts.minSpeechMs ?? 100;
    this.minLevel = opts.minLevelDbfs ?? -55;
    this.decim = Math.max(1, Math.round(opts.sampleRate / DECIMATED_RATE));
    const rate = opts.sampleRate / this.decim;
    this.minLag = Math.max(2, Math.floor(rate / 400)); // 400 Hz
    this.maxLag = Math.ceil(rate / 62.5); // 62.5 Hz
    this.win = Math.round(rate * 0.02);
    this.hist = new Float32Array(this.maxLag + this.win);
  }

  get speaking(): boolean {
    return this.speakingNow;
  }

  reset(): void {
    this.hist.fill(0);
    this.acc = this.accN = 0;
    this.speakingNow = false;
    this.candidateMs = this.gapMs = 0;
  }

  /** Forgets speech in progress (as reset(), no speech_end) and takes the level of the last second as the noise
   *  floor, never lowering it: for a sound that went on for a whole maximum-length utterance. It then starts no
   *  utterance while it stays at that level; louder speech (SNR_DB above it) does, and once the sound stops the floor
   *  falls back to the room's within a few frames (it falls fast). */
  learnNoiseFloor(): void {
    this.reset();
    if (this.recentPower > 0) this.noiseFloorDb = Math.max(this.noiseFloorDb, 10 * Math.log10(this.recentPower));
  }

  /** the current noise floor (dBFS), for diagnostics and tests */
  get noiseFloorDbfs(): number {
    return this.noiseFloorDb;
  }

  process(frame: Int16Array): VadEvent | null {
    const n = frame.length;
    if (n === 0) return null;
    const frameMs = (n * 1000) / this.sampleRate;

    // level (with a slow DC blocker so an offset does not read as energy) and decimation into hist
    let sum = 0;
    let dc = this.dc;
    const hist = this.hist;
    const d = this.decim;
    let newSamples = 0;
    for (let i = 0; i < n; i++) {
      const x = frame[i];
      dc += (x - dc) * 0.001;
      const y = x - dc;
      sum += y * y;
      this.acc += y;
      if (++this.accN === d) {
        // shift by one (hist is ~150 samples: cheaper than a ring buffer's index arithmetic in the lag loop)
        hist.copyWithin(0, 1);
        hist[hist.length - 1] = this.acc / d;
        this.acc = 0;
        this.accN = 0;
        newSamples++;
      }
    }
    this.dc = dc;
    const rms = Math.sqrt(sum / n);
    const level = rms > 0 ? 20 * Math.log10(rms / 32768) : -120;
    this.lastLevelDbfs = level;
    const power = (rms / 32768) ** 2;
    this.recentPower = this.floorInitialised ? this.recentPower + (power - this.recentPower) * Math.min(1, frameMs / 1000) : power;

    const loud = level > this.minLevel && level > this.noiseFloorDb + SNR_DB;
    const voicing = loud && newSamples > 0 ? this.voicing() : 0;
    this.lastVoicing = voicing;
    const speechLike = loud && voicing > VOICING_THRESHOLD;

    // noise floor: falls fast, rises slowly (~3 dB/s), and does not learn from speech
    if (!this.floorInitialised) {
      this.noiseFloorDb = Math.max(level, -90);
      this.floorInitialised = true;
    } else if (!speechLike) {
      if (level < this.noiseFloorDb) this.noiseFloorDb += (level - this.noiseFloorDb) * 0.3;
      else if (!this.speakingNow) this.noiseFloorDb += Math.min(level - this.noiseFloorDb, 0.003 * frameMs);
    }

    if (!this.speakingNow) {
      if (speechLike) {
        this.candidateMs += frameMs;
        this.gapMs = 0;
        if (this.candidateMs >= this.minSpeechMs) {
          this.speakingNow = true;
          this.candidateMs = 0;
          return 'speech_start';
        }
      } else {
        this.gapMs += frameMs;
        if (this.gapMs > 60) this.candidateMs = 0; // brief dips inside a syllable are tolerated
      }
      return null;
    }
    if (speechLike) {
      this.gapMs = 0;
      return null;
    }
    this.gapMs += frameMs;
    if (this.gapMs >= this.hangoverMs) {
      this.speakingNow = false;
      this.gapMs = 0;
      return 'speech_end';
    }
    return null;
  }

  /** max over pitch lags of the normalised correlation between the newest window and its lagged copy */
  private voicing(): number {
    const h = this.hist;
    const w = this.win;
    const start = h.length - w;
    let ea = 0;
    for (let i = start; i < h.length; i++) ea += h[i] * h[i];
    if (ea === 0) return 0;
    let best = 0;
    for (let lag = this.minLag; lag <= this.maxLag; lag++) {
      let ab = 0;
      let eb = 0;
      const off = start - lag;
      for (let i = 0; i < w; i++) {
        const b = h[off + i];
        ab += h[start + i] * b;
        eb += b * b;
      }
      if (eb > 0 && ab > 0) {
        const r = ab / Math.sqrt(ea * eb);
        if (r > best) best = r;
      }
    }
    return best;
  }
}
