// Number options of the CLI. A value commander hands over as text is checked here, so a bad one is a usage error
// (exit 2) that names what is expected: before, `run --demo-timeout abc` became a 1 ms timer (NaN) and a
// failed demo after the companion and the sound card had started, and `say --speed fast` a speed of null that
// the server read as "absent".
import { InvalidArgumentError } from 'commander';

/** A parser for `.option(flags, description, parser)`: a number from min to max (a whole one with `integer`). */
export function numberIn(min: number, max: number, o: { integer?: boolean } = {}): (value: string) => number {
  return (value) => {
    const n = value.trim() === '' ? Number.NaN : Number(value);
    if (!Number.isFinite(n) || n < min || n > max || (o.integer && !Number.isInteger(n))) {
      throw new InvalidArgumentError(`expected a ${o.integer ? 'whole ' : ''}number from ${min} to ${max}.`);
    }
    return n;
  };
}

/** A parser for a number above 0 (bounds the server sets are the server's to check). */
export function positiveNumber(value: string): number {
  const n = value.trim() === '' ? Number.NaN : Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number above 0.');
  return n;
}
