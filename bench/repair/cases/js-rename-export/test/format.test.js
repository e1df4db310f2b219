'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { formatMoney } = require('../src/format');

test('negative amounts', () => {
  assert.equal(formatMoney(-5), '-EUR 0.05');
});
