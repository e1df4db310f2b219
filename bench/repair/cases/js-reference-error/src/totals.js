'use strict';

const TAX_RATE = 0.2;

function computeSubtotal(items) {
  return items.reduce((sum, item) => sum + item.price * item.qty, 0);
}

function invoiceTotal(order) {
  const subtotal = calcSubtotal(order.items);
  const tax = Math.round(subtotal * TAX_RATE);
  return subtotal + tax - (order.discount || 0);
}

module.exports = { computeSubtotal, invoiceTotal };
