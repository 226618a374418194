// The duration a media file's container declares (ffprobe), without decoding it. Used to refuse a long
// upload before decoding it (a 20 MB compressed file can hold hours of audio, far more PCM than memory
// should hold). undefined when the container does not declare one (then the decoded length decides).
import { execFile } from 'node:child_process';
import { processVariable } from '../../common/processEnv.js';

const FFPROBE = processVariable('ffprobe') ?? 'ffprobe';

export function probeDurationSeconds(file: string, signal?: AbortSignal): Promise<number | undefined> {
  return new Promise((resolve) => {
    execFile(
      FFPROBE,
      ['-v', 'error', '-show_entries', 'format=duration', '-of', 'default=noprint_wrappers=1:nokey=1', file],
      { timeout: 10_000, signal },
      (err, stdout) => {
        const v = Number.parseFloat(String(stdout).trim());
        resolve(!err && Number.isFinite(v) && v >= 0 ? v : undefined);
      },
    );
  });
}
