// Issue #17 figures for the companion as users run it (the CLI bundle, its own process):
//   - REST fuzz: status counts and p99 latency of 5,000 malformed requests (test/support/restFuzz.ts)
//   - resident memory at rest, right after a burst of 40 refused 30 MiB bodies (uploads over the limit, JSON and
//     SDP over theirs, uploads without credentials: 10 each, concurrently), and 30 s later
import path from 'node:path';
import { startCliCompanion } from '../test/support/cli.js';
import { generateCases, runCases, sendRaw } from '../test/support/restFuzz.js';
import { rssMb } from './agentProcess.js';
import { percentile, type BenchRow } from './table.js';

const CLI = path.resolve(import.meta.dirname, '../dist/speaker-agent.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const companion = await startCliCompanion(process.env, CLI);
  const server = companion.child;
  const port = companion.port;
  const device = companion.newDevice;
  try {
    // 1. memory around a burst of refused large bodies
    await sleep(3_000);
    const rest = rssMb(server.pid!);
    const body = Buffer.alloc(30 * 1024 * 1024, 0x41);
    const lines = Object.entries(device()).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    const pre = `--XyZ\r\nContent-Disposition: form-data; name="audio_file"; filename="a.wav"\r\n\r\n`;
    const heads = [
      `POST /v1/app/voices/clone HTTP/1.1\r\nHost: x\r\n${lines}Content-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: ${pre.length + body.length}\r\nConnection: close\r\n\r\n${pre}`,
      `POST /v1/app/voices/design HTTP/1.1\r\nHost: x\r\n${lines}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      `POST /v1/realtime HTTP/1.1\r\nHost: x\r\n${lines}Content-Type: application/sdp\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      `POST /v1/app/voices/clone HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    ];
    const burst = await Promise.all(heads.flatMap((h) => Array.from({ length: 10 }, () => sendRaw(port, { kind: 'burst', bytes: Buffer.from(h), tail: body }, 60_000))));
    const after = rssMb(server.pid!);
    await sleep(30_000);
    const later = rssMb(server.pid!);
    const answered = burst.filter((r) => r.status >= 400 && r.status < 500).length;
    rows.push({ issue: '#17', metric: 'companion RSS: rest / after 40 refused 30 MiB bodies / 30 s later', value: later, unit: 'MB', target: 'back to rest', pass: later - rest <= 20, note: `${rest.toFixed(1)} / ${after.toFixed(1)} / ${later.toFixed(1)} MB; ${answered} of 40 answered with their 4xx (was 467 MB and staying)` });

    // 2. REST fuzz
    const cases = generateCases(5_000, 1717, device(), { maxUploadBytes: 20 * 1024 * 1024 });
    const results = await runCases(port, cases, 8);
    const counts: Record<string, number> = {};
    for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
    const fives = results.filter((r) => r.status >= 500 || r.status === 0).length;
    const p99 = percentile(results.map((r) => r.ms), 99);
    rows.push({ issue: '#17', metric: 'REST fuzz: 5,000 malformed requests, answers that are 5xx or none', value: fives, unit: '', target: '0', pass: fives === 0, note: `statuses ${Object.entries(counts).map(([s, n]) => `${s}:${n}`).join(' ')}` });
    rows.push({ issue: '#17', metric: 'REST fuzz: p99 latency of an answer', value: p99, unit: 'ms', note: `p50 ${percentile(results.map((r) => r.ms), 50).toFixed(1)} ms (8 connections at once, bodies up to 20 MiB)` });
  } finally {
    companion.close();
  }
  return rows;
}
