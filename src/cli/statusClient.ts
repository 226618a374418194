// Reads the running daemon's status from its unix socket (src/agent/statusServer.ts).
import { AgentError } from '../agent/errors.js';
import { http } from '../common/nodeHttp.js';

export interface StatusReadResult {
  socketPath: string;
  status: unknown;
}

/** GET /status on one socket; rejects with the connect error (ENOENT, ECONNREFUSED, EACCES). */
export function readStatusFrom(socketPath: string, timeoutMs = 2000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: '/status', timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) return reject(new Error(`status socket answered ${res.statusCode}: ${text}`));
        try {
          resolve(JSON.parse(text));
        } catch (err) {
          reject(new Error(`status socket sent invalid JSON: ${(err as Error).message}`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${socketPath} within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** Tries each candidate socket in order; AgentError('network') naming what was tried when none answers. */
export async function readStatus(candidates: string[], timeoutMs = 2000): Promise<StatusReadResult> {
  const tried: string[] = [];
  for (const socketPath of candidates) {
    try {
      return { socketPath, status: await readStatusFrom(socketPath, timeoutMs) };
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      tried.push(`${socketPath}: ${e.code === 'EACCES' ? 'permission denied (run as root or a member of the socket group)' : e.code ?? e.message}`);
    }
  }
  throw new AgentError(
    'network',
    `the agent is not running (no status socket answered).\n  ${tried.join('\n  ')}\n` +
      'Start it with `systemctl start speaker-agent` or `speaker-agent run`.',
  );
}

/** POST one command (/listen, /stop, /mic/off, /mic/on) to the first socket that answers; AgentError('network')
 *  when none does, like readStatus. */
export async function sendCommand(candidates: string[], command: string, timeoutMs = 5000): Promise<{ socketPath: string; answer: unknown }> {
  const tried: string[] = [];
  for (const socketPath of candidates) {
    try {
      return { socketPath, answer: await postTo(socketPath, command, timeoutMs) };
    } catch (err) {
      if (err instanceof AgentError) throw err; // the daemon answered (an error, or too slowly): not a missing socket
      const e = err as NodeJS.ErrnoException;
      tried.push(`${socketPath}: ${e.code === 'EACCES' ? 'permission denied (run as root or a member of the socket group)' : e.code ?? e.message}`);
    }
  }
  throw new AgentError('network', `the agent is not running (no status socket answered).\n  ${tried.join('\n  ')}`);
}

function postTo(socketPath: string, command: string, timeoutMs: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path: command, method: 'POST', timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) return reject(new AgentError('internal', `the agent refused ${command}: ${text}`));
        try {
          resolve(JSON.parse(text));
        } catch (err) {
          reject(new AgentError('internal', `status socket sent invalid JSON: ${(err as Error).message}`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new AgentError('network', `no answer from ${socketPath} within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** What every line of GET /events has (statusServer.ts): the fields `status --follow` prints. */
export interface FollowedEvent {
  state: string;
  at: string;
  reason?: string;
  micOnWire?: boolean;
}

function isFollowedEvent(v: unknown): v is FollowedEvent {
  const e = v as Partial<FollowedEvent> | null;
  return typeof e === 'object' && e !== null && typeof e.state === 'string' && typeof e.at === 'string';
}

/** GET /events: calls onEvent for each JSON line until the daemon goes (resolves) or signal aborts. A line that is
 *  not a listening event (`--socket` naming some other server's socket) rejects with AgentError('internal'): it
 *  was an uncaught exception in the stream's handler, a stack trace to the user. */
export function followEvents(candidates: string[], onEvent: (e: FollowedEvent) => void, signal?: AbortSignal): Promise<{ socketPath: string }> {
  return (async () => {
    const tried: string[] = [];
    for (const socketPath of candidates) {
      const r = await new Promise<{ ok: true } | { ok: false; why: string }>((resolve, reject) => {
        const req = http.get({ socketPath, path: '/events', signal }, (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            return reject(new AgentError('internal', `the agent's socket answered ${res.statusCode} to GET /events (an older agent?)`));
          }
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buf += chunk;
            let nl: number;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl);
              buf = buf.slice(nl + 1);
              if (!line.trim()) continue;
              let ev: unknown;
              try {
                ev = JSON.parse(line);
              } catch {
                /* below */
              }
              if (!isFollowedEvent(ev)) {
                req.destroy();
                return reject(new AgentError('internal', `${socketPath} is not a speaker-agent status socket: GET /events sent a line that is not a listening event`));
              }
              onEvent(ev);
            }
          });
          res.on('end', () => resolve({ ok: true }));
          res.on('close', () => resolve({ ok: true }));
          res.on('error', () => resolve({ ok: true }));
        });
        req.on('error', (err: NodeJS.ErrnoException) => {
          if (signal?.aborted) return resolve({ ok: true });
          resolve({ ok: false, why: err.code === 'EACCES' ? 'permission denied (run as root or a member of the socket group)' : err.code ?? err.message });
        });
      });
      if (r.ok) return { socketPath };
      tried.push(`${socketPath}: ${r.why}`);
    }
    throw new AgentError('network', `the agent is not running (no status socket answered).\n  ${tried.join('\n  ')}`);
  })();
}
