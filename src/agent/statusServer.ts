// The running daemon's status on a local unix socket, for `speaker-agent status` (src/cli/statusClient.ts).
// HTTP over the socket (GET /status -> JSON) keeps the client trivial and the protocol inspectable with
// `curl --unix-socket`. Access control is the file mode (0660) and group of the socket, not a token.
import { promises as fs } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CodedError } from '../common/errors.js';
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
}

export interface StatusServer {
  readonly socketPath: string;
  close(): Promise<void>;
}

export async function startStatusServer(opts: StatusServerOptions): Promise<StatusServer> {
  const { socketPath } = opts;
  await fs.mkdir(path.dirname(socketPath), { recursive: true, mode: 0o750 });
  await removeStaleSocket(socketPath);

  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url !== '/status' && req.url !== '/')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found; GET /status"}');
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

/** A socket file left by a crashed daemon is removed; one that answers means another daemon is running. */
async function removeStaleSocket(socketPath: string): Promise<void> {
  try {
    await fs.lstat(socketPath);
  } catch {
    return;
  }
  const alive = await new Promise<boolean>((resolve) => {
    const c = net.connect(socketPath);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
  if (alive) {
    throw new StatusServerError('already_running', `another speaker-agent is already running (it answers on ${socketPath})`);
  }
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
