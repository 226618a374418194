// What `run` sets up on a machine that has nothing: the virtual sound card when there is no sound card and no
// sound server (scripts/virtual-audio.sh), and a local companion server when no server is configured.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../common/projectRoot.js';
import { promisify } from 'node:util';
import { AgentError } from '../agent/errors.js';
import { PROCESS_VARIABLES } from '../common/processEnv.js';

const run = promisify(execFile);
export const VIRTUAL_AUDIO_SCRIPT = path.join(projectRoot(), 'scripts', 'virtual-audio.sh');

/** true when ALSA has a card or a PulseAudio/PipeWire server is reachable. */
export function hasSoundSystem(env: NodeJS.ProcessEnv = process.env): boolean {
  if (existsSync('/dev/snd') && hasAlsaCard()) return true;
  if (env.PULSE_SERVER) return true;
  const runtime = env.XDG_RUNTIME_DIR ?? (typeof process.getuid === 'function' ? `/run/user/${process.getuid()}` : undefined);
  return Boolean(runtime && (existsSync(path.join(runtime, 'pulse', 'native')) || existsSync(path.join(runtime, 'pipewire-0'))));
}

function hasAlsaCard(): boolean {
  try {
    return !/no soundcards/i.test(readFileSync('/proc/asound/cards', 'utf8'));
  } catch {
    return existsSync('/dev/snd/controlC0');
  }
}

export interface VirtualAudio {
  env: Record<string, string>;
  /** stops the sound server only if we started it */
  stop(): Promise<void>;
}

/** Starts the virtual sound card and points this process (PortAudio, amixer, paplay) at it. */
export async function startVirtualAudio(dir: string): Promise<VirtualAudio> {
  const env = { ...process.env, [PROCESS_VARIABLES.pulseDir.env]: dir };
  let out: string;
  try {
    out = (await run(VIRTUAL_AUDIO_SCRIPT, ['start'], { env, encoding: 'utf8' })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new AgentError('audio', `cannot start the virtual sound card: ${e.stderr?.trim() || e.message}`, { cause: err });
  }
  const vars: Record<string, string> = {};
  for (const line of out.split('\n')) {
    const m = /^export (\w+)=(.*)$/.exec(line.trim());
    if (m) vars[m[1]] = m[2];
  }
  Object.assign(process.env, vars);
  return {
    env: vars,
    stop: async () => {
      await run(VIRTUAL_AUDIO_SCRIPT, ['stop'], { env }).catch(() => undefined);
    },
  };
}
