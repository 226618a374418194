// Audio format conversion through the ffmpeg CLI (Debian ffmpeg 5.1): any common upload (wav, mp3, m4a,
// ogg/opus, webm) to mono PCM16 for analysis and recognition, and streaming PCM16 -> MP3 (libmp3lame) for
// synthesis output. ffmpeg runs as a child process, so decoding never blocks the event loop.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { SpeechError } from './speechError.js';
import { bufferToPcm } from '../../common/audio/wav.js';
import { processVariable } from '../../common/processEnv.js';

export interface DecodedAudio {
  pcm: Int16Array;
  sampleRate: number;
  durationSec: number;
}

const FFMPEG = processVariable('ffmpeg') ?? 'ffmpeg';

/** Decodes a file path or an in-memory file to mono PCM16 at opts.sampleRate.
 *  Rejects with SpeechError 'EMPTY_AUDIO' (nothing to decode / zero samples) or 'INVALID_AUDIO' (ffmpeg failed). */
export async function decodeToPcm(
  input: Buffer | string,
  opts: {
    sampleRate: number;
    signal?: AbortSignal;
    /** decode at most this many seconds (plus 0.5 s, so "longer than the limit" stays detectable);
     *  keeps a one-hour upload from becoming 100+ MB of PCM in memory */
    maxDurationSec?: number;
  },
): Promise<DecodedAudio> {
  if (!Number.isInteger(opts.sampleRate) || opts.sampleRate < 4000 || opts.sampleRate > 192000) {
    throw new SpeechError('INVALID_ARGUMENT', `decodeToPcm: sampleRate must be an integer in 4000..192000, got ${opts.sampleRate}`);
  }
  let file: string;
  let tmp: string | undefined;
  if (typeof input === 'string') {
    const st = await stat(input).catch((cause: unknown) => {
      throw new SpeechError('INVALID_AUDIO', `cannot read audio file ${input}`, { cause });
    });
    if (st.size === 0) throw new SpeechError('EMPTY_AUDIO', 'the audio file is empty');
    file = input;
  } else {
    if (input.length === 0) throw new SpeechError('EMPTY_AUDIO', 'the audio is empty');
    // A temporary file rather than a pipe: MP4/M4A with the index at the end needs a seekable input.
    tmp = await mkdtemp(path.join(tmpdir(), 'speech-decode-'));
    file = path.join(tmp, 'input');
    await writeFile(file, input);
  }
  try {
    const limit = opts.maxDurationSec !== undefined && opts.maxDurationSec > 0 ? ['-t', String(opts.maxDurationSec + 0.5)] : [];
    const args = ['-nostdin', '-hide_banner', '-loglevel', 'error', '-i', file, ...limit, '-vn', '-ac', '1', '-ar', String(opts.sampleRate), '-f', 's16le', 'pipe:1'];
    const { stdout, stderr, code } = await run(args, opts.signal);
    if (code !== 0) {
      throw new SpeechError('INVALID_AUDIO', `ffmpeg could not decode the audio: ${lastLine(stderr) || `exit code ${code}`}`);
    }
    const pcm = bufferToPcm(stdout);
    if (pcm.length === 0) throw new SpeechError('EMPTY_AUDIO', 'the audio decodes to zero samples');
    return { pcm, sampleRate: opts.sampleRate, durationSec: pcm.length / opts.sampleRate };
  } finally {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }
}

function lastLine(s: string): string {
  const lines = s.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}

function run(args: string[], signal?: AbortSignal): Promise<{ stdout: Buffer; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new SpeechError('ABORTED', 'decode aborted'));
    const child = spawn(FFMPEG, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    const onAbort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => {
      if (err.length < 8192) err += b.toString();
    });
    child.on('error', (cause) => {
      signal?.removeEventListener('abort', onAbort);
      reject(new SpeechError('INVALID_AUDIO', `cannot run ffmpeg (${FFMPEG})`, { cause }));
    });
    child.on('close', (code) => {
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) return reject(new SpeechError('ABORTED', 'decode aborted'));
      resolve({ stdout: Buffer.concat(out), stderr: err, code });
    });
  });
}

export interface Mp3Encoder {
  /** Queue PCM16 mono samples (copied; the caller may reuse its buffer). */
  write(pcm: Int16Array): void;
  /** No more input: resolves when the last MP3 byte has been written to output; rejects 'ENCODE_FAILED'. */
  end(): Promise<void>;
  /** MP3 bytes as they are encoded. */
  output: Readable;
  /** Kill the encoder (e.g. the client went away). */
  abort(): void;
}

/** A streaming MP3 encoder (ffmpeg + libmp3lame, CBR, default 64 kbit/s mono) for PCM16 at sampleRate. */
export function createMp3Encoder(sampleRate: number, opts?: { bitrateKbps?: number }): Mp3Encoder {
  if (!Number.isInteger(sampleRate) || sampleRate < 8000 || sampleRate > 48000) {
    throw new SpeechError('INVALID_ARGUMENT', `createMp3Encoder: sampleRate must be an integer in 8000..48000, got ${sampleRate}`);
  }
  const kbps = opts?.bitrateKbps ?? 64;
  const child = spawn(
    FFMPEG,
    ['-nostdin', '-hide_banner', '-loglevel', 'error', '-f', 's16le', '-ar', String(sampleRate), '-ac', '1', '-i', 'pipe:0',
      // LAME algorithm quality 7 (compression_level): half the CPU of the default 3 at the same bitrate,
      // no audible difference on synthetic speech; 15,000 characters (~17 min) encode in ~2 s of CPU
      '-c:a', 'libmp3lame', '-b:a', `${kbps}k`, '-compression_level', '7', '-f', 'mp3', 'pipe:1'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  let failure: SpeechError | undefined;
  let aborted = false;
  child.stderr.on('data', (b: Buffer) => {
    if (stderr.length < 8192) stderr += b.toString();
  });
  // EPIPE when ffmpeg died early: reported through end()
  child.stdin.on('error', (cause) => {
    failure ??= new SpeechError('ENCODE_FAILED', 'the MP3 encoder stopped accepting audio', { cause });
  });
  const exited = new Promise<void>((resolve, reject) => {
    child.on('error', (cause) => reject(new SpeechError('ENCODE_FAILED', `cannot run ffmpeg (${FFMPEG})`, { cause })));
    child.on('close', (code) => {
      if (aborted) return reject(new SpeechError('ABORTED', 'MP3 encoding aborted'));
      if (code !== 0) return reject(failure ?? new SpeechError('ENCODE_FAILED', `ffmpeg MP3 encoding failed: ${lastLine(stderr) || `exit code ${code}`}`));
      resolve();
    });
  });
  exited.catch(() => {}); // observed through end(); never an unhandled rejection
  return {
    output: child.stdout,
    write(pcm: Int16Array) {
      if (aborted || child.stdin.destroyed) return;
      child.stdin.write(Buffer.from(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength)));
    },
    async end() {
      if (!child.stdin.destroyed) child.stdin.end();
      await exited;
    },
    abort() {
      aborted = true;
      child.kill('SIGKILL');
    },
  };
}
