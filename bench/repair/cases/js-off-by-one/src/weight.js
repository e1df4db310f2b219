'use strict';

function orderWeight(items) {
  let grams = 0;
  for (let i = 0; i <= items.length; i++) {
    grams += items[i].grams * items[i].qty;
  }
  return grams;
}

function needsFreight(items, limitGrams = 30000) {
  return orderWeight(items) > limitGrams;
}

module.exports = { orderWeight, needsFreight };
