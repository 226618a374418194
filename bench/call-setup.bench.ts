// A call's set-up on a lossy uplink: the peer drops a fifth of what the device sends from the first packet on, the
// SCTP handshake of the data channel included (bench/callSetup.ts, 60 calls per side, in turn). Side by side in one
// run: werift as installed, with the patch that starts SCTP's retransmission timeout at 1 s
// (scripts/patch-dependencies.mjs, "SCTP retransmission"), and werift as shipped (3 s), that patch undone in memory
// (bench/weriftAsShipped.mjs). A clean link too, both ways.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { percentile, type BenchRow } from './table.js';

const CALLS = Number(process.env.BENCH_SETUP_CALLS ?? 60);

function side(lossPercent: number, shipped: boolean): { ms: number[]; failed: number } {
  const args = ['--import', 'tsx', ...(shipped ? ['--import', path.join(import.meta.dirname, 'weriftAsShipped.mjs')] : [])];
  const out = execFileSync(process.execPath, [...args, path.join(import.meta.dirname, 'callSetup.ts'), String(CALLS), String(lossPercent)], {
    encoding: 'utf8',
    env: { ...process.env, BENCH_UNDO_PATCH: 'speaker-agent patch: SCTP retransmission' },
    maxBuffer: 16 << 20,
    timeout: 30 * 60_000,
  });
  return JSON.parse(out.trim().split('\n').at(-1)!) as { ms: number[]; failed: number };
}

const mean = (v: number[]) => Math.round(v.reduce((a, b) => a + b, 0) / v.length);
const fmt = (r: { ms: number[]; failed: number }) =>
  `mean ${mean(r.ms)} / p50 ${percentile(r.ms, 50)} / p90 ${percentile(r.ms, 90)} / max ${Math.max(...r.ms)} ms of those up, ${r.failed} of ${CALLS} not up within 15 s`;

// The mean, not the median, is the headline: whether a call meets a loss at all is a coin toss at this rate
// (about half of them do), so the median jumps between the clean time and one resend from run to run.
export async function run(): Promise<BenchRow[]> {
  const clean = side(0, false);
  const cleanShipped = side(0, true);
  const patched = side(20, false);
  const shipped = side(20, true);
  return [
    {
      issue: '#5',
      metric: 'call set-up, clean link (offer to open data channel), mean',
      value: mean(clean.ms),
      unit: 'ms',
      note: `${fmt(clean)}; werift as shipped: ${fmt(cleanShipped)}`,
    },
    {
      issue: '#5',
      metric: 'call set-up, 20 % of the uplink lost (SCTP handshake resent after 1 s), mean',
      value: mean(patched.ms),
      unit: 'ms',
      note: `${fmt(patched)}; werift as shipped (3 s, every time): ${fmt(shipped)}; ratio ${(mean(patched.ms) / mean(shipped.ms)).toFixed(2)}`,
    },
    { issue: '#5', metric: 'call set-up, 20 % of the uplink lost, p90', value: percentile(patched.ms, 90), unit: 'ms', note: `werift as shipped: ${percentile(shipped.ms, 90)} ms; ratio ${(percentile(patched.ms, 90) / percentile(shipped.ms, 90)).toFixed(2)}` },
  ];
}
