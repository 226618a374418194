// Runs one of the project's opt-in check scripts (scripts/check-*.sh) to the end: its exit code (77: it cannot
// run here, so the test skips) and what it printed, stdout and stderr in the order they came.
import { spawn } from 'node:child_process';

export function runCheckScript(script: string, args: string[] = []): Promise<{ code: number; out: string }> {
  let out = '';
  return new Promise((resolve, reject) => {
    const p = spawn('bash', [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout.on('data', (d: Buffer) => (out += d));
    p.stderr.on('data', (d: Buffer) => (out += d));
    p.on('error', reject);
    p.on('close', (c) => resolve({ code: c ?? -1, out }));
  });
}
