import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { numberIn, positiveNumber } from '../../src/cli/numberOption.js';

describe('numberOption', () => {
  it('numberIn takes numbers within its bounds and refuses the rest with what it expects', () => {
    const seconds = numberIn(1, 3600);
    expect(seconds('90')).toBe(90);
    expect(seconds('1.5')).toBe(1.5);
    for (const bad of ['abc', '', ' ', '0', '-5', '3601', 'NaN', 'Infinity', '1e9']) expect(() => seconds(bad), bad).toThrow(InvalidArgumentError);
    const port = numberIn(0, 65_535, { integer: true });
    expect(port('0')).toBe(0);
    expect(() => port('80.5')).toThrow('expected a whole number from 0 to 65535.');
  });

  it('positiveNumber refuses zero, negatives and text', () => {
    expect(positiveNumber('1.25')).toBe(1.25);
    for (const bad of ['0', '-1', 'fast', '2x', '']) expect(() => positiveNumber(bad), bad).toThrow('expected a number above 0.');
  });
});
