// `npm run bench`: runs every bench/*.bench.ts (or those named on the command line) and prints one table.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { printTable, type BenchRow } from './table.js';

const dir = import.meta.dirname;
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

const rows: BenchRow[] = [];
for (const f of files) {
  process.stderr.write(`bench: ${f}\n`);
  try {
    const mod = (await import(pathToFileURL(path.join(dir, f)).href)) as { run: () => Promise<BenchRow[]> };
    rows.push(...(await mod.run()));
  } catch (err) {
    rows.push({ issue: '-', metric: `${f} failed`, value: NaN, unit: '', note: String((err as Error).message ?? err).slice(0, 120) });
  }
}
printTable(rows);
process.exit(0);
