// RIFF/WAVE PCM16 encoding and decoding. Only 16-bit integer PCM is supported because that is what every
// engine here produces and consumes; anything else gets a clear error instead of garbled audio.
import { CodedError } from '../errors.js';

export class WavFormatError extends CodedError<'INVALID_WAV'> {
  override name = 'WavFormatError';
  constructor(message: string) {
    super('INVALID_WAV', message);
  }
}

const HEADER_BYTES = 44;

/** The 44-byte header of a PCM16 WAV whose data chunk is dataBytes long (for streaming with a known length). */
export function wavHeader(dataBytes: number, sampleRate: number, channels = 1): Buffer {
  if (!Number.isInteger(dataBytes) || dataBytes < 0 || dataBytes > 0xffffffff - 36) {
    throw new RangeError(`wavHeader: dataBytes must be an integer in 0..${0xffffffff - 36}, got ${dataBytes}`);
  }
  if (!Number.isInteger(sampleRate) || sampleRate <= 0) throw new RangeError(`wavHeader: bad sampleRate ${sampleRate}`);
  if (!Number.isInteger(channels) || channels < 1) throw new RangeError(`wavHeader: bad channels ${channels}`);
  const h = Buffer.alloc(HEADER_BYTES);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16); // fmt chunk size
  h.writeUInt16LE(1, 20); // WAVE_FORMAT_PCM
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * channels * 2, 28); // byte rate
  h.writeUInt16LE(channels * 2, 32); // block align
  h.writeUInt16LE(16, 34); // bits per sample
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

/** A complete PCM16 WAV file (interleaved samples when channels > 1). */
export function encodeWav(pcm: Int16Array, sampleRate: number, channels = 1): Buffer {
  const data = pcmToBuffer(pcm);
  return Buffer.concat([wavHeader(data.length, sampleRate, channels), data]);
}

/** Little-endian bytes of PCM16 samples, without copying when the platform is little-endian. */
export function pcmToBuffer(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

/** PCM16 samples from little-endian bytes (copied, so the result is aligned and owns its memory). */
export function bufferToPcm(buf: Buffer): Int16Array {
  const n = buf.length >> 1;
  const out = new Int16Array(n);
  Buffer.from(out.buffer).set(buf.subarray(0, n * 2));
  return out;
}

/** Parses a PCM16 WAV. Accepts WAVE_FORMAT_PCM and WAVE_FORMAT_EXTENSIBLE/PCM, skips unknown chunks, and
 *  tolerates the 0xFFFFFFFF/0 data sizes written by streaming encoders (data then runs to the end). */
export function decodeWav(buf: Buffer): { pcm: Int16Array; sampleRate: number; channels: number } {
  if (buf.length < 12 || buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') {
    throw new WavFormatError('not a RIFF/WAVE file');
  }
  let off = 12;
  let fmt: { format: number; channels: number; sampleRate: number; bits: number } | undefined;
  while (off + 8 <= buf.length) {
    const id = buf.toString('ascii', off, off + 4);
    let size = buf.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > buf.length) throw new WavFormatError('truncated fmt chunk');
      let format = buf.readUInt16LE(body);
      const channels = buf.readUInt16LE(body + 2);
      const sampleRate = buf.readUInt32LE(body + 4);
      const bits = buf.readUInt16LE(body + 14);
      if (format === 0xfffe && size >= 40 && body + 26 <= buf.length) format = buf.readUInt16LE(body + 24); // sub-format GUID's first 2 bytes
      fmt = { format, channels, sampleRate, bits };
    } else if (id === 'data') {
      if (!fmt) throw new WavFormatError('data chunk before fmt chunk');
      if (fmt.format !== 1 || fmt.bits !== 16) {
        throw new WavFormatError(`unsupported WAV encoding (format ${fmt.format}, ${fmt.bits} bits): only 16-bit PCM is supported`);
      }
      if (fmt.channels < 1 || fmt.sampleRate < 1) throw new WavFormatError('WAV declares zero channels or sample rate');
      if (size === 0xffffffff || size === 0 || body + size > buf.length) size = buf.length - body;
      const frameBytes = 2 * fmt.channels;
      const usable = size - (size % frameBytes);
      return { pcm: bufferToPcm(buf.subarray(body, body + usable)), sampleRate: fmt.sampleRate, channels: fmt.channels };
    }
    off = body + size + (size & 1); // chunks are word-aligned
  }
  throw new WavFormatError(fmt ? 'WAV has no data chunk' : 'WAV has no fmt chunk');
}
