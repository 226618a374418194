// The running daemon's status on a local unix socket, for `speaker-agent status` (src/cli/statusClient.ts).
// HTTP over the socket (GET /status -> JSON) keeps the client trivial and the protocol inspectable with
// `curl --unix-socket`. Access control is the file mode (0660) and group of the socket, not a token.
// Issue #16: GET /events streams the listening state as JSON lines (one per change, the current state first;
// for LEDs: `status --follow`), and POST /listen, /stop, /mic/off, /mic/on drive it (buttons, scripts).
import { promises as fs } from 'node:fs';
import type { ServerResponse } from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CodedError } from '../common/errors.js';
import { http } from '../common/nodeHttp.js';
import { processVariable } from '../common/processEnv.js';

export const STATUS_SOCKET_NAME = 'status.sock';

/**
 * Where the daemon listens and the CLI looks: $SPEAKER_AGENT_STATUS_SOCKET, else systemd's RuntimeDirectory
 * (/run/speaker-agent when run as the service), else <stateDir>/status.sock.
 */
export function statusSocketCandidates(stateDir: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const socket = processVariable('statusSocket', env);
  if (socket) return [socket];
  const list: string[] = [];
  const runtime = env.RUNTIME_DIRECTORY?.split(':')[0];
  if (runtime) list.push(path.join(runtime, STATUS_SOCKET_NAME));
  list.push(path.join(stateDir, STATUS_SOCKET_NAME));
  // A CLI run by a user (not the service) still finds the service's socket.
  list.push(path.join('/run/speaker-agent', STATUS_SOCKET_NAME));
  return [...new Set(list)];
}

export class StatusServerError extends CodedError<'already_running' | 'listen_failed'> {
  override name = 'StatusServerError';
  constructor(code: 'already_running' | 'listen_failed', message: string, cause?: unknown) {
    super(code, message, { cause });
  }
}

export interface StatusServerOptions {
  socketPath: string;
  /** Returns the current status; called per request, must be cheap and must not contain secrets. */
  snapshot: () => unknown;
  /** file mode of the socket (default 0o660) */
  mode?: number;
  /** group that may read the socket, e.g. "audio" (default: the process's own group) */
  group?: string;
  /** GET /events: the current state, then one object per change; returns the unsubscribe */
  events?: { current: () => unknown; subscribe: (send: (event: unknown) => void) => () => void };
  /** POST /listen, /stop, /mic/off, /mic/on: each answers a JSON object */
  commands?: Record<StatusCommand, () => unknown>;
}

export const STATUS_COMMANDS = { '/listen': 'listen', '/stop': 'stop', '/mic/off': 'micOff', '/mic/on': 'micOn' } as const;
export type StatusCommand = (typeof STATUS_COMMANDS)[keyof typeof STATUS_COMMANDS];

const NOT_FOUND = '{"error":"not found; GET /status, GET /events, POST /listen, /stop, /mic/off, /mic/on"}';

export interface StatusServer {
  readonly socketPath: string;
  close(): Promise<void>;
}

export async function startStatusServer(opts: StatusServerOptions): Promise<StatusServer> {
  const { socketPath } = opts;
  await fs.mkdir(path.dirname(socketPath), { recursive: true, mode: 0o750 });
  await removeStaleSocket(socketPath);

  const server = http.createServer((req, res) => {
    const command = req.method === 'POST' ? STATUS_COMMANDS[req.url as keyof typeof STATUS_COMMANDS] : undefined;
    if (command && opts.commands) {
      req.resume(); // no body is read: the path is the command
      Promise.resolve()
        .then(() => opts.commands![command]())
        .then(
          (r) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(r ?? { ok: true })),
          (err: Error) => res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: err.message })),
        );
      return;
    }
    if (req.method === 'GET' && req.url === '/events' && opts.events) {
      streamEvents(res, opts.events);
      return;
    }
    if (req.method !== 'GET' || (req.url !== '/status' && req.url !== '/')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(NOT_FOUND);
      return;
    }
    let body: string;
    try {
      body = JSON.stringify(opts.snapshot());
    } catch (err) {
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String((err as Error).message) }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  server.keepAliveTimeout = 1000;

  // Created under the process umask (0077 in the unit: 0600), then opened to the group.
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(new StatusServerError('listen_failed', `cannot listen on ${socketPath}: ${err.message}`, err));
    server.once('error', onError);
    server.listen(socketPath, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.unref(); // never keeps the process alive on its own
  await fs.chmod(socketPath, opts.mode ?? 0o660);
  if (opts.group) {
    const gid = await groupId(opts.group);
    if (gid !== undefined) await fs.chown(socketPath, -1, gid).catch(() => undefined); // not a member: keep own group
  }

  return {
    socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        // close() unlinks the socket file; make sure even on odd paths.
        fs.unlink(socketPath).catch(() => undefined);
      }),
  };
}

/** Chunked JSON lines until the client goes; a client that does not read is dropped rather than buffered. */
function streamEvents(res: ServerResponse, events: NonNullable<StatusServerOptions['events']>): void {
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  res.socket?.setNoDelay(true);
  const send = (e: unknown) => {
    if (res.writableLength > 64 * 1024) {
      res.destroy();
      return;
    }
    res.write(`${JSON.stringify(e)}\n`);
  };
  send(events.current());
  const unsubscribe = events.subscribe(send);
  res.on('close', unsubscribe);
}

/** Whether a daemon answers on the socket (false: no file, a stale one, or one this user may not open). */
function answers(socketPath: string): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const c = net.connect(socketPath);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

const alreadyRunning = (socketPath: string) =>
  new StatusServerError(
    'already_running',
    `another speaker-agent is already running (it answers on ${socketPath}): two would share one identity and both answer the wake word; stop it first (the service: sudo systemctl stop speaker-agent)`,
  );

/** Refuses to start beside a daemon that answers on any of the places the CLI looks (the service's
 *  /run/speaker-agent, the state directory's). Before, `sudo speaker-agent run` beside the service (another
 *  socket path) started a second agent on the same identity and sound card. */
export async function refuseSecondDaemon(candidates: readonly string[]): Promise<void> {
  for (const p of candidates) if (await answers(p)) throw alreadyRunning(p);
}

/** A socket file left by a crashed daemon is removed; one that answers means another daemon is running. */
async function removeStaleSocket(socketPath: string): Promise<void> {
  try {
    await fs.lstat(socketPath);
  } catch {
    return;
  }
  if (await answers(socketPath)) throw alreadyRunning(socketPath);
  await fs.unlink(socketPath);
}

async function groupId(name: string): Promise<number | undefined> {
  try {
    const text = await fs.readFile('/etc/group', 'utf8');
    for (const line of text.split(os.EOL)) {
      const [g, , gid] = line.split(':');
      if (g === name) return Number(gid);
    }
  } catch {
    /* no /etc/group: leave the group as is */
  }
  return undefined;
}
