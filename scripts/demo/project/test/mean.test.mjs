import test from 'node:test';
import assert from 'node:assert/strict';
import { mean } from '../src/mean.mjs';

test('mean of 1..4 is 2.5', () => {
  assert.equal(mean([1, 2, 3, 4]), 2.5);
});

test('mean of an empty list throws', () => {
  assert.throws(() => mean([]), RangeError);
});
