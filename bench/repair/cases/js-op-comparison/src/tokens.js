'use strict';

function isExpired(token, now) {
  return token.expiresAt > now;
}

function validTokens(tokens, now) {
  return tokens.filter((t) => !isExpired(t, now)).map((t) => t.id);
}

module.exports = { isExpired, validTokens };
