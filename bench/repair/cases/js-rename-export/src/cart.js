'use strict';

const { formatCurrency, formatQuantity } = require('./format');

class Cart {
  constructor() {
    this.lines = [];
  }

  add(name, cents, qty = 1) {
    this.lines.push({ name, cents, qty });
  }

  totalCents() {
    return this.lines.reduce((sum, l) => sum + l.cents * l.qty, 0);
  }

  summary() {
    const count = this.lines.reduce((n, l) => n + l.qty, 0);
    return `${formatQuantity(count)}: ${formatCurrency(this.totalCents())}`;
  }
}

module.exports = { Cart };
