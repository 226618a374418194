// Debian's libopus (libopus0: libopus.so.0) decoder, called in-process through koffi. @discordjs/opus, which
// encodes, always decodes with decode_fec = 0 (its node-opus.cc), so a lost packet could only be concealed; with
// the decoder called directly, the next packet's in-band FEC (the coarse copy of the previous frame that libwebrtc
// and this project's encoders send once the far end reports loss) recovers it. One koffi call per 20 ms frame.
import koffi from 'koffi';

export const LIBOPUS_LIBRARY = 'libopus.so.0';

/** opus_defines.h */
const OPUS_RESET_STATE = 4028;

type Fn = (...args: unknown[]) => unknown;
interface OpusApi {
  create: Fn;
  destroy: Fn;
  decode: Fn;
  ctl: Fn;
  strerror: Fn;
  version: Fn;
}

let api: OpusApi | undefined;
function opus(): OpusApi {
  if (api) return api;
  let lib: ReturnType<typeof koffi.load>;
  try {
    lib = koffi.load(LIBOPUS_LIBRARY);
  } catch (cause) {
    // the loader's own words too: an installed package whose library cannot load (another architecture's, damaged)
    const why = (cause as Error).message?.split('\n')[0] ?? String(cause);
    const pkg = process.arch === 'arm' ? 'libopus0:armhf' : 'libopus0';
    throw new Error(`decoding the call's audio needs ${LIBOPUS_LIBRARY} (Debian/Raspberry Pi OS: apt install ${pkg}): ${why}`, { cause });
  }
  api = {
    create: lib.func('void *opus_decoder_create(int32_t Fs, int channels, _Out_ int *error)') as Fn,
    destroy: lib.func('void opus_decoder_destroy(void *st)') as Fn,
    decode: lib.func('int opus_decode(void *st, const uint8_t *data, int32_t len, int16_t *pcm, int frame_size, int decode_fec)') as Fn,
    ctl: lib.func('int opus_decoder_ctl(void *st, int request, ...)') as Fn,
    strerror: lib.func('const char *opus_strerror(int error)') as Fn,
    version: lib.func('const char *opus_get_version_string(void)') as Fn,
  };
  return api;
}

/** libopus's own version string ("libopus 1.3.1"); throws as a decoder would when the library is missing. */
export function libopusVersion(): string {
  return String(opus().version());
}

// a decoder whose owner was collected without close() is destroyed then (its C state is ~26 KB)
const orphans = new FinalizationRegistry<unknown>((st) => opus().destroy(st));

/** One libopus decoder: mono or stereo s16 at `sampleRate`. Methods return the samples decoded, or throw. */
export class LibopusDecoder {
  private st: unknown;

  constructor(readonly sampleRate: number, readonly channels: number) {
    const err = [0];
    const st = opus().create(sampleRate, channels, err);
    if (!st || err[0] !== 0) throw new Error(`libopus could not make a decoder: ${String(opus().strerror(err[0]))}`);
    this.st = st;
    orphans.register(this, st, this);
  }

  /**
   * Decodes `packet` into `pcm` (at most pcm.length / channels samples per channel). `fec`: decode the frame
   * BEFORE this packet from its in-band FEC, exactly `frameSize` samples (libopus conceals where it has none).
   * `packet` null: conceal `frameSize` lost samples (PLC).
   */
  decode(packet: Buffer | null, pcm: Int16Array, frameSize: number, fec = false): number {
    if (!this.st) throw new Error('the Opus decoder is closed');
    const n = opus().decode(this.st, packet, packet ? packet.length : 0, pcm, frameSize, fec ? 1 : 0) as number;
    if (n < 0) throw new Error(`opus_decode: ${String(opus().strerror(n))}`);
    return n;
  }

  /** The state of a freshly made decoder, in place. */
  reset(): void {
    if (this.st) opus().ctl(this.st, OPUS_RESET_STATE);
  }

  close(): void {
    if (!this.st) return;
    orphans.unregister(this);
    opus().destroy(this.st);
    this.st = undefined;
  }
}
