// One logger for the whole process: pino JSON on stdout with a synchronous destination, so journald gets
// the last lines before an exit (pino transports run in worker threads and can lose them).
// Secrets are redacted by key wherever they appear; code also never passes them (fingerprints instead).
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

export function createLogger(opts: LoggerOptions = {}): Logger {
  const dest =
    typeof opts.destination === 'object'
      ? opts.destination
      : pino.destination({ dest: opts.destination ?? 1, sync: true });
  return pino(
    {
      name: opts.name,
      level: opts.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
    },
    dest,
  );
}

/** A logger that drops everything, for tests and library defaults. */
export const silentLogger: Logger = pino({ level: 'silent' });
