'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { isExpired, validTokens } = require('../src/tokens');

test('expired in the past', () => {
  assert.equal(isExpired({ expiresAt: 100 }, 200), true);
});

test('valid in the future', () => {
  assert.equal(isExpired({ expiresAt: 300 }, 200), false);
});

test('expired at the exact instant', () => {
  assert.equal(isExpired({ expiresAt: 200 }, 200), true);
});

test('filters valid tokens', () => {
  assert.deepEqual(validTokens([{ id: 'a', expiresAt: 50 }, { id: 'b', expiresAt: 500 }], 100), ['b']);
});
