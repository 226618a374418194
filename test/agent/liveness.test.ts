import { describe, expect, it } from 'vitest';
import { LivenessWatchdog } from '../../src/agent/liveness.js';

describe('LivenessWatchdog', () => {
  it('declares the peer dead at most timeoutMs after the last packet, once', () => {
    let now = 0;
    const deaths: number[] = [];
    const w = new LivenessWatchdog(5000, (silent) => deaths.push(silent), () => now);
    w.start();
    for (now = 0; now <= 4700; now += 20) w.seen(); // traffic every 20 ms up to 4.7 s
    for (; now <= 9700; now += w.periodMs) w.check();
    w.stop();
    expect(deaths).toHaveLength(1);
    expect(deaths[0]).toBeLessThanOrEqual(5000);
    expect(deaths[0]).toBeGreaterThanOrEqual(5000 - w.periodMs);
  });

  it('stays quiet while packets keep arriving', () => {
    let now = 0;
    let dead = false;
    const w = new LivenessWatchdog(5000, () => (dead = true), () => now);
    w.start();
    for (; now < 60_000; now += 20) {
      w.seen();
      if (now % 250 === 0) w.check();
    }
    w.stop();
    expect(dead).toBe(false);
  });

  it('fires on its own timer with the real clock', async () => {
    const fired = new Promise<number>((resolve) => new LivenessWatchdog(300, (silent) => resolve(silent)).start());
    const silent = await fired;
    expect(silent).toBeGreaterThanOrEqual(300 - 30);
    expect(silent).toBeLessThanOrEqual(300 + 50);
  });
});

describe('LivenessWatchdog with a consent probe', () => {
  /** a watchdog on a fake clock whose probe answers `answer()`; checks run by hand */
  function rig(answer: () => boolean, timeoutMs = 5000) {
    let now = 0;
    const deaths: string[] = [];
    const probes: number[] = [];
    const w = new LivenessWatchdog(timeoutMs, (_s, why) => deaths.push(why), () => now, async () => {
      probes.push(now);
      return answer();
    });
    w.start();
    return {
      w,
      deaths,
      probes,
      get now() {
        return now;
      },
      /** advances the clock by ms in steps of the check period, with media every 20 ms when `media` */
      async run(ms: number, media: boolean) {
        const end = now + ms;
        let nextCheck = now;
        for (; now <= end; now += 20) {
          if (media) w.media();
          if (now >= nextCheck) {
            w.check();
            nextCheck = now + w.periodMs;
            await Promise.resolve();
            await Promise.resolve();
          }
        }
      },
    };
  }

  it('media that was flowing and stops is probed within mediaGapMs + a period; no answer: dead, with the reason', async () => {
    const r = rig(() => false);
    await r.run(2000, true);
    expect(r.probes).toHaveLength(0);
    const stoppedAt = r.now;
    await r.run(1000, false);
    expect(r.probes).toHaveLength(1);
    expect(r.probes[0] - stoppedAt).toBeLessThanOrEqual(300 + r.w.periodMs + 20);
    expect(r.deaths).toHaveLength(1);
    expect(r.deaths[0]).toMatch(/no audio, RTCP or data-channel message from the peer for \d+ ms, and no answer to a consent check after its audio stopped/);
  });

  it('a peer that answers keeps its call through 60 s of total silence (a service quiet between turns)', async () => {
    const r = rig(() => true);
    await r.run(2000, true);
    await r.run(60_000, false);
    expect(r.deaths).toHaveLength(0);
    // one probe when the media stopped, then one per quiet period (timeoutMs / 2)
    expect(r.probes.length).toBeGreaterThanOrEqual(20);
    expect(r.probes.length).toBeLessThanOrEqual(30);
    expect(r.w.stats.answered).toBe(r.probes.length);
  });

  it('a short media burst does not count as flowing: no probe on its gap until the quiet period', async () => {
    const r = rig(() => true);
    await r.run(200, true); // 10 packets, fewer than the 25 that make a flow
    await r.run(1000, false);
    expect(r.probes).toHaveLength(0);
  });

  it('after an answered probe, media that flows again and stops is probed again; the second silence is fatal', async () => {
    let answer = true;
    const r = rig(() => answer);
    await r.run(1000, true);
    await r.run(600, false);
    expect(r.probes).toHaveLength(1);
    expect(r.deaths).toHaveLength(0);
    answer = false;
    await r.run(1000, true);
    await r.run(600, false);
    expect(r.probes).toHaveLength(2);
    expect(r.deaths).toHaveLength(1);
  });

  it('with no probe the plain silence timeout still applies (a transport that cannot ask)', () => {
    let now = 0;
    const deaths: number[] = [];
    const w = new LivenessWatchdog(5000, (s) => deaths.push(s), () => now);
    w.start();
    for (; now <= 2000; now += 20) w.media();
    for (; now <= 4000; now += w.periodMs) w.check();
    expect(deaths).toHaveLength(0); // a media gap alone is not death without a probe
    for (; now <= 8000; now += w.periodMs) w.check();
    expect(deaths).toHaveLength(1);
  });
});
