// Synthesis into a stored audio file: PCM streams from the adapter straight into a WAV file (header filled in
// at the end) or into the MP3 encoder running alongside, so memory stays flat whatever the text length.
// The file is written in tmp/ and renamed into audio/ only when complete; every error path removes it.
import { createReadStream, createWriteStream, promises as fs } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { bufferToPcm } from '../../common/audio/wav.js';
import { RestError } from '../../protocol/restErrors.js';
import type { CompanionContext } from '../context.js';
import { createMp3Encoder, type Mp3Encoder } from '../speech/audioConvert.js';
import type { AdapterSynthesisResult, TtsVoice } from '../tts/ttsAdapter.js';
import { adapterFailure } from './adapterErrors.js';
import { PcmFileWriter } from './pcmFile.js';

export interface SynthesisJob {
  text: string;
  voice: TtsVoice;
  speed?: number;
  stability?: number;
  signal?: AbortSignal;
}

export interface StoredSynthesis {
  /** temp file holding the complete output (caller commits or removes it) */
  tempPath: string;
  result: AdapterSynthesisResult;
  /** PCM bytes (WAV/PCM outputs) */
  pcmBytes: number;
}

function storageError(err: unknown): RestError {
  return new RestError('STORAGE_ERROR', 'the audio could not be stored', { cause: err });
}

/** Synthesises into a temp WAV (wav: true) or headerless PCM file. */
export async function synthesizeToPcmFile(ctx: CompanionContext, job: SynthesisJob, opts: { wav: boolean }): Promise<StoredSynthesis> {
  const tempPath = ctx.audio.tempPath(opts.wav ? '.wav' : '.pcm');
  let writer: PcmFileWriter;
  try {
    writer = new PcmFileWriter(tempPath, { wav: opts.wav, sampleRate: ctx.tts.sampleRate });
  } catch (err) {
    throw storageError(err);
  }
  let writeError: unknown;
  try {
    const result = await ctx.tts.synthesizeWithTimestamps({
      text: job.text,
      voice: job.voice,
      speed: job.speed,
      stability: job.stability,
      signal: job.signal,
      lane: 'bulk',
      onAudio: (pcm) => {
        if (writeError) return;
        try {
          writer.write(pcm);
        } catch (err) {
          writeError = err;
        }
      },
    });
    if (writeError) throw storageError(writeError);
    let pcmBytes: number;
    try {
      pcmBytes = writer.finish(result.sampleRate);
    } catch (err) {
      throw storageError(err);
    }
    return { tempPath, result, pcmBytes };
  } catch (err) {
    writer.abandon();
    await fs.rm(tempPath, { force: true });
    throw err instanceof RestError ? err : adapterFailure(err);
  }
}

/** Synthesises into a temp MP3 file; the encoder runs while the synthesiser produces audio. */
export async function synthesizeToMp3File(ctx: CompanionContext, job: SynthesisJob): Promise<StoredSynthesis> {
  const rate = ctx.tts.sampleRate;
  if (rate === undefined) {
    // the adapter tells its rate only with the audio: synthesise to WAV, then encode that file
    const wav = await synthesizeToPcmFile(ctx, job, { wav: false });
    const tempPath = ctx.audio.tempPath('.mp3');
    let enc: Mp3Encoder | undefined;
    let out: Promise<void> | undefined;
    try {
      enc = createMp3Encoder(wav.result.sampleRate);
      out = pipeline(enc.output, createWriteStream(tempPath, { mode: 0o600 }));
      for await (const chunk of createReadStream(wav.tempPath, { highWaterMark: 256 * 1024 })) {
        enc.write(bufferToPcm(chunk as Buffer));
      }
      await Promise.all([enc.end(), out]);
      return { tempPath, result: wav.result, pcmBytes: wav.pcmBytes };
    } catch (err) {
      // a read of the WAV that failed (EIO, EMFILE) left ffmpeg waiting on its open input: one process a request
      enc?.abort();
      await out?.catch(() => {}); // settles once ffmpeg is gone (the file then written no more); reported below
      await fs.rm(tempPath, { force: true });
      throw new RestError('TTS_FAILED', 'MP3 encoding failed', { cause: err });
    } finally {
      await fs.rm(wav.tempPath, { force: true });
    }
  }

  const tempPath = ctx.audio.tempPath('.mp3');
  let enc: Mp3Encoder;
  try {
    enc = createMp3Encoder(rate);
  } catch (err) {
    throw new RestError('TTS_FAILED', 'the MP3 encoder could not start', { cause: err });
  }
  const written = pipeline(enc.output, createWriteStream(tempPath, { mode: 0o600 }));
  written.catch(() => undefined); // awaited below; never unhandled
  let pcmBytes = 0;
  // the synthesiser delivers small pieces; the encoder gets 64 KiB writes (fewer pipe writes and copies)
  const batch = new Int16Array(32 * 1024);
  let filled = 0;
  try {
    const result = await ctx.tts.synthesizeWithTimestamps({
      text: job.text,
      voice: job.voice,
      speed: job.speed,
      stability: job.stability,
      signal: job.signal,
      lane: 'bulk',
      onAudio: (pcm) => {
        pcmBytes += pcm.byteLength;
        let off = 0;
        while (off < pcm.length) {
          const n = Math.min(pcm.length - off, batch.length - filled);
          batch.set(pcm.subarray(off, off + n), filled);
          filled += n;
          off += n;
          if (filled === batch.length) {
            enc.write(batch); // copied by the encoder
            filled = 0;
          }
        }
      },
    });
    if (filled > 0) enc.write(batch.subarray(0, filled));
    try {
      await enc.end();
    } catch (err) {
      throw new RestError('TTS_FAILED', 'MP3 encoding failed', { cause: err });
    }
    try {
      await written;
    } catch (err) {
      throw storageError(err);
    }
    return { tempPath, result, pcmBytes };
  } catch (err) {
    enc.abort();
    await written.catch(() => undefined);
    await fs.rm(tempPath, { force: true });
    throw err instanceof RestError ? err : adapterFailure(err);
  }
}
