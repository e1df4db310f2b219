'use strict';

function paginate(items, { page = 1, perPage = 20 } = {}) {
  const start = (page - 1) * perPage;
  return items.slice(start, start + perPage);
}

module.exports = { paginate };
