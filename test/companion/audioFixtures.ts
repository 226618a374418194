// Real audio files for upload tests: speech synthesised by the espeak-ng CLI, cut to length and encoded to
// each common upload format by ffmpeg (the same tools a user's phone/browser recording would go through).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const SPEECH =
  'The quick brown fox jumps over the lazy dog. A small boat drifts along the quiet river at dawn. ' +
  'My grandmother used to bake bread every Sunday morning before church. The children laughed and ran across the park. ' +
  'Please remember to water the plants while I am away on holiday. Seven green apples fell from the old tree in the garden. ' +
  'The train to the city leaves at half past nine every weekday. We watched the stars come out one by one over the hills. ' +
  'Reading a good book on a rainy afternoon is one of life\'s simple pleasures. The market was busy with people buying fruit and fish.';

export type UploadFormat = 'wav' | 'mp3' | 'm4a' | 'ogg' | 'webm';

const CODEC: Record<UploadFormat, string[]> = {
  wav: ['-c:a', 'pcm_s16le'],
  mp3: ['-c:a', 'libmp3lame', '-b:a', '64k'],
  m4a: ['-c:a', 'aac', '-b:a', '64k'],
  ogg: ['-c:a', 'libopus', '-b:a', '32k'],
  webm: ['-c:a', 'libopus', '-b:a', '32k'],
};

/** A long speech recording (WAV, 22.05 kHz) in dir, made once per dir. */
export function speechSource(dir: string): string {
  const out = path.join(dir, 'speech-source.wav');
  execFileSync('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', out, SPEECH]);
  return out;
}

/** `seconds` of speech (looped if the source is shorter) in the given format. */
export function speechFile(dir: string, source: string, seconds: number, format: UploadFormat): string {
  const out = path.join(dir, `speech-${seconds}s.${format}`);
  execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-stream_loop', '-1', '-i', source, '-t', String(seconds), '-ac', '1', '-ar', '24000', ...CODEC[format], out]);
  return out;
}

/** `seconds` of digital silence as WAV. */
export function silenceFile(dir: string, seconds: number): string {
  const out = path.join(dir, `silence-${seconds}s.wav`);
  execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `anullsrc=r=16000:cl=mono`, '-t', String(seconds), '-c:a', 'pcm_s16le', out]);
  return out;
}

/** A file that is not audio at all (a text file named .wav). */
export function notAudioFile(dir: string): string {
  const out = path.join(dir, 'not-audio.wav');
  writeFileSync(out, 'this is a plain text file, not a recording\n'.repeat(200));
  return out;
}

export function ffprobeDuration(file: string): number {
  return Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', file], { encoding: 'utf8' }).trim());
}
