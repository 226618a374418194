// How commands print: `--json` prints one JSON document on stdout (for scripts); otherwise short human text.
// Errors go to stderr in both modes (as JSON {error:{code,message}} with --json) so stdout stays parseable.
import { AgentError, exitCodeFor } from '../agent/errors.js';
import { writeOut } from './stdio.js';
import { processVariable } from '../common/processEnv.js';

export interface OutputOptions {
  json?: boolean;
}

export function printJson(value: unknown): void {
  writeOut(JSON.stringify(value, null, 2) + '\n');
}

export function printLine(text = ''): void {
  writeOut(text + '\n');
}

/** Prints data as JSON or through the human formatter. */
export function emit<T>(opts: OutputOptions, value: T, human: (v: T) => string): void {
  if (opts.json) printJson(value);
  else printLine(human(value));
}

/** A plain text table: columns padded to the widest cell. */
export function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (c ?? '').padEnd(widths[i])).join('  ').trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** "1h 02m 03s" */
export function formatDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m ${String(sec).padStart(2, '0')}s`;
  if (m > 0) return `${m}m ${String(sec).padStart(2, '0')}s`;
  return `${sec}s`;
}

/** The typed errors of other layers, as the AgentError whose exit code fits (audio 6, config 3). */
export function toCliError(err: unknown): unknown {
  if (err instanceof AgentError) return err;
  const name = (err as Error | undefined)?.name;
  const message = err instanceof Error ? err.message : String(err);
  if (name === 'AudioDeviceError') return new AgentError('audio', message, { cause: err });
  if (name === 'MixerError') return new AgentError('mixer', message, { cause: err });
  if (name === 'CompanionSettingsError') return new AgentError('config_invalid', message, { cause: err });
  return err;
}

/** Prints an error for the user and returns the exit code it maps to (src/agent/errors.ts). */
export function reportError(error: unknown, json: boolean): number {
  const err = toCliError(error);
  const code = exitCodeFor(err);
  const ae = err instanceof AgentError ? err : undefined;
  const message = err instanceof Error ? err.message : String(err);
  if (json) {
    process.stderr.write(JSON.stringify({ error: { code: ae?.code ?? 'internal', message, exitCode: code } }) + '\n');
  } else {
    process.stderr.write(`speaker-agent: ${message}\n`);
    if (!ae && err instanceof Error && processVariable('debug')) process.stderr.write(`${err.stack}\n`);
  }
  return code;
}
