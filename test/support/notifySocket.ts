// A real NOTIFY_SOCKET for tests: a unix datagram socket bound by a python3 helper (Node cannot bind one),
// printing each received datagram as one JSON line. Works for paths and abstract names ('@...').
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

const RECEIVER = `
import json, socket, sys
addr = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind('\\0' + addr[1:] if addr.startswith('@') else addr)
print(json.dumps({"bound": addr}), flush=True)
while True:
    data = s.recv(4096)
    print(json.dumps({"msg": data.decode()}), flush=True)
`;

export interface NotifyReceiver {
  address: string;
  messages: string[];
  /** resolves with the first message satisfying pred (already received ones count) */
  waitFor(pred: (m: string) => boolean, timeoutMs?: number): Promise<string>;
  close(): void;
}

export async function startNotifyReceiver(address: string): Promise<NotifyReceiver> {
  const child: ChildProcess = spawn('python3', ['-c', RECEIVER, address], { stdio: ['ignore', 'pipe', 'inherit'] });
  const messages: string[] = [];
  const waiters: { pred: (m: string) => boolean; resolve: (m: string) => void }[] = [];
  let bound: () => void;
  const ready = new Promise<void>((r) => (bound = r));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const v = JSON.parse(line) as { bound?: string; msg?: string };
    if (v.bound) return bound();
    if (v.msg === undefined) return;
    messages.push(v.msg);
    for (const w of [...waiters]) {
      if (w.pred(v.msg)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(v.msg);
      }
    }
  });
  await ready;
  return {
    address,
    messages,
    waitFor: (pred, timeoutMs = 10_000) => {
      const have = messages.find(pred);
      if (have) return Promise.resolve(have);
      return new Promise<string>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no matching sd_notify message within ${timeoutMs} ms; got ${JSON.stringify(messages)}`)), timeoutMs);
        waiters.push({ pred, resolve: (m) => (clearTimeout(t), resolve(m)) });
      });
    },
    close: () => child.kill(),
  };
}
