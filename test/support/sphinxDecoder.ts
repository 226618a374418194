// A bare pocketsphinx decoder (Debian's libpocketsphinx3 and model, through koffi), configured by hand: the
// reference the recogniser's own decoders are checked against (same library, same model, another dictionary),
// and the anchor of bench/recognizer-memory.bench.ts.
import koffi from 'koffi';
import path from 'node:path';

export const MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
export const FULL_DICT = path.join(MODEL_DIR, 'cmudict-en-us.dict');

type Fn = (...args: unknown[]) => unknown;
let api: Record<string, Fn> | undefined;
function sphinx(): Record<string, Fn> {
  if (api) return api;
  const base = koffi.load('libsphinxbase.so.3');
  const lib = koffi.load('libpocketsphinx.so.3');
  base.func('void err_set_logfp(void *fp)')(null);
  api = {
    cmdLnInit: base.func('void *cmd_ln_init(void *inout, void *defn, int strict, ...)') as Fn,
    psArgs: lib.func('void *ps_args()') as Fn,
    psInit: lib.func('void *ps_init(void *config)') as Fn,
    psFree: lib.func('int ps_free(void *ps)') as Fn,
    addWord: lib.func('int ps_add_word(void *ps, const char *word, const char *phones, int update)') as Fn,
    setJsgf: lib.func('int ps_set_jsgf_string(void *ps, const char *name, const char *jsgf)') as Fn,
    setSearch: lib.func('int ps_set_search(void *ps, const char *name)') as Fn,
    startUtt: lib.func('int ps_start_utt(void *ps)') as Fn,
    processRaw: lib.func('int ps_process_raw(void *ps, const int16_t *data, size_t n, int no_search, int full_utt)') as Fn,
    endUtt: lib.func('int ps_end_utt(void *ps)') as Fn,
    getHyp: lib.func('const char *ps_get_hyp(void *ps, _Out_ int *score)') as Fn,
  };
  return api;
}

export interface RawDecoderOptions {
  dict: string;
  /** with Debian's en-us language model (and these extra options) */
  lm?: Record<string, string>;
}

export class RawDecoder {
  private constructor(private ps: unknown) {}

  static create(o: RawDecoderOptions): RawDecoder {
    const a = sphinx();
    const s = 'const char *';
    const args: unknown[] = [null, a.psArgs(), 1, s, '-hmm', s, path.join(MODEL_DIR, 'en-us'), s, '-dict', s, o.dict];
    if (o.lm) args.push(s, '-lm', s, path.join(MODEL_DIR, 'en-us.lm.bin'), ...Object.entries(o.lm).flatMap(([k, v]) => [s, k, s, v]));
    args.push(s, null);
    const ps = a.psInit(a.cmdLnInit(...args));
    if (!ps) throw new Error(`pocketsphinx could not start with ${o.dict}`);
    return new RawDecoder(ps);
  }

  addWord(head: string, phones: string): void {
    if ((sphinx().addWord(this.ps, head, phones, 0) as number) < 0) throw new Error(`ps_add_word ${head}`);
  }

  setGrammar(jsgf: string): void {
    const a = sphinx();
    if ((a.setJsgf(this.ps, 'commands', jsgf) as number) < 0 || (a.setSearch(this.ps, 'commands') as number) < 0) throw new Error('grammar refused');
  }

  /** One utterance: whole (full_utt) or in 100 ms batches as the recogniser streams; the hypothesis and its score. */
  decode(pcm: Int16Array, streamed: boolean): { text: string; score: number } {
    const a = sphinx();
    a.startUtt(this.ps);
    if (streamed) {
      for (let i = 0; i < pcm.length; i += 1600) {
        const c = pcm.subarray(i, i + 1600);
        a.processRaw(this.ps, c, c.length, 0, 0);
      }
    } else {
      a.processRaw(this.ps, pcm, pcm.length, 0, 1);
    }
    a.endUtt(this.ps);
    const score = [0];
    const text = (a.getHyp(this.ps, score) as string | null) ?? '';
    return { text: text.trim(), score: score[0] };
  }

  close(): void {
    if (this.ps) sphinx().psFree(this.ps);
    this.ps = undefined;
  }
}
