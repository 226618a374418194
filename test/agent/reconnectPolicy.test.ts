import { describe, expect, it } from 'vitest';
import { AgentError } from '../../src/agent/errors.js';
import { DefaultReconnectPolicy } from '../../src/agent/reconnectPolicy.js';

describe('DefaultReconnectPolicy', () => {
  it('grows exponentially up to the cap (upper bound with random = 1)', () => {
    const p = new DefaultReconnectPolicy({ initialDelayMs: 250, maxDelayMs: 30_000, random: () => 0.999999 });
    const d = [1, 2, 3, 4, 5, 6, 7, 8, 20, 1000].map((attempt) => p.nextDelayMs({ attempt, elapsedMs: 60_000 }));
    expect(d.slice(0, 8)).toEqual([375, 500, 1000, 2000, 4000, 8000, 16000, 30000]);
    expect(d[8]).toBe(30_000);
    expect(d[9]).toBe(30_000);
  });

  it('uses full jitter: never below half the initial delay, spread over the window', () => {
    const p = new DefaultReconnectPolicy({ initialDelayMs: 250, maxDelayMs: 30_000 });
    const samples = Array.from({ length: 500 }, () => p.nextDelayMs({ attempt: 6, elapsedMs: 60_000 }));
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(125);
    expect(Math.max(...samples)).toBeLessThanOrEqual(8000);
    expect(new Set(samples).size).toBeGreaterThan(100);
    expect(Math.min(...samples)).toBeLessThan(2000);
    expect(Math.max(...samples)).toBeGreaterThan(6000);
  });

  it('retries within a second during the first 20 s of an outage (server restarts), then backs off', () => {
    const p = new DefaultReconnectPolicy({ random: () => 0.999999 });
    const early = [1, 2, 3, 4, 10, 50].map((attempt) => p.nextDelayMs({ attempt, elapsedMs: 19_000 }));
    expect(early).toEqual([375, 500, 1000, 1000, 1000, 1000]);
    expect(p.nextDelayMs({ attempt: 50, elapsedMs: 20_000 })).toBe(30_000);
  });

  it('backs off at least a minute after an auth rejection, whatever the attempt', () => {
    const p = new DefaultReconnectPolicy({ random: () => 0 });
    const auth = new AgentError('auth_rejected', 'secret_mismatch', { status: 401 });
    expect(p.nextDelayMs({ attempt: 1, lastError: auth, elapsedMs: 0 })).toBeGreaterThanOrEqual(60_000);
    const net = new AgentError('network', 'ECONNREFUSED');
    expect(p.nextDelayMs({ attempt: 1, lastError: net, elapsedMs: 0 })).toBe(125);
  });

  it('regression: the first retry was exactly initialDelayMs, so a fleet retried in the same millisecond after a server restart; it is spread', () => {
    const p = new DefaultReconnectPolicy();
    const first = Array.from({ length: 1000 }, () => p.nextDelayMs({ attempt: 1, elapsedMs: 0 }));
    // [initial/2, 1.5 x initial]: the same 250 ms on average, over a 250 ms window
    expect(Math.min(...first)).toBeGreaterThanOrEqual(125);
    expect(Math.max(...first)).toBeLessThanOrEqual(375);
    expect(Math.min(...first)).toBeLessThan(140);
    expect(Math.max(...first)).toBeGreaterThan(360);
    expect(new Set(first).size).toBeGreaterThan(150);
  });

  it('regression: 429/503 Retry-After was ignored for the first 20 s (retries ~1 s apart); the wait is at least what the server asked, plus jitter', () => {
    const busy = new AgentError('server_error', 'session request refused: HTTP 429', { status: 429, retryAfterMs: 120_000 });
    const low = new DefaultReconnectPolicy({ random: () => 0 });
    const high = new DefaultReconnectPolicy({ random: () => 0.999999 });
    for (const ctx of [{ attempt: 1, elapsedMs: 0 }, { attempt: 3, elapsedMs: 5_000 }, { attempt: 40, elapsedMs: 600_000 }]) {
      expect(low.nextDelayMs({ ...ctx, lastError: busy })).toBe(120_000);
      expect(high.nextDelayMs({ ...ctx, lastError: busy })).toBe(150_000);
    }
    const spread = new DefaultReconnectPolicy();
    const waits = Array.from({ length: 200 }, () => spread.nextDelayMs({ attempt: 1, lastError: busy, elapsedMs: 0 }));
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(120_000);
    expect(new Set(waits).size).toBeGreaterThan(100);
    // a short ask does not shorten the backoff the policy would wait anyway
    const soon = new AgentError('server_error', 'busy', { status: 503, retryAfterMs: 1_000 });
    expect(high.nextDelayMs({ attempt: 40, lastError: soon, elapsedMs: 600_000 })).toBe(30_000);
  });
});
