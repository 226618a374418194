// The privacy mute's persisted state: <stateDir>/mic.json ({"muted": true|false}), written atomically (temp
// file, fsync, rename: atomicFile.ts), so a mute survives a restart, a crash or a power cut. A missing file is
// "not muted"; an unreadable or corrupt one is treated as MUTED (the safe side for a microphone) and reported.
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../common/atomicFile.js';

export const MIC_STATE_FILE = 'mic.json';

export interface MicMuteRead {
  muted: boolean;
  /** why the file could not be used (then muted is true) */
  problem?: string;
}

export function micStatePath(stateDir: string): string {
  return path.join(stateDir, MIC_STATE_FILE);
}

/** Synchronous: read once at start-up, before the microphone would be opened. */
export function readMicMuted(file: string): MicMuteRead {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { muted: false };
    return { muted: true, problem: `cannot read ${file}: ${(err as Error).message}` };
  }
  try {
    const v = JSON.parse(text) as { muted?: unknown };
    if (typeof v?.muted === 'boolean') return { muted: v.muted };
  } catch {
    /* below */
  }
  return { muted: true, problem: `${file} is not {"muted": true|false}` };
}

export async function writeMicMuted(file: string, muted: boolean): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFileAtomic(file, `${JSON.stringify({ muted, at: new Date().toISOString() })}\n`, { mode: 0o600 });
}
