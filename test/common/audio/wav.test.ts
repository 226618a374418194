import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeWav, encodeWav, wavHeader, WavFormatError } from '../../../src/common/audio/wav.js';
import { dominantFrequency, sineWave } from '../../../src/common/audio/signal.js';

const dir = path.resolve(import.meta.dirname, '../../../.test-runtime/wav-test');

describe('wav', () => {
  it('round-trips mono and stereo PCM16', () => {
    const tone = sineWave(440, 16000, 0.5);
    const back = decodeWav(encodeWav(tone, 16000));
    expect(back.sampleRate).toBe(16000);
    expect(back.channels).toBe(1);
    expect(Array.from(back.pcm)).toEqual(Array.from(tone));
    const stereo = new Int16Array([1, -1, 2, -2, 32767, -32768]);
    const s = decodeWav(encodeWav(stereo, 48000, 2));
    expect(s.channels).toBe(2);
    expect(Array.from(s.pcm)).toEqual([1, -1, 2, -2, 32767, -32768]);
  });

  it('writes a header that sox reads back as the same audio', () => {
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'tone.wav');
    const tone = sineWave(1000, 22050, 1);
    writeFileSync(file, encodeWav(tone, 22050));
    const info = execFileSync('soxi', [file], { encoding: 'utf8' });
    expect(info).toMatch(/Sample Rate\s*:\s*22050/);
    expect(info).toMatch(/Channels\s*:\s*1/);
    expect(info).toMatch(/16-bit/);
    expect(info).toMatch(/22050 samples/);
  });

  it('reads files written by ffmpeg (extra LIST chunk) and keeps the tone', () => {
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'ffmpeg-tone.wav');
    execFileSync('ffmpeg', ['-y', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=frequency=700:duration=1', '-ar', '16000', '-ac', '1', '-c:a', 'pcm_s16le', file]);
    const w = decodeWav(readFileSync(file));
    expect(w.sampleRate).toBe(16000);
    expect(w.pcm.length).toBe(16000);
    expect(dominantFrequency(w.pcm, 16000)).toBeCloseTo(700, -1);
  });

  it('wavHeader matches the header of encodeWav, for streaming with a known length', () => {
    const pcm = new Int16Array(1234);
    expect(wavHeader(pcm.byteLength, 22050, 1).equals(encodeWav(pcm, 22050).subarray(0, 44))).toBe(true);
    expect(() => wavHeader(-1, 22050)).toThrow(RangeError);
  });

  it('rejects non-WAV and non-PCM16 input with a clear error', () => {
    expect(() => decodeWav(Buffer.from('hello world, not a wav'))).toThrow(WavFormatError);
    mkdirSync(dir, { recursive: true });
    const f32 = path.join(dir, 'float.wav');
    execFileSync('ffmpeg', ['-y', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=0.2', '-c:a', 'pcm_f32le', f32]);
    expect(() => decodeWav(readFileSync(f32))).toThrow(/only 16-bit PCM/);
  });
});
