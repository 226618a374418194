// Pure jitter-buffer logic: reorder, loss, duplicates, 16-bit wraparound, bursts, clock drift, new streams.
import { describe, expect, it } from 'vitest';
import { JitterBuffer, seqDiff, type PlayoutItem } from '../../../src/agent/audio/jitterBuffer.js';

const SSRC = 0x1234;
const pkt = (seq: number, ssrc = SSRC) => ({
  sequenceNumber: seq & 0xffff,
  timestamp: (seq * 960) >>> 0,
  ssrc,
  payload: Buffer.from([seq & 0xff, (seq >> 8) & 0xff]),
});
/** What a pop returned, as a short string: "p<seq>", "lost", "empty". */
const show = (it: PlayoutItem) => (it.kind === 'packet' ? `p${it.sequenceNumber}` : it.kind);
const pops = (jb: JitterBuffer, n: number) => Array.from({ length: n }, () => show(jb.pop()));

describe('JitterBuffer', () => {
  it('waits for its 40 ms target, then plays in order', () => {
    const jb = new JitterBuffer();
    jb.push(pkt(100), 0n, 0);
    expect(show(jb.pop())).toBe('empty');
    jb.push(pkt(101), 0n, 20);
    expect(pops(jb, 2)).toEqual(['p100', 'p101']);
  });

  it('reorders packets that arrive out of order', () => {
    const jb = new JitterBuffer();
    for (const s of [10, 12, 11, 14, 13]) jb.push(pkt(s), 0n, s * 20);
    expect(pops(jb, 5)).toEqual(['p10', 'p11', 'p12', 'p13', 'p14']);
  });

  it('accepts a reordered packet older than the first one before playout starts', () => {
    const jb = new JitterBuffer();
    jb.push(pkt(11), 0n, 0);
    jb.push(pkt(10), 0n, 1);
    expect(pops(jb, 2)).toEqual(['p10', 'p11']);
  });

  it('reports a lost packet with the next payload for FEC, and moves on', () => {
    const jb = new JitterBuffer();
    for (const s of [1, 2, 4, 5]) jb.push(pkt(s), 0n, s * 20);
    expect(show(jb.pop())).toBe('p1');
    expect(show(jb.pop())).toBe('p2');
    const lost = jb.pop();
    expect(lost.kind).toBe('lost');
    expect(lost.kind === 'lost' && lost.next?.[0]).toBe(4);
    expect(pops(jb, 2)).toEqual(['p4', 'p5']);
    expect(jb.stats.lost).toBe(1);
  });

  it('waits at a hole while less than the target is buffered: a reordered packet still plays', () => {
    const jb = new JitterBuffer();
    for (const s of [1, 2]) jb.push(pkt(s), 0n, s * 20);
    expect(pops(jb, 2)).toEqual(['p1', 'p2']);
    jb.push(pkt(4), 0n, 80); // 3 is late, 4 overtook it
    expect(show(jb.pop())).toBe('lost'); // concealed, but 3 is still awaited
    jb.push(pkt(3), 0n, 90);
    expect(pops(jb, 2)).toEqual(['p3', 'p4']);
    expect(jb.stats).toMatchObject({ lost: 0, late: 0, stretched: 1 });
  });

  it('drops duplicates and packets whose turn has passed (late), growing the target on late ones', () => {
    const jb = new JitterBuffer();
    for (const s of [1, 2, 4, 5]) jb.push(pkt(s), 0n, s * 20);
    expect(jb.push(pkt(2), 0n, 60)).toBe('duplicate');
    expect(pops(jb, 3)).toEqual(['p1', 'p2', 'lost']);
    const before = jb.targetDelayMs;
    expect(jb.push(pkt(3), 0n, 80)).toBe('late');
    expect(jb.push(pkt(1), 0n, 80)).toBe('late');
    expect(jb.targetDelayMs).toBeGreaterThan(before);
    expect(jb.stats).toMatchObject({ duplicate: 1, late: 2 });
    expect(show(jb.pop())).toBe('p4');
  });

  it('plays across the 16-bit sequence wraparound', () => {
    const jb = new JitterBuffer();
    const seqs = [65533, 65534, 65535, 0, 1, 2];
    jb.push(pkt(seqs[0]), 0n, 0);
    jb.push(pkt(seqs[2]), 0n, 1);
    jb.push(pkt(seqs[1]), 0n, 2);
    jb.push(pkt(seqs[4]), 0n, 3);
    jb.push(pkt(seqs[3]), 0n, 4);
    jb.push(pkt(seqs[5]), 0n, 5);
    expect(pops(jb, 6)).toEqual(['p65533', 'p65534', 'p65535', 'p0', 'p1', 'p2']);
    expect(seqDiff(2, 65533)).toBe(5);
    expect(seqDiff(65533, 2)).toBe(-5);
  });

  it('conceals an underrun without skipping the packet that arrives late, then grows the target', () => {
    const jb = new JitterBuffer();
    jb.push(pkt(1), 0n, 0);
    jb.push(pkt(2), 0n, 20);
    expect(pops(jb, 2)).toEqual(['p1', 'p2']);
    expect(show(jb.pop())).toBe('lost'); // nothing there: conceal, but keep waiting for 3
    jb.push(pkt(3), 0n, 70);
    expect(show(jb.pop())).toBe('p3');
    expect(jb.stats.underruns).toBe(1);
    expect(jb.stats.late).toBe(0);
    expect(jb.targetDelayMs).toBe(60);
  });

  it('treats a long silence from the sender as a pause: stops concealing and refills', () => {
    const jb = new JitterBuffer({ maxUnderrunFrames: 3 });
    jb.push(pkt(1), 0n, 0);
    jb.push(pkt(2), 0n, 20);
    expect(pops(jb, 2 + 3 + 2)).toEqual(['p1', 'p2', 'lost', 'lost', 'lost', 'empty', 'empty']);
    // The sender resumes further on (e.g. after DTX); playout restarts once the target is buffered.
    jb.push(pkt(50), 0n, 1000);
    expect(show(jb.pop())).toBe('empty');
    jb.push(pkt(51), 0n, 1020);
    jb.push(pkt(52), 0n, 1040);
    // 3..49 were never sent: playout resumes at 50, not with 47 concealed frames
    expect(pops(jb, 3)).toEqual(['p50', 'p51', 'p52']);
    expect(jb.stats.lost).toBe(0);
  });

  it('absorbs a burst after a stall without losing packets, then trims latency back', () => {
    const jb = new JitterBuffer();
    let seq = 0;
    for (let tick = 0; tick < 400; tick++) {
      if (tick < 100 || tick >= 110) {
        // packets 100..109 are held up 200 ms (a Wi-Fi hiccup) and arrive together at tick 110
        const upTo = tick === 110 ? 110 : tick;
        for (; seq <= upTo; seq++) jb.push(pkt(seq), 0n, tick * 20);
      }
      jb.pop();
    }
    expect(jb.stats.late).toBe(0);
    expect(jb.stats.lost).toBe(0);
    expect(jb.stats.trimmed).toBeGreaterThan(0);
    expect(jb.stats.played + jb.stats.trimmed).toBe(seq - jb.bufferedMs / 20);
    expect(jb.bufferedMs).toBeLessThanOrEqual(jb.targetDelayMs + 20);
  });

  it('standing one-frame excess: a steady link that sits one frame above the target is trimmed back to it', () => {
    // Packets arrive one per pop, but one more than the target is always buffered (the stream started with a
    // frame to spare). The depth never dips, so it is not jitter: one frame is dropped, and only one.
    const jb = new JitterBuffer({ initialDelayMs: 20, minDelayMs: 20, stablePopsToShrink: 100_000 });
    let seq = 0;
    jb.push(pkt(seq++), 0n, 0);
    const depthAtPop: number[] = [];
    for (let pop = 0; pop < 400; pop++) {
      jb.push(pkt(seq), 0n, seq * 20);
      seq++;
      depthAtPop.push(jb.bufferedMs);
      jb.pop();
    }
    expect(depthAtPop[0]).toBe(40); // target 20 ms + the spare frame
    expect(jb.stats.trimmed).toBe(1);
    expect(depthAtPop.at(-1)).toBe(20); // back at the target: 20 ms less latency for every later packet
    expect(jb.stats.lost).toBe(0);
    expect(jb.stats.underruns).toBe(0);
  });

  it('far behind after a late sound card start: catches up in one step instead of over seconds', () => {
    // 1.2 s of packets piled up before the sound card took its first frame (PulseAudio start-up, measured).
    const jb = new JitterBuffer();
    let seq = 0;
    for (; seq < 60; seq++) jb.push(pkt(seq), 0n, seq * 20);
    const first = jb.pop();
    expect(first.kind).toBe('packet');
    expect(jb.bufferedMs).toBeLessThanOrEqual(jb.targetDelayMs + 20);
    // and it goes on playing in order from there, nothing lost
    const next = (first as { sequenceNumber: number }).sequenceNumber + 1;
    jb.push(pkt(seq), 0n, seq * 20);
    expect(show(jb.pop())).toBe(`p${next}`);
    expect(jb.stats.lost).toBe(0);
  });

  it('keeps latency bounded when the sender clock runs fast (drift), trimming rarely', () => {
    const jb = new JitterBuffer();
    // Sender 1 % fast: 101 packets per 100 pops, for 60 s.
    let seq = 0;
    let owed = 0;
    for (let pop = 0; pop < 3000; pop++) {
      owed += 1.01;
      while (owed >= 1) {
        jb.push(pkt(seq), 0n, pop * 20);
        seq++;
        owed--;
      }
      jb.pop();
    }
    expect(jb.bufferedMs).toBeLessThanOrEqual(jb.targetDelayMs + 40);
    expect(jb.stats.trimmed).toBeGreaterThanOrEqual(25);
    expect(jb.stats.trimmed).toBeLessThanOrEqual(35);
    expect(jb.stats.lost).toBe(0);
  });

  it('keeps playing every packet when the sender clock runs slow (drift), concealing the shortfall', () => {
    const jb = new JitterBuffer();
    let seq = 0;
    let owed = 0;
    const played = new Set<number>();
    for (let pop = 0; pop < 3000; pop++) {
      owed += 0.99;
      while (owed >= 1) {
        jb.push(pkt(seq), 0n, pop * 20);
        seq++;
        owed--;
      }
      const it = jb.pop();
      if (it.kind === 'packet') played.add(it.sequenceNumber);
    }
    expect(jb.stats.lost).toBe(0);
    expect(jb.stats.late).toBe(0);
    // all but the few still buffered were played
    expect(played.size).toBeGreaterThanOrEqual(seq - 4);
  });

  it('shrinks the target after stable stretches down to 20 ms, and backs off when a shrink was premature', () => {
    const jb = new JitterBuffer({ stablePopsToShrink: 50 });
    let seq = 0;
    const steady = (n: number) => {
      for (let i = 0; i < n; i++) {
        jb.push(pkt(seq), 0n, seq * 20);
        seq++;
        jb.pop();
      }
    };
    /** The sender stalls for n pops, then its held-back packets arrive (a delay spike, no loss). */
    const spike = (n: number) => {
      for (let i = 0; i < n; i++) jb.pop();
    };
    steady(3);
    expect(jb.targetDelayMs).toBe(40);
    steady(50);
    expect(jb.targetDelayMs).toBe(20); // a clean link: one frame
    spike(3); // underrun -> grows right after the shrink: premature, so the next shrink waits 2 x 50 pops
    expect(jb.targetDelayMs).toBe(40);
    steady(90); // more than 50 stable pops, fewer than 100
    expect(jb.targetDelayMs).toBe(40);
    steady(10);
    expect(jb.targetDelayMs).toBe(20);
    expect(jb.stats.lost).toBe(0);
    expect(jb.stats.late).toBe(0);
  });

  it('starts over on an SSRC change or a big sequence jump (new call)', () => {
    const jb = new JitterBuffer();
    jb.push(pkt(1), 0n, 0);
    jb.push(pkt(2), 0n, 20);
    expect(show(jb.pop())).toBe('p1');
    expect(jb.push(pkt(5000, 0x9999), 0n, 40)).toBe('reset');
    jb.push(pkt(5001, 0x9999), 0n, 60);
    expect(pops(jb, 2)).toEqual(['p5000', 'p5001']);
    expect(jb.push(pkt(30000, 0x9999), 0n, 80)).toBe('reset');
    jb.push(pkt(30001, 0x9999), 0n, 100);
    expect(pops(jb, 2)).toEqual(['p30000', 'p30001']);
    expect(jb.stats.resets).toBe(2);
  });

  it('estimates interarrival jitter', () => {
    const jb = new JitterBuffer();
    for (let s = 0; s < 200; s++) jb.push(pkt(s), 0n, s * 20 + (s % 2 ? 15 : 0));
    expect(jb.jitterEstimateMs).toBeGreaterThan(10);
    const steady = new JitterBuffer();
    for (let s = 0; s < 200; s++) steady.push(pkt(s), 0n, s * 20);
    expect(steady.jitterEstimateMs).toBe(0);
  });

  it('rejects nonsensical delay settings', () => {
    expect(() => new JitterBuffer({ minDelayMs: 100, maxDelayMs: 40 })).toThrow(RangeError);
  });
});
