'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { orderWeight, needsFreight } = require('../src/weight');

test('empty order weighs nothing', () => {
  assert.equal(orderWeight([]), 0);
});

test('sums weight times quantity', () => {
  assert.equal(orderWeight([{ grams: 200, qty: 3 }, { grams: 50, qty: 1 }]), 650);
});

test('freight above the limit', () => {
  assert.equal(needsFreight([{ grams: 20000, qty: 2 }]), true);
});
