'use strict';

const leftPad = require('left-pad-xyz');

function padId(id) {
  return leftPad(String(id), 6, '0');
}

module.exports = { padId };
