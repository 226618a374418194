// The agent's typed errors: one class with a machine-readable code and the underlying cause, and the exit code
// the CLI maps each one to (so scripts and systemd can tell "fix your config" from "the network is down").
import { CodedError, type CodedErrorOptions } from '../common/errors.js';

export type AgentErrorCode =
  | 'usage'
  | 'config_invalid'
  | 'identity_missing'
  | 'identity_corrupt'
  | 'identity_exists'
  | 'auth_rejected'
  | 'network'
  | 'server_error'
  | 'protocol'
  | 'call_failed'
  | 'audio'
  | 'mixer'
  | 'internal';

export interface AgentErrorOptions extends CodedErrorOptions {
  /** HTTP status when the error came from the service */
  status?: number;
  /** the service's own error code (realtime `error.code` or REST `detail.code`) */
  serverCode?: string;
  /** how long the server asked to be left alone (Retry-After on a 429 or 503), clamped: the reconnect policy
   *  waits at least this */
  retryAfterMs?: number;
}

export class AgentError extends CodedError<AgentErrorCode> {
  override name = 'AgentError';
  readonly status?: number;
  readonly serverCode?: string;
  readonly retryAfterMs?: number;
  constructor(code: AgentErrorCode, message: string, opts: AgentErrorOptions = {}) {
    super(code, message, opts);
    this.status = opts.status;
    this.serverCode = opts.serverCode;
    this.retryAfterMs = opts.retryAfterMs;
  }

  /** A one-line, log-safe summary (never contains secrets: messages are built without them). */
  toJSON(): { code: AgentErrorCode; message: string; status?: number; serverCode?: string; retryAfterMs?: number } {
    return { code: this.code, message: this.message, status: this.status, serverCode: this.serverCode, retryAfterMs: this.retryAfterMs };
  }
}

/** Process exit codes of `speaker-agent` (documented in the README). */
export const EXIT_CODES = {
  ok: 0,
  other: 1,
  usage: 2,
  config: 3,
  auth: 4,
  network: 5,
  audio: 6,
  /** the daemon asks systemd to start it again (a sound card outside the unit's device policy, src/cli/daemon.ts);
   *  EX_TEMPFAIL, and the unit's RestartForceExitStatus */
  restart: 75,
} as const;

export function exitCodeFor(err: unknown): number {
  if (!(err instanceof AgentError)) return EXIT_CODES.other;
  switch (err.code) {
    case 'usage':
      return EXIT_CODES.usage;
    case 'config_invalid':
    case 'identity_missing':
    case 'identity_corrupt':
    case 'identity_exists':
      return EXIT_CODES.config;
    case 'auth_rejected':
      return EXIT_CODES.auth;
    case 'network':
    case 'server_error':
      return EXIT_CODES.network;
    case 'audio':
    case 'mixer':
      return EXIT_CODES.audio;
    default:
      return EXIT_CODES.other;
  }
}

/** Wraps anything thrown into an AgentError, keeping AgentErrors as they are. */
export function toAgentError(err: unknown, fallback: AgentErrorCode = 'internal'): AgentError {
  if (err instanceof AgentError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new AgentError(fallback, message, { cause: err });
}
