'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { paginate } = require('../src/paging');
const { listProducts } = require('../src/products');

const catalog = ['a', 'b', 'c', 'd', 'e'].map((name) => ({ name, visible: name !== 'c' }));

test('paginate with options', () => {
  assert.deepEqual(paginate([1, 2, 3, 4, 5], { page: 2, perPage: 2 }), [3, 4]);
});

test('second page of visible products', () => {
  assert.deepEqual(listProducts(catalog, 2), ['d', 'e']);
});
