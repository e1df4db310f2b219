'use strict';

const { clamp } = require('./math');

class Player {
  constructor() {
    this.volume = 50;
  }

  setVolume(volume) {
    this.volume = clamp(volume, 100, 0);
    return this.volume;
  }
}

module.exports = { Player };
