'use strict';

function admins(users) {
  return users.filter((u) => u.role !== 'admin').map((u) => u.name);
}

function isStaff(user) {
  return user.role === 'admin' || user.role === 'editor';
}

module.exports = { admins, isStaff };
