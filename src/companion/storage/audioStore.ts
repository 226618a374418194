// The audio directory: <dataDir>/audio/{voices,tts,stories}/<uuid>.<ext> plus <dataDir>/tmp for files being
// written. A file appears under its final name only complete (written in tmp, then renamed), so a crash never
// leaves half a file behind a name; tmp is emptied at start. Synthesis outputs (tts/) live a little longer
// than their signed URLs and are then swept.
import { randomBytes, randomUUID } from 'node:crypto';
import { promises as fs, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { isStoredAudioPath } from './urlSigner.js';

export type AudioKind = 'voices' | 'tts' | 'stories';

export class AudioStore {
  readonly root: string;
  readonly tmpDir: string;

  constructor(dataDir: string) {
    this.root = path.join(dataDir, 'audio');
    this.tmpDir = path.join(dataDir, 'tmp');
    for (const d of ['voices', 'tts', 'stories']) mkdirSync(path.join(this.root, d), { recursive: true, mode: 0o700 });
    rmSync(this.tmpDir, { recursive: true, force: true });
    mkdirSync(this.tmpDir, { recursive: true, mode: 0o700 });
  }

  newRelPath(kind: AudioKind, ext: 'wav' | 'mp3'): string {
    return `${kind}/${randomUUID()}.${ext}`;
  }

  /** Absolute path of a stored file; refuses anything that is not a stored-audio path (no traversal). */
  absPath(rel: string): string {
    if (!isStoredAudioPath(rel)) throw new RangeError(`not a stored audio path: ${rel}`);
    return path.join(this.root, rel);
  }

  /** A fresh temp file name (not created). */
  tempPath(suffix = ''): string {
    return path.join(this.tmpDir, `${Date.now()}-${randomBytes(6).toString('hex')}${suffix}`);
  }

  /** tts/ outputs this process wrote, by performance.now(): the sweep spares them by this clock, whatever their
   *  mtime says after the wall clock stepped */
  private readonly madeAt = new Map<string, number>();

  /** Moves a finished temp file under its final name (same filesystem: an atomic rename). */
  async commit(tempFile: string, rel: string): Promise<void> {
    await fs.rename(tempFile, this.absPath(rel));
    if (rel.startsWith('tts/')) this.madeAt.set(path.basename(rel), performance.now());
  }

  async remove(rel: string | null | undefined): Promise<void> {
    if (!rel || !isStoredAudioPath(rel)) return;
    // cleanup on error paths: a second failure here must not replace the first one
    await fs.rm(path.join(this.root, rel), { force: true }).catch(() => undefined);
  }

  /** Deletes tts/ outputs older than maxAgeMs, and those stamped more than maxAgeMs ahead: written while the wall
   *  clock ran ahead (a bad time server, a board's clock set wrong), they were kept until that date came, months
   *  on an SD card. What this process wrote within maxAgeMs (its own clock) stays, whatever its stamp: a file
   *  written just before NTP stepped the clock back is still being fetched. Returns how many. */
  sweepTts(maxAgeMs: number): number {
    const dir = path.join(this.root, 'tts');
    const now = Date.now();
    const mono = performance.now();
    for (const [name, at] of this.madeAt) if (mono - at > maxAgeMs) this.madeAt.delete(name);
    let n = 0;
    for (const name of safeReaddir(dir)) {
      if (this.madeAt.has(name)) continue;
      const p = path.join(dir, name);
      try {
        if (Math.abs(now - statSync(p).mtimeMs) > maxAgeMs) {
          rmSync(p, { force: true });
          n++;
        }
      } catch {
        /* removed meanwhile */
      }
    }
    return n;
  }

  /** Deletes voices/ files no voice row refers to (left by a crash between rename and the database commit). */
  sweepOrphanVoiceFiles(referenced: Set<string>): number {
    const dir = path.join(this.root, 'voices');
    let n = 0;
    for (const name of safeReaddir(dir)) {
      if (!referenced.has(`voices/${name}`)) {
        rmSync(path.join(dir, name), { force: true });
        n++;
      }
    }
    return n;
  }
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
