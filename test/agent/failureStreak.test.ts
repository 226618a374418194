// What the journal hears of a streak of failed attempts (src/agent/failureStreak.ts); the agent's own lines, against
// a real server that is down and then up, are in agent.test.ts ("a service that is down").
import { describe, expect, it } from 'vitest';
import { FailureStreak, STILL_FAILING_EVERY_MS } from '../../src/agent/failureStreak.js';

describe('FailureStreak', () => {
  it('warns at the first failure, then every 15 minutes with the count and the time; repeats between are debug', () => {
    let t = 1_000;
    const s = new FailureStreak(() => t);
    expect(s.failed('network')).toEqual({ level: 'warn' });
    t += 30_000;
    expect(s.failed('network')).toEqual({ level: 'debug' });
    t += STILL_FAILING_EVERY_MS - 30_001;
    expect(s.failed('network')).toEqual({ level: 'debug' }); // 1 ms short of 15 minutes after the warn
    t += 1;
    expect(s.failed('network')).toEqual({ level: 'warn', attempts: 4, forMs: STILL_FAILING_EVERY_MS });
    t += 60_000;
    expect(s.failed('network')).toEqual({ level: 'debug' }); // counted from the last warn line
  });

  it('another kind of failure is said at once, and starts its own count', () => {
    let t = 0;
    const s = new FailureStreak(() => t);
    s.failed('network');
    t += 5_000;
    expect(s.failed('network')).toEqual({ level: 'debug' });
    expect(s.failed('server_error')).toEqual({ level: 'warn' });
    t += STILL_FAILING_EVERY_MS;
    expect(s.failed('server_error')).toEqual({ level: 'warn', attempts: 2, forMs: STILL_FAILING_EVERY_MS });
  });

  it('a call that comes up ends the streak with its size, and the next failure is said again', () => {
    let t = 0;
    const s = new FailureStreak(() => t);
    expect(s.end()).toEqual({ attempts: 0, forMs: 0 });
    s.failed('network');
    t += 2_000;
    s.failed('network');
    t += 3_000;
    expect(s.end()).toEqual({ attempts: 2, forMs: 5_000 });
    expect(s.failed('network')).toEqual({ level: 'warn' });
  });
});
