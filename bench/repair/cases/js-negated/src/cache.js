'use strict';

class Cache {
  constructor() {
    this.store = new Map();
    this.hits = 0;
  }

  get(key, compute) {
    if (!this.store.has(key)) {
      this.hits += 1;
      return this.store.get(key);
    }
    const value = compute(key);
    this.store.set(key, value);
    return value;
  }
}

module.exports = { Cache };
