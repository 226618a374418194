// PortAudio's ALSA probing prints dozens of harmless lines ("ALSA lib pcm.c: Unknown PCM cards.pcm.rear",
// "jack server is not running") on stderr each time it initialises, which is on every device listing and
// stream open. They bury real log lines in journald and alarm users, so the file descriptor 2 is pointed at
// /dev/null for the duration of those synchronous calls (dup/dup2 from our addon vendor/speaker-sys). Set
// SPEAKER_AGENT_AUDIO_DEBUG=1 to see them. Where the addon cannot be loaded, the lines simply stay visible.
// alsa-lib also prints a line at every xrun PortAudio recovers from on a device it cannot mmap (the PulseAudio or
// PipeWire plugin: "(snd_pcm_recover) underrun occurred"), from the audio thread, at any time: in the journal, on
// the SD card, at each glitch. Those two lines are counted instead (captureAlsaXruns; `status` shows PortAudio's
// own count of xruns, which covers every device), and SPEAKER_AGENT_AUDIO_DEBUG=1 prints them too. Not while
// LIBASOUND_DEBUG is set: a handler would hide the lines that asks for.
import { closeSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { processVariable } from '../../common/processEnv.js';
import type { Xruns } from './audioDevice.js';

type Sys = typeof import('speaker-sys');
let sys: Sys | null | undefined;

function loadSys(): Sys | null {
  if (sys === undefined) {
    try {
      sys = createRequire(import.meta.url)('speaker-sys') as Sys;
    } catch {
      sys = null;
    }
  }
  return sys;
}

/** Runs a synchronous native call with stderr silenced. */
export function quietNativeStderr<T>(fn: () => T): T {
  if (processVariable('audioDebug')) return fn();
  const s = loadSys();
  if (!s) return fn();
  let saved: number;
  let devnull: number;
  try {
    saved = s.dup(2);
  } catch {
    return fn();
  }
  try {
    devnull = openSync('/dev/null', 'w');
  } catch {
    closeSync(saved);
    return fn();
  }
  s.dup2(devnull, 2);
  closeSync(devnull);
  try {
    return fn();
  } finally {
    s.dup2(saved, 2);
    closeSync(saved);
  }
}

let capturing = false;

/** Puts alsa-lib's error handler in speaker-sys (once per process): xrun lines counted, every other line printed
 *  as alsa-lib prints it. False where the addon or alsa-lib is missing (the lines then stay on stderr). */
export function captureAlsaXruns(): boolean {
  if (capturing || process.env.LIBASOUND_DEBUG) return capturing;
  try {
    const s = loadSys();
    capturing = typeof s?.captureAlsaXruns === 'function' && s.captureAlsaXruns(Boolean(processVariable('audioDebug')));
  } catch {
    capturing = false; // a speaker-sys built before the call: the lines stay on stderr
  }
  return capturing;
}

/** alsa-lib's xruns counted since captureAlsaXruns; null when not capturing. */
export function alsaXruns(): Xruns | null {
  return capturing ? loadSys()!.alsaXruns() : null;
}
