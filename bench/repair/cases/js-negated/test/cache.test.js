'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { Cache } = require('../src/cache');

test('computes on a miss and serves a hit', () => {
  const cache = new Cache();
  assert.equal(cache.get('a', (k) => k.toUpperCase()), 'A');
  assert.equal(cache.get('a', () => 'other'), 'A');
  assert.equal(cache.hits, 1);
});
