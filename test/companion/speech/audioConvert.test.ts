import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMp3Encoder, decodeToPcm } from '../../../src/companion/speech/audioConvert.js';
import { dominantFrequency, rmsDbfs, sineWave } from '../../../src/common/audio/signal.js';
import { fliteWav } from './speechFixtures.js';

const dir = path.resolve(import.meta.dirname, '../../../.test-runtime/audio-convert');

function ffmpeg(...args: string[]) {
  execFileSync('ffmpeg', ['-y', '-loglevel', 'error', ...args]);
}

describe('decodeToPcm', () => {
  const speechWav = fliteWav('This sample of speech is converted to every common upload format.', 'kal');

  for (const [ext, codec] of [['mp3', ['-c:a', 'libmp3lame']], ['m4a', ['-c:a', 'aac']], ['ogg', ['-c:a', 'libopus']], ['webm', ['-c:a', 'libopus']], ['wav', []]] as [string, string[]][]) {
    it(`decodes speech from ${ext} (file path and buffer) to 16 kHz mono`, async () => {
      mkdirSync(dir, { recursive: true });
      const file = path.join(dir, `speech.${ext}`);
      // stereo at a typical phone rate; Opus only encodes at 48 kHz (and its divisors)
      ffmpeg('-i', speechWav, '-ac', '2', '-ar', codec.includes('libopus') ? '48000' : '44100', ...codec, file);
      const expectedSec = Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', speechWav], { encoding: 'utf8' }));
      const fromPath = await decodeToPcm(file, { sampleRate: 16000 });
      expect(fromPath.sampleRate).toBe(16000);
      expect(Math.abs(fromPath.durationSec - expectedSec)).toBeLessThan(0.15);
      expect(rmsDbfs(fromPath.pcm)).toBeGreaterThan(-40);
      const fromBuffer = await decodeToPcm(readFileSync(file), { sampleRate: 16000 });
      expect(fromBuffer.pcm.length).toBe(fromPath.pcm.length);
    });
  }

  it('stops decoding just past maxDurationSec, so an over-long upload is still recognisable as too long', async () => {
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'long.m4a');
    ffmpeg('-f', 'lavfi', '-i', 'sine=frequency=500:duration=120', '-c:a', 'aac', file);
    const d = await decodeToPcm(file, { sampleRate: 16000, maxDurationSec: 30 });
    expect(d.durationSec).toBeGreaterThan(30);
    expect(d.durationSec).toBeLessThanOrEqual(30.6);
  });

  it('keeps a tone at its frequency when converting rates', async () => {
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'tone.mp3');
    ffmpeg('-f', 'lavfi', '-i', 'sine=frequency=1200:duration=2', '-ar', '44100', '-c:a', 'libmp3lame', file);
    const d = await decodeToPcm(file, { sampleRate: 48000 });
    expect(Math.abs(dominantFrequency(d.pcm, 48000) - 1200)).toBeLessThan(3);
  });

  it('rejects garbage with INVALID_AUDIO and empty input with EMPTY_AUDIO', async () => {
    mkdirSync(dir, { recursive: true });
    await expect(decodeToPcm(Buffer.from('definitely not audio, just text '.repeat(20)), { sampleRate: 16000 })).rejects.toMatchObject({ code: 'INVALID_AUDIO' });
    await expect(decodeToPcm(Buffer.alloc(0), { sampleRate: 16000 })).rejects.toMatchObject({ code: 'EMPTY_AUDIO' });
    const empty = path.join(dir, 'empty.wav');
    writeFileSync(empty, '');
    await expect(decodeToPcm(empty, { sampleRate: 16000 })).rejects.toMatchObject({ code: 'EMPTY_AUDIO' });
    // a valid container with zero samples
    const zero = path.join(dir, 'zero.wav');
    ffmpeg('-f', 'lavfi', '-i', 'anullsrc=r=16000:cl=mono', '-t', '0', '-c:a', 'pcm_s16le', zero);
    await expect(decodeToPcm(zero, { sampleRate: 16000 })).rejects.toMatchObject({ code: 'EMPTY_AUDIO' });
    await expect(decodeToPcm(path.join(dir, 'missing.wav'), { sampleRate: 16000 })).rejects.toMatchObject({ code: 'INVALID_AUDIO' });
    await expect(decodeToPcm(empty, { sampleRate: 3 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('createMp3Encoder', () => {
  it('streams PCM in and MP3 out that decodes back to the same tone and length', async () => {
    const enc = createMp3Encoder(22050);
    const out: Buffer[] = [];
    enc.output.on('data', (b: Buffer) => out.push(b));
    const tone = sineWave(880, 22050, 3, 0.5);
    for (let i = 0; i < tone.length; i += 1000) enc.write(tone.subarray(i, i + 1000));
    await enc.end();
    const mp3 = Buffer.concat(out);
    expect(mp3.length).toBeGreaterThan(3 * 64000 / 8 * 0.8);
    expect(mp3.subarray(0, 3).toString('latin1') === 'ID3' || (mp3[0] === 0xff && (mp3[1] & 0xe0) === 0xe0)).toBe(true);
    const back = await decodeToPcm(mp3, { sampleRate: 22050 });
    expect(Math.abs(back.durationSec - 3)).toBeLessThan(0.1);
    expect(Math.abs(dominantFrequency(back.pcm, 22050) - 880)).toBeLessThan(3);
  });

  it('abort() kills the encoder and end() then rejects', async () => {
    const enc = createMp3Encoder(16000);
    enc.output.resume();
    enc.write(sineWave(440, 16000, 1));
    enc.abort();
    await expect(enc.end()).rejects.toMatchObject({ code: 'ABORTED' });
    expect(() => createMp3Encoder(7)).toThrow(/sampleRate/);
  });
});
