// When the microphone's encoder spends CPU and bits on FEC: from the far end's RTCP loss reports.
import { describe, expect, it } from 'vitest';
import { UplinkLossPolicy } from '../../../src/agent/audio/uplinkLossPolicy.js';

describe('UplinkLossPolicy', () => {
  it('stays off on a clean link and on loss under 2 %', () => {
    const p = new UplinkLossPolicy();
    for (const f of [0, 0, 0.004, 0.019, 0]) expect(p.report(f)).toBeUndefined();
    expect(p.percent).toBe(0);
  });

  it('turns on at the first report of 2 % or more, sized to the loss (5..30 %), and only ever raises it', () => {
    const p = new UplinkLossPolicy();
    expect(p.report(0.02)).toBe(5);
    expect(p.report(0.03)).toBeUndefined(); // still within 5 %
    expect(p.report(0.12)).toBe(12);
    expect(p.report(0.05)).toBeUndefined();
    expect(p.report(0.9)).toBe(30);
    expect(p.percent).toBe(30);
  });

  it('turns off only after 10 clean reports in a row; a report of 1-2 % or more starts the count again', () => {
    const p = new UplinkLossPolicy();
    p.report(0.1);
    for (let i = 0; i < 9; i++) expect(p.report(0)).toBeUndefined();
    expect(p.report(0.015)).toBeUndefined(); // not clean: the count starts over
    for (let i = 0; i < 9; i++) expect(p.report(0.005)).toBeUndefined();
    expect(p.percent).toBe(10);
    expect(p.report(0)).toBe(0);
    expect(p.percent).toBe(0);
    expect(p.report(0)).toBeUndefined();
  });

  it('ignores reports that are not a fraction in 0..1', () => {
    const p = new UplinkLossPolicy();
    for (const bad of [-0.1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '0.5' as unknown as number, undefined as unknown as number]) {
      expect(p.report(bad)).toBeUndefined();
    }
    expect(p.percent).toBe(0);
  });
});
