'use strict';

const { paginate } = require('./paging');

const PAGE_SIZE = 2;

function listProducts(catalog, page) {
  const rows = catalog.filter((p) => p.visible);
  return paginate(rows, page, PAGE_SIZE).map((p) => p.name);
}

module.exports = { listProducts, PAGE_SIZE };
