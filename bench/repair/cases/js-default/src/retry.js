'use strict';

/** Call fn until it succeeds, at most `attempts` times (default 3). */
function withRetry(fn, attempts = 1) {
  let lastError;
  for (let i = 0; i < attempts; i++) {
    try {
      return fn(i);
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

module.exports = { withRetry };
