// Runs one of the project's opt-in check scripts (scripts/check-*.sh) to the end: its exit code (77: it cannot
// run here, so the test skips) and what it printed, stdout and stderr in the order they came. The script runs in
// its own process group, which `signal` (the test's: a timeout, a cancelled run) ends with SIGTERM, so no VM,
// apt or chroot of it is left running after the test.
import { spawn } from 'node:child_process';

export function runCheckScript(script: string, args: string[] = [], signal?: AbortSignal): Promise<{ code: number; out: string }> {
  let out = '';
  return new Promise((resolve, reject) => {
    const p = spawn('bash', [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const stop = () => {
      try {
        process.kill(-p.pid!, 'SIGTERM');
      } catch {
        // gone already
      }
    };
    signal?.addEventListener('abort', stop, { once: true });
    p.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    p.on('error', reject);
    p.on('close', (c) => {
      signal?.removeEventListener('abort', stop);
      resolve({ code: c ?? -1, out });
    });
  });
}
