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
