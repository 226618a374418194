// The data channel on a lossy link: an echo exchange of N messages with a fifth of the packets lost each way
// (bench/dataChannelLoss.ts), a few rounds per side, in turn. Side by side in one run: werift as installed, with the
// patches that count a message in flight once (scripts/patch-dependencies.mjs, "SCTP counts a message in flight
// once"), and werift as shipped, those patches undone in memory (bench/weriftAsShipped.mjs).
// And a message lost on a quiet channel (bench/dataChannelResend.ts): send to arrival, which only the sender's
// retransmission timeout decides, against werift as shipped ("SCTP retransmission": 0.4 s against 1 s once the round
// trip is measured).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { percentile, type BenchRow } from './table.js';

const N = Number(process.env.BENCH_DC_LOSS_MESSAGES ?? 10_000);
const ROUNDS = Number(process.env.BENCH_DC_LOSS_ROUNDS ?? 3);
const LOSS = 20;

interface Round { ms: number; answers: number; timeouts: number; leftInFlight: number[] }

function round(shipped: boolean): Round {
  const args = ['--import', 'tsx', ...(shipped ? ['--import', path.join(import.meta.dirname, 'weriftAsShipped.mjs')] : [])];
  const out = execFileSync(process.execPath, [...args, path.join(import.meta.dirname, 'dataChannelLoss.ts'), String(N), String(LOSS)], {
    encoding: 'utf8',
    env: { ...process.env, BENCH_UNDO_PATCH: 'speaker-agent patch: SCTP counts a message in flight once' },
    timeout: 30 * 60_000,
  });
  return JSON.parse(out.trim().split('\n').at(-1)!) as Round;
}

const RESEND_ROUNDS = Number(process.env.BENCH_DC_RESEND_ROUNDS ?? 10);

interface Resend { ms: number[]; rto: number }

function resend(shipped: boolean): Resend {
  const args = ['--import', 'tsx', ...(shipped ? ['--import', path.join(import.meta.dirname, 'weriftAsShipped.mjs')] : [])];
  const out = execFileSync(process.execPath, [...args, path.join(import.meta.dirname, 'dataChannelResend.ts'), String(RESEND_ROUNDS)], {
    encoding: 'utf8',
    env: { ...process.env, BENCH_UNDO_PATCH: 'speaker-agent patch: SCTP retransmission' },
    timeout: 10 * 60_000,
  });
  return JSON.parse(out.trim().split('\n').at(-1)!) as Resend;
}

const fmt = (rs: Round[]) =>
  rs.map((r) => `${(r.ms / 1000).toFixed(1)} s${r.answers < N ? ` (stopped at ${r.answers})` : ''}, ${r.timeouts} timeouts, ${r.leftInFlight.join('+')} B left in flight`).join('; ');

export async function run(): Promise<BenchRow[]> {
  const patched: Round[] = [];
  const shipped: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    patched.push(round(false));
    shipped.push(round(true));
  }
  const med = (rs: Round[]) => percentile(rs.map((r) => r.ms), 50);
  const quiet = [resend(false), resend(true)];
  const [qp, qs] = quiet.map((q) => percentile(q.ms, 50));
  return [
    {
      issue: '#17',
      metric: `data channel, ${LOSS} % lost each way: ${N} messages answered, median of ${ROUNDS}`,
      value: med(patched),
      unit: 'ms',
      // issue #17: faults are survived; a channel that stops, or counts bytes out with nothing out, has not
      target: 'every answer comes, nothing left in flight',
      pass: patched.every((r) => r.answers === N && r.leftInFlight.every((b) => b === 0)),
      note: `${fmt(patched)}; werift as shipped: ${fmt(shipped)}; ratio ${(med(patched) / med(shipped)).toFixed(2)}`,
    },
    {
      issue: '#17',
      metric: `data channel: a message lost on a quiet channel, send to arrival (median of ${RESEND_ROUNDS})`,
      value: qp,
      unit: 'ms',
      // dcsctp's floor, 0.4 s, and a loopback round trip
      target: '<= 450 ms',
      pass: qp <= 450,
      note: `${quiet[0].ms.join('/')} ms, timeout ${quiet[0].rto} s; werift as shipped: ${quiet[1].ms.join('/')} ms (median ${qs}), timeout ${quiet[1].rto} s; ratio ${(qp / qs).toFixed(2)}`,
    },
  ];
}
