'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { titleCase } = require('../src/title');

test('capitalizes words', () => {
  assert.equal(titleCase('hello  WORLD'), 'Hello World');
});

test('small words stay lower-case except first', () => {
  assert.equal(titleCase('the lord of the rings'), 'The Lord of the Rings');
});
