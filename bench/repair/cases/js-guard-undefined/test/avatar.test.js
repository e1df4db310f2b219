'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { avatarUrl, avatarTag, DEFAULT_AVATAR } = require('../src/avatar');

test('custom avatar', () => {
  assert.equal(avatarUrl({ name: 'ann', profile: { avatar: '/u/ann.png' } }), '/u/ann.png');
});

test('profile without avatar', () => {
  assert.equal(avatarUrl({ name: 'bob', profile: {} }), DEFAULT_AVATAR);
});

test('no profile at all', () => {
  assert.equal(avatarTag({ name: 'cyd' }), '<img src="/img/default.png" alt="cyd">');
});
