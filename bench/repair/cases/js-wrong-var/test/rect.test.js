'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { area, fits } = require('../src/rect');

test('area of a rectangle', () => {
  assert.equal(area({ w: 2, h: 5 }), 10);
});

test('fits', () => {
  assert.equal(fits({ w: 1, h: 1 }, { w: 2, h: 2 }), true);
});
