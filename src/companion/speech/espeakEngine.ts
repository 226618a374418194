// In-process binding to libespeak-ng through koffi, in synchronous mode: espeak_Synth runs on the calling
// thread and hands PCM plus WORD/END events to a callback. espeak-ng keeps process-global state and synthesis
// is CPU work, so this module is only ever loaded inside a synthesis worker process (espeakWorker.ts), one
// engine per process; the companion's main thread talks to it through EspeakSynthesizer.
import koffi from 'koffi';

export const ESPEAK_EVENT = { LIST_TERMINATED: 0, WORD: 1, SENTENCE: 2, MARK: 3, PLAY: 4, END: 5, MSG_TERMINATED: 6, PHONEME: 7, SAMPLERATE: 8 } as const;

export interface EspeakRawEvent {
  type: number;
  /** 1-based character (code point) position in the text of this espeak_Synth call */
  textPosition: number;
  length: number;
  /** ms from the start of this espeak_Synth call's audio */
  audioPositionMs: number;
  /** samples from the start of this espeak_Synth call's audio */
  sample: number;
}

export interface EspeakVoiceSettings {
  /** espeak voice name with optional '+variant', e.g. 'en-us+f3' */
  name: string;
  rate: number;
  pitch: number;
  range: number;
}

const AUDIO_OUTPUT_SYNCHRONOUS = 2;
const espeakCHARS_UTF8 = 1;
const espeakENDPAUSE = 0x1000;
const espeakRATE = 1;
const espeakVOLUME = 2;
const espeakPITCH = 3;
const espeakRANGE = 4;
const POS_CHARACTER = 1;

export class EspeakEngine {
  readonly sampleRate: number;
  private readonly synth: (text: string, size: number, pos: number, posType: number, end: number, flags: number, uid: null, user: null) => number;
  private readonly setParameter: (p: number, v: number, rel: number) => number;
  private readonly setVoiceByName: (name: string) => number;
  private readonly eventType: ReturnType<typeof koffi.struct>;
  private readonly eventSize: number;
  private onChunk: ((pcm: Int16Array, events: EspeakRawEvent[]) => boolean) | null = null;

  constructor(opts: { bufferMs?: number; libName?: string } = {}) {
    const libName = opts.libName ?? 'libespeak-ng.so.1';
    const lib = koffi.load(libName);
    // The real C types, so koffi computes the layout for the running ABI (LP64: 40 bytes; 32-bit ARM: 36, as
    // void* and the union shrink to 4 and 8 bytes with 4-byte alignment).
    this.eventType = koffi.struct('espeak_EVENT', {
      type: 'int', // espeak_EVENT_TYPE (a C enum: int-sized)
      unique_identifier: 'unsigned int',
      text_position: 'int',
      length: 'int',
      audio_position: 'int',
      sample: 'int',
      user_data: 'void *',
      id: koffi.union('espeak_EVENT_id', { number: 'int', name: 'const char *', string: koffi.array('char', 8, 'Array') }),
    });
    this.eventSize = koffi.sizeof(this.eventType);
    const callbackProto = koffi.proto('int t_espeak_callback(short *wav, int numsamples, espeak_EVENT *events)');
    const initialize = lib.func('int espeak_Initialize(int output, int buflength, const char *path, int options)');
    const setSynthCallback = lib.func('void espeak_SetSynthCallback(t_espeak_callback *cb)');
    this.synth = lib.func(
      'int espeak_Synth(const char *text, size_t size, unsigned int position, int position_type, unsigned int end_position, unsigned int flags, unsigned int *uid, void *user_data)',
    );
    this.setParameter = lib.func('int espeak_SetParameter(int parameter, int value, int relative)');
    this.setVoiceByName = lib.func('int espeak_SetVoiceByName(const char *name)');

    // buffer length: short for realtime replies (fast first chunk), longer for bulk (fewer callbacks).
    const rate = initialize(AUDIO_OUTPUT_SYNCHRONOUS, opts.bufferMs ?? 60, null as unknown as string, 0x8000 /* DONT_EXIT */);
    if (rate <= 0) throw new Error(`espeak_Initialize failed (${rate}): is espeak-ng-data installed?`);
    this.sampleRate = rate;
    const cb = koffi.register((wav: unknown, numsamples: number, events: unknown) => this.callback(wav, numsamples, events), koffi.pointer(callbackProto));
    setSynthCallback(cb);
  }

  private callback(wav: unknown, numsamples: number, eventsPtr: unknown): number {
    const evs: EspeakRawEvent[] = [];
    if (eventsPtr) {
      for (let i = 0; ; i++) {
        const e = koffi.decode(eventsPtr, i * this.eventSize, this.eventType) as {
          type: number; text_position: number; length: number; audio_position: number; sample: number;
        };
        if (e.type === ESPEAK_EVENT.LIST_TERMINATED) break;
        if (e.type === ESPEAK_EVENT.WORD || e.type === ESPEAK_EVENT.END || e.type === ESPEAK_EVENT.SENTENCE) {
          evs.push({ type: e.type, textPosition: e.text_position, length: e.length, audioPositionMs: e.audio_position, sample: e.sample });
        }
        if (i > 100000) break;
      }
    }
    let pcm: Int16Array;
    if (wav && numsamples > 0) {
      // copy out of espeak's buffer, which is reused for the next chunk
      pcm = new Int16Array(koffi.view(wav, numsamples * 2).slice(0));
    } else {
      pcm = new Int16Array(0);
    }
    const keepGoing = this.onChunk ? this.onChunk(pcm, evs) : true;
    return keepGoing ? 0 : 1; // non-zero aborts synthesis
  }

  setVoice(v: EspeakVoiceSettings): void {
    if (this.setVoiceByName(v.name) !== 0) throw new Error(`espeak has no voice named '${v.name}'`);
    // Set every parameter on every call: espeak state outlives a request.
    this.setParameter(espeakRATE, clampInt(v.rate, 80, 450), 0);
    this.setParameter(espeakPITCH, clampInt(v.pitch, 0, 100), 0);
    this.setParameter(espeakRANGE, clampInt(v.range, 0, 100), 0);
    this.setParameter(espeakVOLUME, 100, 0);
  }

  /** Synthesizes text synchronously; onChunk gets each PCM buffer with its events and returns false to stop. */
  synthesize(text: string, onChunk: (pcm: Int16Array, events: EspeakRawEvent[]) => boolean, endPause = true): void {
    this.onChunk = onChunk;
    try {
      const size = Buffer.byteLength(text, 'utf8') + 1;
      const rc = this.synth(text, size, 0, POS_CHARACTER, 0, espeakCHARS_UTF8 | (endPause ? espeakENDPAUSE : 0), null, null);
      if (rc !== 0) throw new Error(`espeak_Synth failed with code ${rc}`);
    } finally {
      this.onChunk = null;
    }
  }
}

function clampInt(v: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, Math.round(v)));
}
