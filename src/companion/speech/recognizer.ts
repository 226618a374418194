// The speech-to-text contract used by the realtime assistant (streamed user turns) and the REST API
// (transcribing clone samples). Implemented offline by PocketsphinxRecognizer (pocketsphinxRecognizer.ts), which the
// companion runs in worker threads (ThreadedRecognizer, recognizerThreads.ts).

export interface Recognition {
  text: string;
  /** true when the command grammar (commandGrammar.ts) matched */
  grammarMatch: boolean;
  /** 0..1 when the engine reports one */
  confidence?: number;
}

export type RecognitionMode = 'command' | 'dictation';

export interface RecognizerStream {
  /** Append 16 kHz mono s16 audio; decoding proceeds in the background while the user speaks. */
  write(pcm16k: Int16Array): void;
  /** No more audio: resolves with the result once the tail is decoded. */
  end(): Promise<Recognition>;
  /** Drop the utterance; a pending end() rejects with SpeechError 'ABORTED'. */
  abort(): void;
}

export interface RecognizerStreamOptions {
  /** 'command' (default): grammar first, language-model fallback. 'dictation': language model only. */
  mode?: RecognitionMode;
}

export interface Recognizer {
  readonly sampleRate: 16000;
  createStream(opts?: RecognizerStreamOptions): RecognizerStream;
  recognize(pcm16k: Int16Array, opts?: RecognizerStreamOptions): Promise<Recognition>;
  close(): Promise<void>;
}
