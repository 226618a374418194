// The text-to-speech contract used by the REST API (timestamped synthesis, story narration) and the realtime
// assistant (replies). Implemented offline by EspeakSynthesizer (espeakSynthesizer.ts).

export interface VoiceParams {
  /** espeak voice name, e.g. 'en-us', 'en-gb', 'de'. */
  language: string;
  gender?: 'male' | 'female';
  age?: number;
  /** espeak variant file name (espeak-ng-data/voices/!v), e.g. 'f3', 'm2'. */
  variant?: string;
  /** base pitch 0..100 (espeak default 50). */
  pitch?: number;
  /** pitch range 0..100 (espeak default 50); 0 is monotone. */
  range?: number;
  /** words per minute, 80..450 (espeak default 175). */
  rate?: number;
}

export interface WordTiming {
  word: string;
  startMs: number;
  endMs: number;
  /** offset of the word in the input text, in UTF-16 code units (JS string index). */
  textOffset: number;
  textLength: number;
}

export interface SynthesisResult {
  words: WordTiming[];
  samples: number;
  sampleRate: number;
  durationMs: number;
}

/** 'realtime' work (short assistant replies) never waits behind 'bulk' work (REST synthesis, stories). */
export type SynthesisLane = 'realtime' | 'bulk';

export interface SynthesizeOptions {
  /** multiplies the voice's rate (1 = unchanged); the result is clamped to espeak's 80..450 wpm. */
  speed?: number;
  /** receives mono s16 PCM at sampleRate as it is produced; memory stays flat for long text. */
  onAudio: (pcm: Int16Array) => void;
  signal?: AbortSignal;
  /** default 'bulk'. */
  lane?: SynthesisLane;
}

export interface Synthesizer {
  readonly sampleRate: number;
  /** Streams PCM to opts.onAudio as it is produced; resolves with word timings. Rejects with SpeechError
   *  'TTS_FAILED' (engine fault) or 'ABORTED' (signal). */
  synthesize(text: string, voice: VoiceParams, opts: SynthesizeOptions): Promise<SynthesisResult>;
  close(): Promise<void>;
}
