'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { withRetry } = require('../src/retry');

function flaky(failures) {
  let calls = 0;
  return () => {
    calls += 1;
    if (calls <= failures) throw new Error(`fail ${calls}`);
    return calls;
  };
}

test('explicit attempts', () => {
  assert.throws(() => withRetry(flaky(2), 2), /fail 2/);
});

test('default allows three attempts', () => {
  assert.equal(withRetry(flaky(2)), 3);
});
