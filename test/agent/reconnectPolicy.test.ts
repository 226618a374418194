import { describe, expect, it } from 'vitest';
import { AgentError } from '../../src/agent/errors.js';
import { DefaultReconnectPolicy } from '../../src/agent/reconnectPolicy.js';

describe('DefaultReconnectPolicy', () => {
  it('grows exponentially up to the cap (upper bound with random = 1)', () => {
    const p = new DefaultReconnectPolicy({ initialDelayMs: 250, maxDelayMs: 30_000, random: () => 0.999999 });
    const d = [1, 2, 3, 4, 5, 6, 7, 8, 20, 1000].map((attempt) => p.nextDelayMs({ attempt, elapsedMs: 60_000 }));
    expect(d.slice(0, 8)).toEqual([250, 500, 1000, 2000, 4000, 8000, 16000, 30000]);
    expect(d[8]).toBe(30_000);
    expect(d[9]).toBe(30_000);
  });

  it('uses full jitter: never below the initial delay, spread over the window', () => {
    const p = new DefaultReconnectPolicy({ initialDelayMs: 250, maxDelayMs: 30_000 });
    const samples = Array.from({ length: 500 }, () => p.nextDelayMs({ attempt: 6, elapsedMs: 60_000 }));
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(250);
    expect(Math.max(...samples)).toBeLessThanOrEqual(8000);
    expect(new Set(samples).size).toBeGreaterThan(100);
    expect(Math.min(...samples)).toBeLessThan(2000);
    expect(Math.max(...samples)).toBeGreaterThan(6000);
  });

  it('retries within a second during the first 20 s of an outage (server restarts), then backs off', () => {
    const p = new DefaultReconnectPolicy({ random: () => 0.999999 });
    const early = [1, 2, 3, 4, 10, 50].map((attempt) => p.nextDelayMs({ attempt, elapsedMs: 19_000 }));
    expect(early).toEqual([250, 500, 1000, 1000, 1000, 1000]);
    expect(p.nextDelayMs({ attempt: 50, elapsedMs: 20_000 })).toBe(30_000);
  });

  it('backs off at least a minute after an auth rejection, whatever the attempt', () => {
    const p = new DefaultReconnectPolicy({ random: () => 0 });
    const auth = new AgentError('auth_rejected', 'secret_mismatch', { status: 401 });
    expect(p.nextDelayMs({ attempt: 1, lastError: auth, elapsedMs: 0 })).toBeGreaterThanOrEqual(60_000);
    const net = new AgentError('network', 'ECONNREFUSED');
    expect(p.nextDelayMs({ attempt: 1, lastError: net, elapsedMs: 0 })).toBe(250);
  });
});
