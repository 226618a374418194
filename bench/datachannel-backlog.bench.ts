// Issue #17 (faults): how fast a data-channel backlog drains. N messages of 5 KB are queued at once on a real werift
// channel over loopback (two peers in this process, both ends' CPU counted) and timed until the receiver has them
// all. Before the SCTP backlog patch (scripts/patch-dependencies.mjs) the cost of each flush grew with the square of
// the backlog: 1,000 such messages drained at 170 KB/s, and 2,000 stalled until ICE consent expired (27 Nov).
import { dataChannelPair } from '../test/support/dataChannelPair.js';
import { waitUntil } from '../test/support/audioCapture.js';
import { percentile, type BenchRow } from './table.js';

const N = Number(process.env.BENCH_DC_MESSAGES ?? 2_000);
const ROUNDS = 3;

export async function run(): Promise<BenchRow[]> {
  const body = 'x'.repeat(5_000);
  const rates: number[] = [];
  const cpus: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const pair = await dataChannelPair();
    try {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < N; i++) pair.channel.send(`${i} ${body}`);
      await waitUntil(() => pair.received.length === N, 120_000, 'the backlog to drain');
      const ms = performance.now() - t0;
      const c = process.cpuUsage(c0);
      rates.push((N * body.length) / 1024 / (ms / 1000));
      cpus.push(((c.user + c.system) / 1000 / ms) * 100);
      if (pair.sender.connectionState !== 'connected') throw new Error(`the call is ${pair.sender.connectionState} after the backlog`);
    } finally {
      await pair.close();
    }
  }
  return [
    { issue: '#17', metric: `data channel: ${N} queued 5 KB messages drain, median of ${ROUNDS}`, value: Math.round(percentile(rates, 50)), unit: 'KB/s', note: `rounds ${rates.map((x) => x.toFixed(0)).join('/')} KB/s; CPU of both peers ${cpus.map((x) => x.toFixed(0)).join('/')} % of a core; unpatched werift: 170 KB/s for 1,000, and 2,000 stalled until consent expired (27 Nov)` },
  ];
}
