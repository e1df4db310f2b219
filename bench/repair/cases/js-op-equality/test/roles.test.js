'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { admins, isStaff } = require('../src/roles');

const users = [
  { name: 'ann', role: 'admin' },
  { name: 'bob', role: 'viewer' },
  { name: 'cyd', role: 'editor' },
];

test('admins only', () => {
  assert.deepEqual(admins(users), ['ann']);
});

test('staff', () => {
  assert.equal(isStaff(users[2]), true);
  assert.equal(isStaff(users[1]), false);
});
