// Reads the running daemon's status from its unix socket (src/agent/statusServer.ts).
import http from 'node:http';
import { AgentError } from '../agent/errors.js';

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
