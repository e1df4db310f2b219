'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { Cart } = require('../src/cart');

test('total in cents', () => {
  const cart = new Cart();
  cart.add('tea', 350, 2);
  assert.equal(cart.totalCents(), 700);
});

test('summary line', () => {
  const cart = new Cart();
  cart.add('tea', 350, 2);
  cart.add('mug', 1205);
  assert.equal(cart.summary(), '3 items: EUR 19.05');
});
