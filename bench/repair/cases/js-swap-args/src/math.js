'use strict';

function clamp(value, min, max) {
  return Math.min(max, Math.max(min, value));
}

module.exports = { clamp };
