'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { padId } = require('../src/pad');

test('pads to six digits', () => {
  assert.equal(padId(42), '000042');
});
