// src/common/sharedInterval.ts: checks with the same period share one timer, each runs at its period, a stopped
// one no longer runs, the timer goes when its last check stops, and one check that throws does not stop the others.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { everyMs, sharedIntervalCount } from '../../src/common/sharedInterval.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('sharedInterval', () => {
  it('checks of one period share one timer and each runs every period; a stopped check does not run', () => {
    vi.useFakeTimers();
    const before = sharedIntervalCount();
    const runs = { a: 0, b: 0, c: 0 };
    const a = everyMs(250, () => runs.a++);
    const b = everyMs(250, () => runs.b++);
    const c = everyMs(100, () => runs.c++);
    expect(sharedIntervalCount()).toBe(before + 2);
    vi.advanceTimersByTime(1000);
    expect(runs).toEqual({ a: 4, b: 4, c: 10 });
    a.stop();
    vi.advanceTimersByTime(500);
    expect(runs).toEqual({ a: 4, b: 6, c: 15 });
    expect(sharedIntervalCount()).toBe(before + 2);
    b.stop();
    c.stop();
    expect(sharedIntervalCount()).toBe(before);
    vi.advanceTimersByTime(1000);
    expect(runs).toEqual({ a: 4, b: 6, c: 15 });
    b.stop(); // stopping twice is harmless
    expect(sharedIntervalCount()).toBe(before);
  });

  it('the same function registered twice runs twice; a check that throws does not keep the others from running', () => {
    vi.useFakeTimers();
    let n = 0;
    const fn = () => n++;
    // The error is rethrown from a microtask (an uncaught exception, as from a throwing setInterval callback):
    // captured here so that it can be looked at instead of ending the test run.
    const rethrows: (() => void)[] = [];
    const spy = vi.spyOn(globalThis, 'queueMicrotask').mockImplementation((cb) => void rethrows.push(cb));
    const first = everyMs(50, () => {
      throw new Error('boom');
    });
    const x = everyMs(50, fn);
    const y = everyMs(50, fn);
    try {
      vi.advanceTimersByTime(100);
      expect(n).toBe(4);
      expect(rethrows).toHaveLength(2);
      expect(() => rethrows[0]()).toThrow('boom');
    } finally {
      spy.mockRestore();
      first.stop();
      x.stop();
      y.stop();
    }
  });

  it('a period that is not a positive integer is a RangeError', () => {
    expect(() => everyMs(0, () => undefined)).toThrow(RangeError);
    expect(() => everyMs(12.5, () => undefined)).toThrow(RangeError);
    expect(() => everyMs(Number.NaN, () => undefined)).toThrow(RangeError);
  });

  it('the real timer does not keep the process alive (unref)', () => {
    const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timeouts();
    const plain = setInterval(() => undefined, 30); // what a referenced timer looks like here
    expect(timeouts()).toBe(before + 1);
    clearInterval(plain);
    const s = everyMs(30, () => undefined);
    expect(sharedIntervalCount()).toBeGreaterThan(0);
    expect(timeouts()).toBe(before);
    s.stop();
  });
});
