// Issue #4 figures: process start -> READY=1 (sd_notify, received on a real NOTIFY_SOCKET), -> call connected,
// `doctor` wall time, and the idle daemon's RSS. Runs the production entry point (bin/speaker-agent.js ->
// dist, `npm run build` first) against a real companion server and the virtual sound card.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { percentile, type BenchRow } from './table.js';
import { unitEnvironment, unitNodeFlags } from './unitFlags.js';
import { deviceDirs, enrollDevice, startTestCompanion } from '../test/support/cli.js';
import { startNotifyReceiver } from '../test/support/notifySocket.js';
import { playIntoSink, tone } from '../test/support/audioCapture.js';

const root = path.resolve(import.meta.dirname, '..');
const BIN = path.join(root, 'bin/speaker-agent.js');
const RUNS = 3;


function startVirtualAudio(): void {
  const out = execFileSync(path.join(root, 'scripts/virtual-audio.sh'), ['start'], {
    env: { ...process.env, SPEAKER_AGENT_PULSE_DIR: path.join(os.tmpdir(), 'speaker-agent-bench-pulse') },
    encoding: 'utf8',
  });
  for (const line of out.split('\n')) {
    const m = /^export (\w+)=(.*)$/.exec(line.trim());
    if (m) process.env[m[1]] = m[2];
  }
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

export async function run(): Promise<BenchRow[]> {
  if (!existsSync(path.join(root, 'dist/speaker-agent.js'))) throw new Error('dist is missing: run `npm run build` first');
  startVirtualAudio();
  const companion = await startTestCompanion();
  const dev = deviceDirs();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sa-bench-'));
  const ready: number[] = [];
  const connected: number[] = [];
  const rss: number[] = [];
  const doctor: number[] = [];
  try {
    await enrollDevice(dev, companion);
    for (let i = 0; i < RUNS; i++) {
      const rx = await startNotifyReceiver(path.join(tmp, `notify-${i}.sock`));
      const t0 = performance.now();
      const child = spawn(process.execPath, [...unitNodeFlags('speaker-agent.service', 'run'), BIN, 'run'], { env: { ...dev.env, ...unitEnvironment('speaker-agent.service'), NOTIFY_SOCKET: rx.address, WATCHDOG_USEC: '10000000' }, stdio: 'ignore' });
      try {
        await rx.waitFor((m) => m.startsWith('READY=1'), 30_000);
        ready.push(performance.now() - t0);
        await rx.waitFor((m) => m.startsWith('STATUS=call connected'), 30_000);
        connected.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 5000)); // idle in a connected call
        rss.push(rssOf(child.pid!));
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => child.on('exit', r));
        rx.close();
      }
    }
    for (let i = 0; i < RUNS; i++) {
      const mic = playIntoSink(tone(300, 15_000, 6000));
      const t0 = performance.now();
      const code = await new Promise<number | null>((resolve) => {
        const c = spawn(process.execPath, [BIN, 'doctor', '--json'], { env: dev.env, stdio: 'ignore' });
        c.on('exit', resolve);
      });
      doctor.push(performance.now() - t0);
      await mic.stop();
      if (code !== 0) throw new Error(`doctor failed (exit ${code}) during the benchmark`);
    }
  } finally {
    dev.remove();
    await companion.close();
    rmSync(tmp, { recursive: true, force: true });
  }
  const med = (v: number[]) => percentile(v, 50);
  const note = `node ${unitNodeFlags('speaker-agent.service', 'run').join(' ')}; median of ${RUNS}, ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)}`;
  return [
    { issue: '#4', metric: 'process start -> READY=1', value: med(ready), unit: 'ms', target: '<= 1500 ms', pass: med(ready) <= 1500, note },
    { issue: '#4', metric: 'process start -> call connected', value: med(connected), unit: 'ms', note: `${note}; loopback companion` },
    { issue: '#4', metric: 'doctor wall time (incl. a test call)', value: med(doctor), unit: 'ms', target: '<= 5000 ms', pass: med(doctor) <= 5000, note },
    { issue: '#4', metric: 'idle daemon RSS (connected call)', value: med(rss) / 1048576, unit: 'MB', target: '<= 70 MB', pass: med(rss) / 1048576 <= 70, note },
  ];
}
