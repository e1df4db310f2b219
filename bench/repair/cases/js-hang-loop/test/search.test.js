'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { insertionPoint, insertSorted } = require('../src/search');

test('empty list', () => {
  assert.equal(insertionPoint([], 5), 0);
});

test('before everything', () => {
  assert.equal(insertionPoint([1, 3, 5], 0), 0);
});

test('middle', () => {
  assert.equal(insertionPoint([1, 3, 5], 4), 2);
});

test('insert sorted', () => {
  assert.deepEqual(insertSorted([10, 20, 30, 40], 25), [10, 20, 25, 30, 40]);
});
