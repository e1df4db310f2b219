'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { Player } = require('../src/player');
const { clamp } = require('../src/math');

test('clamp', () => {
  assert.equal(clamp(5, 0, 3), 3);
});

test('volume is kept within 0..100', () => {
  const p = new Player();
  assert.equal(p.setVolume(40), 40);
  assert.equal(p.setVolume(140), 100);
  assert.equal(p.setVolume(-3), 0);
});
