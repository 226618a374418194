// A real TURN server for tests: Debian's coturn (`turnserver`, installed by `scripts/setup.sh --dev`, its system
// service masked there), run in the foreground on one address with one long-term user, its relay ports in a range
// of their own, and nothing written outside a temporary directory. What most services give a device as its
// TURN server in production is coturn too.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { IceServer } from '../../src/protocol/session.js';
import { waitUntil } from './audioCapture.js';

export interface TurnServer {
  /** the session's ICE server for it: turn:IP:PORT with the user */
  iceServer: IceServer;
  ip: string;
  port: number;
  /** TURN over TLS (turns:IP:tlsPort), when started with a certificate */
  tlsPort?: number;
  /** coturn's log so far */
  log(): string;
  /** coturn's process (a test stops and continues it to make the relay stop answering for a while) */
  pid: number;
  stop(): Promise<void>;
}

/** A free UDP port on `ip` (bound, read, released: coturn binds it right after). */
async function freeUdpPort(ip: string): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, ip, r));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A free TCP port on `ip` (the same way). */
async function freeTcpPort(ip: string): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, ip, r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Resolves once ip:port accepts a TCP connection (coturn's TLS listener). */
async function acceptsTcp(ip: string, port: number, timeoutMs: number): Promise<void> {
  let accepted = false;
  const end = performance.now() + timeoutMs;
  while (!accepted && performance.now() < end) {
    accepted = await new Promise<boolean>((r) => {
      const c = connect(port, ip, () => (c.destroy(), r(true)));
      c.setTimeout(1_000, () => c.destroy(new Error('no answer'))); // a dropped SYN would wait minutes
      c.once('error', () => setTimeout(() => r(false), 100));
    });
  }
  if (!accepted) throw new Error(`coturn did not accept TLS connections on ${ip}:${port} within ${timeoutMs} ms`);
}

/** Resolves once a STUN Binding request to ip:port is answered (coturn logs nothing when its listeners are up). */
async function answersBinding(ip: string, port: number, timeoutMs: number): Promise<void> {
  const s = createSocket('udp4');
  let answered = false;
  s.on('message', (m) => (answered ||= m.length >= 20 && m.readUInt16BE(0) === 0x0101)); // Binding success
  await new Promise<void>((r) => s.bind(0, ip, r));
  const request = Buffer.alloc(20);
  request.writeUInt16BE(0x0001, 0); // Binding request, no attributes
  request.writeUInt32BE(0x2112a442, 4); // the magic cookie
  randomFillSync(request, 8, 12);
  try {
    const send = setInterval(() => s.send(request, port, ip), 100);
    try {
      await waitUntil(() => answered, timeoutMs, `coturn to answer on ${ip}:${port}`);
    } finally {
      clearInterval(send);
    }
  } finally {
    s.close();
  }
}

/**
 * Starts coturn listening on `ip` (UDP and TCP, and TLS with `tls`'s certificate), relaying from `ip` on ports relayPorts[0]..relayPorts[1]; resolves
 * once it listens. `args` are more of coturn's options (shorter lifetimes, `--stale-nonce`). Throws, naming setup.sh,
 * where coturn is not installed.
 */
export async function startTurnServer(
  ip: string,
  relayPorts: readonly [number, number],
  tls?: { certFile: string; keyFile: string },
  args: readonly string[] = [],
): Promise<TurnServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'turn-'));
  const logFile = path.join(dir, 'turn.log');
  const port = await freeUdpPort(ip);
  const tlsPort = tls ? await freeTcpPort(ip) : undefined;
  const username = 'speaker';
  const credential = 'relay-password-for-tests';
  const child: ChildProcess = spawn(
    'turnserver',
    [
      '-n', // no configuration file: only what is here
      '--verbose', // each allocation, permission and channel in the log (the tests read it)
      `--listening-ip=${ip}`,
      `--relay-ip=${ip}`,
      `--listening-port=${port}`,
      `--min-port=${relayPorts[0]}`,
      `--max-port=${relayPorts[1]}`,
      '--lt-cred-mech',
      `--user=${username}:${credential}`,
      '--realm=speaker-agent.test',
      `--userdb=${path.join(dir, 'turndb')}`,
      `--pidfile=${path.join(dir, 'turn.pid')}`,
      `--log-file=${logFile}`,
      '--simple-log',
      '--no-stdout-log',
      ...(tls ? [`--tls-listening-port=${tlsPort}`, `--cert=${tls.certFile}`, `--pkey=${tls.keyFile}`] : ['--no-tls']),
      '--no-dtls',
      '--no-cli',
      // coturn refuses to relay to loopback peers unless told (403 Forbidden IP): a test on 127.0.0.1 has only those
      ...(ip.startsWith('127.') ? ['--allow-loopback-peers'] : []),
      ...args,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const spawnError = new Promise<never>((_, reject) =>
    child.once('error', (e: NodeJS.ErrnoException) =>
      reject(e.code === 'ENOENT' ? new Error('turnserver (Debian\'s coturn) is not installed: run `bash scripts/setup.sh --dev`') : e),
    ),
  );
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  try {
    await Promise.race([
      spawnError,
      exited.then(() => Promise.reject(new Error(`turnserver exited at start: ${stderr}${log()}`))),
      answersBinding(ip, port, 10_000).then(() => (tlsPort === undefined ? undefined : acceptsTcp(ip, tlsPort, 10_000))),
    ]);
  } catch (e) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    iceServer: { urls: [`turn:${ip}:${port}`], username, credential },
    ip,
    port,
    tlsPort,
    log,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGCONT'); // a relay a test left stopped would hold SIGTERM until continued
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
