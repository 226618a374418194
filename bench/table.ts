// One row of the benchmark table printed by `npm run bench`.
export interface BenchRow {
  /** The issue whose target this row measures, e.g. "#5". */
  issue: string;
  metric: string;
  value: number;
  unit: string;
  /** The target as written in the issue, e.g. "<= 25 ms". */
  target?: string;
  pass?: boolean;
  note?: string;
}

export function printTable(rows: BenchRow[]): void {
  const head = ['issue', 'metric', 'value', 'target', 'result', 'note'];
  const body = rows.map((r) => [
    r.issue,
    r.metric,
    `${formatValue(r.value)} ${r.unit}`,
    r.target ?? '',
    r.pass === undefined ? '' : r.pass ? 'pass' : 'MISS',
    r.note ?? '',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => '| ' + cells.map((c, i) => c.padEnd(widths[i])).join(' | ') + ' |';
  console.log(line(head));
  console.log('|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|');
  for (const b of body) console.log(line(b));
}

function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

/** p-th percentile (0..100) of a list of numbers. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i];
}

/** least-squares slope of ys over xs (NaN for fewer than two distinct xs) */
export function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}
