'use strict';

function insertionPoint(values, x) {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (values[mid] < x) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

function insertSorted(values, x) {
  const i = insertionPoint(values, x);
  return [...values.slice(0, i), x, ...values.slice(i)];
}

module.exports = { insertionPoint, insertSorted };
