// Writes streamed PCM16 to a file with flat memory: samples are gathered in one fixed 256 KiB buffer and
// written when it fills (page-cache writes of that size take well under a millisecond, so the event loop
// is not held). WAV mode reserves the 44-byte header and fills it in once the length is known.
import { closeSync, openSync, writeSync } from 'node:fs';
import { wavHeader } from '../../common/audio/wav.js';

const BUFFER_BYTES = 256 * 1024;

export class PcmFileWriter {
  private fd: number | undefined;
  private readonly buf = Buffer.allocUnsafe(BUFFER_BYTES);
  private used = 0;
  private dataBytes = 0;
  private readonly headerBytes: number;

  constructor(
    readonly path: string,
    private readonly opts: { wav: boolean; sampleRate?: number },
  ) {
    this.fd = openSync(path, 'w', 0o600);
    this.headerBytes = opts.wav ? 44 : 0;
    if (opts.wav) writeSync(this.fd, Buffer.alloc(44), 0, 44, 0);
  }

  get bytes(): number {
    return this.dataBytes;
  }

  write(pcm: Int16Array): void {
    if (this.fd === undefined) return;
    let src = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    while (src.length > 0) {
      const n = Math.min(src.length, BUFFER_BYTES - this.used);
      src.copy(this.buf, this.used, 0, n);
      this.used += n;
      src = src.subarray(n);
      if (this.used === BUFFER_BYTES) this.flush();
    }
  }

  private flush(): void {
    if (this.fd === undefined || this.used === 0) return;
    writeSync(this.fd, this.buf, 0, this.used, this.headerBytes + this.dataBytes);
    this.dataBytes += this.used;
    this.used = 0;
  }

  /** Flushes, writes the WAV header (WAV mode) and closes; returns the PCM byte count. */
  finish(sampleRate?: number): number {
    this.flush();
    if (this.fd !== undefined) {
      if (this.opts.wav) {
        const h = wavHeader(this.dataBytes, sampleRate ?? this.opts.sampleRate ?? 22050);
        writeSync(this.fd, h, 0, h.length, 0);
      }
      closeSync(this.fd);
      this.fd = undefined;
    }
    return this.dataBytes;
  }

  /** Closes without finishing (error paths; the caller removes the file). */
  abandon(): void {
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd);
      } catch {
        /* already closed */
      }
      this.fd = undefined;
    }
  }
}
