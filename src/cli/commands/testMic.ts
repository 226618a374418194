// `speaker-agent test-mic`: a live level meter of the capture device for a few seconds, then a summary.
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import { rmsDbfs } from '../../common/audio/signal.js';
import { settings } from '../cliContext.js';
import { audioBackend } from '../../agent/device.js';
import { printJson, printLine } from '../output.js';
import { stdoutIsTTY, writeOut } from '../stdio.js';

/** below this the microphone hears nothing useful (a muted or missing mic reads -inf or < -70 dBFS) */
export const SIGNAL_FLOOR_DBFS = -60;

export interface MicReport {
  device: string;
  seconds: number;
  frames: number;
  rmsDbfs: number | null;
  peakDbfs: number | null;
  heardSignal: boolean;
}

/** Captures for `seconds`, calling onLevel with each 20 ms frame's RMS level. */
export async function measureMic(device: string, seconds: number, onLevel?: (dbfs: number) => void): Promise<MicReport> {
  const cap = (await audioBackend()).openCapture(device);
  let failure: Error | undefined;
  cap.onError = (err) => {
    failure = err;
  };
  let frames = 0;
  let sumSquares = 0;
  let samples = 0;
  let peak = 0;
  let firstFrame: () => void = () => {};
  const started = new Promise<void>((r) => (firstFrame = r));
  await cap.start((frame) => {
    if (frames === 0) firstFrame();
    frames++;
    for (let i = 0; i < frame.length; i++) {
      const v = frame[i];
      sumSquares += v * v;
      const a = v < 0 ? -v : v;
      if (a > peak) peak = a;
    }
    samples += frame.length;
    onLevel?.(rmsDbfs(frame));
  });
  // The listening time counts from the first frame: a sound server can take a second to start delivering.
  // A device that delivers nothing is reported after 3 s as such (0 frames), not waited on forever.
  let giveUp: NodeJS.Timeout | undefined;
  await Promise.race([started, new Promise<void>((r) => (giveUp = setTimeout(r, 3000)))]);
  clearTimeout(giveUp);
  if (frames > 0) await new Promise((r) => setTimeout(r, seconds * 1000));
  await cap.stop();
  if (failure) throw failure;
  const rms = samples ? Math.sqrt(sumSquares / samples) : 0;
  const db = (x: number) => (x > 0 ? Math.round(20 * Math.log10(x / 32768) * 10) / 10 : null);
  const rmsDb = db(rms);
  return { device, seconds, frames, rmsDbfs: rmsDb, peakDbfs: db(peak), heardSignal: rmsDb !== null && rmsDb > SIGNAL_FLOOR_DBFS };
}

function meter(dbfs: number, width = 40): string {
  const v = Number.isFinite(dbfs) ? Math.max(0, Math.min(1, (dbfs + 70) / 70)) : 0;
  const n = Math.round(v * width);
  return '[' + '#'.repeat(n) + ' '.repeat(width - n) + '] ' + (Number.isFinite(dbfs) ? `${dbfs.toFixed(1)} dBFS` : '  -inf dBFS').padStart(11);
}

export function registerTestMic(program: Command): void {
  program
    .command('test-mic')
    .description('show a live level meter of the microphone for a few seconds')
    .option('--seconds <s>', 'how long to listen', (v) => Number(v), 5)
    .option('--device <name>', 'capture device (default: the configured one)')
    .option('--json', 'print only a JSON summary')
    .addHelpText('after', '\nExamples:\n  speaker-agent test-mic            # speak: the bar should move\n  speaker-agent test-mic --seconds 2 --json')
    .action(async (o: { seconds: number; device?: string; json?: boolean }) => {
      if (!(o.seconds > 0 && o.seconds <= 60)) throw new AgentError('usage', `--seconds must be in (0, 60], got ${o.seconds}`);
      const device = o.device ?? settings().settings.audio.captureDevice;
      const tty = stdoutIsTTY();
      let maxInWindow = -Infinity;
      let n = 0;
      const report = await measureMic(device, o.seconds, (db) => {
        if (o.json) return;
        maxInWindow = Math.max(maxInWindow, db);
        // ~10 updates a second: the meter shows the loudest frame of each 100 ms
        if (++n % 5 !== 0) return;
        if (tty) writeOut('\r' + meter(maxInWindow));
        else if (n % 25 === 0) printLine(meter(maxInWindow));
        maxInWindow = -Infinity;
      });
      if (o.json) return printJson(report);
      if (tty) printLine();
      printLine(
        `${device}: ${report.frames} frames, average ${report.rmsDbfs ?? '-inf'} dBFS, peak ${report.peakDbfs ?? '-inf'} dBFS` +
          (report.heardSignal ? '' : `\nno signal above ${SIGNAL_FLOOR_DBFS} dBFS: is the microphone connected and unmuted (alsamixer, capture)?`),
      );
    });
}
