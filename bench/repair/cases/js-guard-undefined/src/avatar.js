'use strict';

const DEFAULT_AVATAR = '/img/default.png';

function avatarUrl(user) {
  return user.profile.avatar || DEFAULT_AVATAR;
}

function avatarTag(user) {
  return `<img src="${avatarUrl(user)}" alt="${user.name}">`;
}

module.exports = { avatarUrl, avatarTag, DEFAULT_AVATAR };
