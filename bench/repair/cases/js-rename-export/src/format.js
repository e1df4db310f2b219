'use strict';

function formatMoney(cents, currency = 'EUR') {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${currency} ${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

function formatQuantity(n) {
  return n === 1 ? '1 item' : `${n} items`;
}

module.exports = { formatMoney, formatQuantity };
