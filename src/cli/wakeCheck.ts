// doctor's wake word check (issue #16): the configured engine loads with the configured phrase and sensitivity,
// and hears that phrase spoken by a synthetic voice over a quiet noise floor, fed to it as the microphone's frames
// would be. The voice: flite's slt when flite is installed (setup.sh installs it), else espeak-ng in-process
// (libespeak-ng is on every speaker), which the engine hears badly at the default sensitivity: then the check
// warns, it does not fail. It does not go through the room (speaker -> microphone): the capture and echo checks do.
import { speakOffline } from './speakOffline.js';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Settings } from '../agent/settings.js';
import { decodeWav } from '../common/audio/wav.js';
import { rebuildAdvice } from '../common/addonAdvice.js';
import { isWakeStartTimeout } from '../agent/wake/wakeThread.js';
import { openWakeWordEngine, type WakeEvent } from '../agent/wake/wakeWord.js';
import { resample } from '../common/audio/resample.js';
import { silentLogger } from '../common/logger.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../protocol/media.js';

export interface WakeCheckResult {
  name: string;
  status: 'pass' | 'warn' | 'fail' | 'skip';
  detail: string;
  fix?: string;
  category?: 'config' | 'audio' | 'other';
}

/** The phrase in flite's slt voice (else espeak-ng's), 48 kHz. */
async function speak(text: string): Promise<{ pcm: Int16Array; voice: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'wake-check-'));
  try {
    const file = path.join(dir, 'phrase.wav');
    await promisify(execFile)('flite', ['-voice', 'slt', '-t', text, '-o', file]);
    const w = decodeWav(await readFile(file));
    return { pcm: resample(w.pcm, w.sampleRate, SAMPLE_RATE), voice: 'flite slt' };
  } catch {
    return { pcm: await speakEspeak(text), voice: 'espeak-ng' };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function speakEspeak(text: string): Promise<Int16Array> {
  const { pcm, sampleRate } = await speakOffline(text);
  return resample(pcm, sampleRate, SAMPLE_RATE);
}

/** how long the doctor waits for the engine's thread to start, per engine tried (auto: openWakeWord, then pocketsphinx) */
const DOCTOR_WAKE_START_MS = 60_000;

export async function checkWakeWord(s: Settings): Promise<WakeCheckResult> {
  const name = 'wake word';
  const l = s.listening;
  if (l.mode !== 'wake') return { name, status: 'skip', detail: `listening.mode is ${l.mode}: no wake word engine runs` };
  let engine: Awaited<ReturnType<typeof openWakeWordEngine>>;
  try {
    // a minute at most per engine tried (the daemon's default is two, for a cold slow board): the doctor answers
    engine = await openWakeWordEngine({ phrase: l.wakePhrase, sensitivity: l.wakeSensitivity, engine: l.wakeEngine, model: l.wakeModel, logger: silentLogger, startTimeoutMs: Math.min(l.wakeStartTimeoutMs, DOCTOR_WAKE_START_MS) });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (isWakeStartTimeout(err)) {
      // the agent may wait longer than the doctor did: then only a warning
      const longer = l.wakeStartTimeoutMs > DOCTOR_WAKE_START_MS;
      return {
        name,
        status: longer ? 'warn' : 'fail',
        detail: `the engine does not load: ${(err as Error).message}`,
        fix: `check that its model files can be read (the storage: dmesg)${longer ? `; the agent waits ${Math.round(l.wakeStartTimeoutMs / 1000)} s (listening.wakeStartTimeoutMs), the doctor ${DOCTOR_WAKE_START_MS / 1000} s` : '; a board slow to load it cold: raise listening.wakeStartTimeoutMs'}`,
        category: 'audio',
      };
    }
    return {
      name,
      status: 'fail',
      detail: `the engine does not load: ${(err as Error).message}`,
      fix: code === 'config_invalid'
        ? 'choose a built-in phrase (listening.wakePhrase: hey jarvis, alexa, hey mycroft, hey rhasspy) or a model for yours (listening.wakeModel), or a phrase of common English words with listening.wakeEngine: pocketsphinx; a sensitivity from 0 to 1'
        : `${rebuildAdvice()} (it brings onnxruntime-node); for pocketsphinx: apt install libpocketsphinx3 pocketsphinx-en-us`,
      category: code === 'config_invalid' ? 'config' : 'audio',
    };
  }
  try {
    const { pcm: phrase, voice } = await speak(l.wakePhrase);
    // half a second of a quiet noise floor (a microphone never delivers exact zeros), the phrase, a second more
    const clip = new Int16Array(SAMPLE_RATE * 1.5 + phrase.length);
    let seed = 1;
    for (let i = 0; i < clip.length; i++) clip[i] = ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 61) - 30;
    for (let i = 0; i < phrase.length; i++) clip[SAMPLE_RATE / 2 + i] += phrase[i];
    const heard = new Promise<WakeEvent | undefined>((resolve) => {
      const t = setTimeout(() => resolve(undefined), 10_000); // the thread runs at nice 10: slow on a busy board
      engine.onWake((e) => (clearTimeout(t), resolve(e)));
    });
    const t0 = process.hrtime.bigint();
    for (let f = 0; (f + 1) * FRAME_SAMPLES <= clip.length; f++) {
      engine.feed(clip.subarray(f * FRAME_SAMPLES, (f + 1) * FRAME_SAMPLES), t0 + BigInt((f + 1) * 20) * 1_000_000n);
    }
    const e = await heard;
    if (!e) {
      return {
        name,
        status: 'warn',
        detail: `the engine loaded but did not hear "${l.wakePhrase}" spoken by a synthetic voice (${voice}; sensitivity ${l.wakeSensitivity})`,
        fix: 'a synthetic voice is harder than a person: try saying it (speaker-agent status --follow shows "listening"); if people are missed too, raise listening.wakeSensitivity',
        category: 'audio',
      };
    }
    const endMs = Number(e.endedAtNs - t0) / 1e6 - 500;
    return { name, status: 'pass', detail: `${engine.engine}: "${l.wakePhrase}" heard from a synthetic voice (${voice}; end placed at ${Math.round(endMs)} ms of the ${Math.round((phrase.length / SAMPLE_RATE) * 1000)} ms phrase), sensitivity ${l.wakeSensitivity}` };
  } finally {
    await engine.close();
  }
}
