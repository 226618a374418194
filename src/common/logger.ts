// One logger for the whole process: pino JSON on stdout with a synchronous destination, so journald gets
// the last lines before an exit (pino transports run in worker threads and can lose them).
// Secrets are redacted by key wherever they appear; code also never passes them (fingerprints instead).
import { fstatSync } from 'node:fs';
import pino, { type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'secret',
  'clientSecret',
  'client_secret',
  'workspaceKey',
  'workspace_key',
  'credential',
  'password',
  'apiKey',
  '*.secret',
  '*.clientSecret',
  '*.client_secret',
  '*.workspaceKey',
  '*.credential',
  '*.apiKey',
  'headers["x-client-secret"]',
  'headers["x-workspace-key"]',
  '*.headers["x-client-secret"]',
  '*.headers["x-workspace-key"]',
  'req.headers["x-client-secret"]',
  'req.headers["x-workspace-key"]',
];

export interface LoggerOptions {
  level?: LevelWithSilent;
  name?: string;
  /** Where lines go; default stdout (fd 1), written synchronously. */
  destination?: pino.DestinationStream | number;
}

/**
 * Whether `fd` is the stream systemd connected to journald for this service: JOURNAL_STREAM names its device and
 * inode ("8:12345"); a line printed to another file or pipe (a redirect in the unit's command) is not.
 */
export function isJournalStream(fd: number, env: NodeJS.ProcessEnv = process.env): boolean {
  const m = /^(\d+):(\d+)$/.exec(env.JOURNAL_STREAM ?? '');
  if (!m) return false;
  try {
    const st = fstatSync(fd, { bigint: true });
    return st.dev === BigInt(m[1]) && st.ino === BigInt(m[2]);
  } catch {
    return false;
  }
}

/** pino's levels as syslog priorities: fatal crit, error err, warn warning, info info, debug and trace debug. */
const SYSLOG_PRIORITY: Record<string, number> = { '10': 7, '20': 7, '30': 6, '40': 4, '50': 3, '60': 2 };

/**
 * Each line prefixed with its syslog priority ("<4>{...}" for a warning), which journald reads as the entry's
 * PRIORITY and strips (SyslogLevelPrefix=, on by default): `journalctl -p warning` finds the warnings, and a
 * unit's LogLevelMax= can keep info lines off the card. Before, journald stored every line at info, errors too.
 */
function journalPrefixed(dest: pino.DestinationStream): pino.DestinationStream {
  return {
    write(line: string) {
      const level = /^\{"level":(\d+)/.exec(line)?.[1];
      dest.write(`<${SYSLOG_PRIORITY[level ?? '30'] ?? 6}>${line}`);
    },
  };
}

/** Keys pino writes on every line itself. A field of the same name was written a second time
 *  (`"name":"speaker-agent",...,"name":"set_device_volume"`), and JSON readers keep the last one (`jq`, `journalctl
 *  -o json` consumers): the line lost which process wrote it. Such a field is moved under `fields`. */
const PINO_KEYS = ['level', 'time', 'pid', 'hostname', 'name'];

function withoutPinoKeys(o: Record<string, unknown>): Record<string, unknown> {
  if (!PINO_KEYS.some((k) => Object.hasOwn(o, k))) return o;
  const own: Record<string, unknown> = {};
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) (PINO_KEYS.includes(k) ? fields : own)[k] = v;
  return { ...own, fields };
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const fd = typeof opts.destination === 'object' ? undefined : (opts.destination ?? 1);
  const stream = fd === undefined ? (opts.destination as pino.DestinationStream) : pino.destination({ dest: fd, sync: true });
  const dest = fd !== undefined && isJournalStream(fd) ? journalPrefixed(stream) : stream;
  return pino(
    {
      name: opts.name,
      level: opts.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      formatters: { log: withoutPinoKeys },
    },
    dest,
  );
}

/** A logger that drops everything, for tests and library defaults. */
export const silentLogger: Logger = pino({ level: 'silent' });
