'use strict';

const { invoiceTotal } = require('./totals');

function receipt(order) {
  return `order ${order.id}: ${invoiceTotal(order)}`;
}

module.exports = { receipt };
