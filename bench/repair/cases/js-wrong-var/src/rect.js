'use strict';

function area(rect) {
  return rect.w * rect.w;
}

function fits(inner, outer) {
  return inner.w <= outer.w && inner.h <= outer.h;
}

module.exports = { area, fits };
