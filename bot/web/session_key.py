"""The key that signs dashboard session cookies, shared by every web process of a deployment.

``ARCS_SESSION_SECRET`` wins when set. Otherwise the key lives in ``$ARCS_HOME/session.key``
(mode 0600), made once: the first process to need it writes a random key to a private temporary
file and hard-links it into place, which either succeeds or finds the file another process
linked first, so workers starting together always agree on one key, and restarts keep it (a
login survives a restart).
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

import structlog
from pydantic import SecretStr

from bot.errors import ConfigError
from bot.settings import Settings

log = structlog.get_logger("arcs.web")

KEY_FILE = "session.key"


def _read(path: Path) -> str:
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        path.chmod(0o600)  # a key others can read signs their cookies too
        log.warning("session_key_permissions_fixed", path=str(path), was=oct(mode & 0o777))
    key = path.read_text(encoding="utf-8").strip()
    if len(key) < 32:
        raise ConfigError(f"{path} does not hold a session key; delete it to make a new one")
    return key


def shared_session_key(home: Path) -> str:
    """The key in ``home/session.key``, created atomically (0600) when missing."""
    path = home / KEY_FILE
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(6)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(secrets.token_urlsafe(48) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)  # atomic: exactly one process's key is linked
        except FileExistsError:
            pass
    finally:
        tmp.unlink(missing_ok=True)
    return _read(path)


def with_session_secret(settings: Settings) -> Settings:
    """``settings`` with a session secret: its own, or the shared one under ``settings.home``."""
    if settings.session_secret is not None and settings.session_secret.get_secret_value():
        return settings
    key = shared_session_key(settings.home)
    return settings.model_copy(update={"session_secret": SecretStr(key)})
