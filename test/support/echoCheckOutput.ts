// The figures scripts/arm64/echo.mjs prints (check-arm64.sh's step 6), read back by the opt-in arm64 and armhf
// tests: `prefix` '' for the target's run under qemu, '  reference: ' for the host's run of the same bundle.
import { expect } from 'vitest';
export interface EchoCheckFigures {
  erleDb: number;
  convergenceMs: number;
  retrackMs: number;
  reconvergedMs: number;
  heardPct: number;
  rtf: number;
}

function grab(out: string, prefix: string, re: RegExp, what: string): RegExpMatchArray {
  const m = out.match(new RegExp(`^${prefix}echo: ${re.source}`, 'm'));
  if (!m) throw new Error(`no ${what} line (${prefix || 'target'}) in the check's output`);
  return m;
}

/** Every figure as printed; "never" (no convergence) reads as NaN, which fails any target. */
export function echoCheckFigures(out: string, prefix = ''): EchoCheckFigures {
  const num = (s: string) => (s === 'never' ? NaN : Number(s));
  const eo = grab(out, prefix, /echo only \(87 ms, -6 dB\): ERLE (-?[\d.]+) dB 6-10 s, converged (\d+|never)(?: ms)? after/, 'echo only');
  const dc = grab(out, prefix, /delay change 87 -> 150 ms at 10 s: new delay taken (\d+|never)(?: ms)?, converged again (\d+|never)/, 'delay change');
  const dt = grab(out, prefix, /double talk .*: heard ([\d.]+) %/, 'double talk');
  const cpu = grab(out, prefix, /the chain's CPU [\d.]+ ms per s of audio: real-time factor ([\d.]+)/, 'CPU');
  return { erleDb: num(eo[1]), convergenceMs: num(eo[2]), retrackMs: num(dc[1]), reconvergedMs: num(dc[2]), heardPct: num(dt[1]), rtf: num(cpu[1]) };
}

/** The targets, for the host's run (the reference) and the target's run under qemu. */
export function expectEchoTargets(out: string, target: string): void {
  for (const [who, prefix] of [['host', '  reference: '], [target, '']] as const) {
    const f = echoCheckFigures(out, prefix);
    expect(f.erleDb, `${who}: ERLE`).toBeGreaterThanOrEqual(25);
    expect(f.convergenceMs, `${who}: convergence`).toBeLessThanOrEqual(2000);
    expect(f.heardPct, `${who}: double talk heard`).toBeGreaterThanOrEqual(80);
    expect(f.reconvergedMs, `${who}: re-convergence after the delay change`).toBeLessThanOrEqual(2000);
    expect(f.rtf, `${who}: real-time factor`).toBeGreaterThan(0);
  }
}
