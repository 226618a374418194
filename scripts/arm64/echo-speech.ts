// The speech scripts/arm64/echo.mjs runs on, made on the host by flite (speechWav.ts; an emulated node cannot
// start the host's flite): the far end (farEndSpeech, as bench/agent-aec.bench.ts has it) and the near end's
// command, 48 kHz s16 mono WAVs at flite's levels.
//   npx tsx scripts/arm64/echo-speech.ts OUT_DIR [SECONDS (16)]   -> OUT_DIR/echo-far.wav, OUT_DIR/echo-near.wav
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { encodeWav } from '../../src/common/audio/wav.js';
import { speechClip } from '../../test/support/speechWav.js';
import { NEAR_END_TEXT, NEAR_END_VOICE } from '../../test/support/syntheticAec.js';
import { farEndSpeech } from '../../test/support/syntheticRoom.js';

const [dir, secs = '16'] = process.argv.slice(2);
const seconds = Number(secs);
if (!dir || !(seconds >= 1)) {
  console.error('usage: tsx scripts/arm64/echo-speech.ts OUT_DIR [SECONDS (16)]');
  process.exit(2);
}
writeFileSync(path.join(dir, 'echo-far.wav'), encodeWav(farEndSpeech(seconds), 48_000));
writeFileSync(path.join(dir, 'echo-near.wav'), encodeWav(speechClip(NEAR_END_TEXT, { voice: NEAR_END_VOICE, padBeforeMs: 0, padAfterMs: 0 }).pcm, 48_000));
