// Reads the running daemon's status from its unix socket (src/agent/statusServer.ts), sends it commands and
// follows its state stream. Only the socket is needed: not config.json, which a user without sudo may not read
// (/etc/speaker-agent is 0750) and a typo may break, while the daemon runs on what it read at start.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentError } from '../agent/errors.js';
import { CONFIG_FILE_NAME, defaultConfigDir, defaultStateDir, readConfigFile, settingFromEnv } from '../agent/settings.js';
import { micStatePath, readMicMuted } from '../agent/micMute.js';
import { statusSocketCandidates } from '../agent/statusServer.js';
import { http } from '../common/nodeHttp.js';

export const PERMISSION_DENIED = "permission denied: run it with sudo (the service's files are root's and speaker-agent's)";

export interface StatusReadResult {
  socketPath: string;
  status: unknown;
}

/** Where the daemon is looked for: the socket candidates and the state directory (mic.json without a daemon). */
export interface DaemonPlace {
  candidates: string[];
  stateDir: string;
  /** config.json this user may not read (its paths.stateDir, if any, is then unknown) */
  configDenied?: string;
  /** config.json exists but does not parse: its paths.stateDir, if any, is unknown (so is where mic.json goes) */
  configBroken?: string;
}

function deniedCode(err: unknown): boolean {
  // the errno may sit under an AgentError (settings.ts wraps the read error as its cause)
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (e.code === 'EACCES' || e.code === 'EPERM') return true;
  }
  return false;
}

/** The sockets and state directory without loading the settings: config.json is read only for paths.stateDir,
 *  and one that is unreadable or broken is passed over (the service's /run/speaker-agent is a candidate anyway). */
export function locateDaemon(socket?: string, env: NodeJS.ProcessEnv = process.env): DaemonPlace {
  let stateDir = settingFromEnv('paths.stateDir', env) || undefined;
  let configDenied: string | undefined;
  let configBroken: string | undefined;
  if (!stateDir) {
    const configDir = defaultConfigDir(env);
    try {
      const paths = readConfigFile(configDir).paths as { stateDir?: unknown } | undefined;
      if (typeof paths?.stateDir === 'string' && paths.stateDir) stateDir = paths.stateDir;
    } catch (err) {
      if (deniedCode(err)) configDenied = path.join(configDir, CONFIG_FILE_NAME);
      else configBroken = path.join(configDir, CONFIG_FILE_NAME);
    }
    stateDir ??= defaultStateDir(env);
  }
  return { candidates: socket ? [socket] : statusSocketCandidates(stateDir, env), stateDir, configDenied, configBroken };
}

/** The service's own socket: systemd's RuntimeDirectory (as the service sees it) or /run/speaker-agent. */
function isServiceSocket(socketPath: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const runtime = env.RUNTIME_DIRECTORY?.split(':')[0];
  const dir = path.dirname(socketPath);
  return dir === '/run/speaker-agent' || (runtime !== undefined && dir === runtime);
}

/** No daemon answered. `absent`: every socket was missing or refused (a stale file): none runs, so `mic` may
 *  write mic.json instead. Permission denied is said as such (unless the service's own socket is simply missing: then the agent is down) (exit 3, like other setup a person fixes):
 *  "not running" sent makers looking for a crash, and `mic` then "muted" a file while the daemon listened on. */
export class DaemonUnreachable extends AgentError {
  override name = 'DaemonUnreachable';
  readonly absent: boolean;
  readonly denied: boolean;
  constructor(readonly tried: { socketPath: string; code?: string; why: string }[], configDenied?: string) {
    const lines = tried.map((t) => `${t.socketPath}: ${t.why}`);
    if (configDenied) lines.push(`${configDenied}: permission denied`);
    // A missing socket says the agent is down only where the agent would be: the one socket asked for, or the
    // service's own (/run/speaker-agent, $RUNTIME_DIRECTORY). A user in the socket's group may not enter the
    // state directory (0700) but reaches /run, where a missing socket means down, not a permission; a socket
    // missing from the caller's own state directory (no install wrapper) says nothing about the service's.
    const missing = (t: { code?: string }) => t.code === 'ENOENT' || t.code === 'ECONNREFUSED';
    const gone = tried.length === 1 ? missing(tried[0]!) : tried.some((t) => missing(t) && isServiceSocket(t.socketPath));
    const denied = !gone && (configDenied !== undefined || tried.some((t) => t.code === 'EACCES' || t.code === 'EPERM'));
    const absent = !denied && tried.every((t) => t.code === 'ENOENT' || t.code === 'ECONNREFUSED');
    const list = `\n  ${lines.join('\n  ')}`;
    super(
      denied ? 'config_invalid' : 'network',
      denied
        ? `${PERMISSION_DENIED}${list}`
        : absent
          ? `the agent is not running (no status socket answered).${list}\nStart it with \`systemctl start speaker-agent\` or \`speaker-agent run\`.`
          : `could not reach the running agent:${list}`,
    );
    this.absent = absent;
    this.denied = denied;
  }
}

const tryOf = (socketPath: string, err: unknown) => {
  const e = err as NodeJS.ErrnoException;
  return { socketPath, code: e.code, why: e.code === 'EACCES' || e.code === 'EPERM' ? `${e.code} (permission denied)` : e.code ?? e.message };
};

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

/** Tries each candidate socket in order; DaemonUnreachable naming what was tried when none answers. */
export async function readStatus(candidates: string[], timeoutMs = 2000, configDenied?: string): Promise<StatusReadResult> {
  const tried: ReturnType<typeof tryOf>[] = [];
  for (const socketPath of candidates) {
    try {
      return { socketPath, status: await readStatusFrom(socketPath, timeoutMs) };
    } catch (err) {
      tried.push(tryOf(socketPath, err));
    }
  }
  throw new DaemonUnreachable(tried, configDenied);
}

/** POST one command (/listen, /stop, /mic/off, /mic/on) to the first socket that answers; DaemonUnreachable
 *  when none does (a daemon that takes longer than timeoutMs is unreachable, not absent). */
export async function sendCommand(candidates: string[], command: string, timeoutMs = 5000, configDenied?: string): Promise<{ socketPath: string; answer: unknown }> {
  const tried: ReturnType<typeof tryOf>[] = [];
  for (const socketPath of candidates) {
    try {
      return { socketPath, answer: await postTo(socketPath, command, timeoutMs) };
    } catch (err) {
      if (err instanceof AgentError) throw err; // the daemon answered (an error), or the request may have reached it
      tried.push(tryOf(socketPath, err));
    }
  }
  throw new DaemonUnreachable(tried, configDenied);
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
    // the request may have reached a hung daemon: not tried elsewhere, and never taken for "no daemon"
    req.on('timeout', () => req.destroy(new DaemonUnreachable([{ socketPath, code: 'ETIMEDOUT', why: `no answer within ${timeoutMs} ms` }])));
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

/** GET /events: calls onEvent for each JSON line until the daemon goes (resolves) or signal aborts; when no socket
 *  answers, DaemonUnreachable. A line that is not a listening event (`--socket` naming some other server's socket)
 *  rejects with AgentError('internal'): it was an uncaught exception in the stream's handler, a stack trace. */
export function followEvents(candidates: string[], onEvent: (e: FollowedEvent) => void, signal?: AbortSignal, configDenied?: string): Promise<{ socketPath: string }> {
  return (async () => {
    const tried: ReturnType<typeof tryOf>[] = [];
    for (const socketPath of candidates) {
      const r = await new Promise<{ ok: true } | { ok: false; err: unknown }>((resolve, reject) => {
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
          resolve({ ok: false, err });
        });
      });
      if (r.ok) return { socketPath };
      tried.push(tryOf(socketPath, r.err));
    }
    throw new DaemonUnreachable(tried, configDenied);
  })();
}

/** The line `status --follow` prints while no daemon can be followed: the microphone is off the wire (the LED
 *  goes dark, or blinks for a mute kept in mic.json). */
export interface NotRunningEvent extends FollowedEvent {
  state: 'not_running' | 'unreachable';
  reason: 'agent_not_running' | 'agent_unreachable';
  micOnWire: false;
  previous?: string;
  /** from <state dir>/mic.json, when this user can read it: what the agent starts with */
  micMuted?: boolean;
}

/** `status --follow`: follows the daemon across its crashes, watchdog kills, restarts and upgrades. Each time it
 *  goes (or is not there), one NotRunningEvent, then the socket is tried every retryMs until the daemon is back
 *  and its own lines resume. Before, the command ended with the stream and a README LED script froze on the last
 *  micOnWire: lit while the microphone was off, or dark later while it was live. Returns only when signal aborts;
 *  throws only what waiting cannot fix: permission denied before anything was followed (the caller's rights do
 *  not change), or a socket that is not an agent's. onProblem: why the daemon could not be reached, other than
 *  its absence (once per outage). */
export async function keepFollowing(
  place: DaemonPlace,
  onEvent: (e: FollowedEvent) => void,
  signal: AbortSignal,
  o: { retryMs?: number; onProblem?: (err: DaemonUnreachable) => void } = {},
): Promise<void> {
  let followed = false;
  let down = false; // a NotRunningEvent is out for this outage
  let previous: string | undefined;
  while (!signal.aborted) {
    let problem: DaemonUnreachable | undefined;
    try {
      await followEvents(place.candidates, (e) => {
        followed = true;
        down = false;
        previous = e.state;
        onEvent(e);
      }, signal, place.configDenied);
    } catch (err) {
      if (!(err instanceof DaemonUnreachable)) throw err;
      if (err.denied && !followed) throw err;
      problem = err;
    }
    if (signal.aborted) return;
    if (!down) {
      down = true;
      const ev: NotRunningEvent = {
        state: problem && !problem.absent ? 'unreachable' : 'not_running',
        reason: problem && !problem.absent ? 'agent_unreachable' : 'agent_not_running',
        micOnWire: false,
        at: new Date().toISOString(),
      };
      if (previous) ev.previous = previous;
      if (!place.configDenied) {
        const mic = readMicMuted(micStatePath(place.stateDir));
        if (!mic.problem) ev.micMuted = mic.muted; // unreadable: unknown, not guessed
      }
      onEvent(ev);
      if (problem && !problem.absent) o.onProblem?.(problem);
    }
    await sleep(o.retryMs ?? 1000, undefined, { signal }).catch(() => undefined);
  }
}
