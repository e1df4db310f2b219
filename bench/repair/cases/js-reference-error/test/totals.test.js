'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { computeSubtotal, invoiceTotal } = require('../src/totals');
const { receipt } = require('../src/orders');

test('subtotal', () => {
  assert.equal(computeSubtotal([{ price: 100, qty: 3 }]), 300);
});

test('invoice total adds tax and removes discount', () => {
  const order = { id: 7, items: [{ price: 100, qty: 3 }], discount: 10 };
  assert.equal(invoiceTotal(order), 350);
  assert.equal(receipt(order), 'order 7: 350');
});
