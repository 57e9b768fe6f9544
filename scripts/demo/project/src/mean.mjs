import { sum } from './sum.mjs';

/** The arithmetic mean of a non-empty list. */
export function mean(values) {
  if (values.length === 0) throw new RangeError('mean of an empty list');
  return values.reduce((acc, v) => sum(acc, v), 0) / values.length;
}
