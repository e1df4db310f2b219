"""Locks that serialize work on one repository across processes and hosts.

:func:`repo_lock` is held while a repository's code index is rebuilt: two workers (threads,
processes, or hosts sharing one Qdrant server) refreshing the same repository at once would
otherwise rewrite the same collection and manifest under each other.

Where the lock lives follows the store:

- **PostgreSQL** (``ARCS_DATABASE_URL=postgresql://…``, or a PostgreSQL engine): a session-level
  ``pg_advisory_lock`` on a connection of its own, held for the duration and released by
  ``pg_advisory_unlock`` (or by the server when the connection dies with its process). Every
  worker sharing the database excludes every other, on any host.
- **SQLite** (the default): an ``fcntl`` lock on ``<lock_dir>/<collection>.lock``, next to the
  index manifest under ``ARCS_HOME``: it excludes processes on the same host only (SQLite is a
  single-host store anyway). The kernel drops the lock when its holder dies.

Waiting longer than ``timeout_s`` raises :class:`LockTimeout` (one line naming the repository),
never a silent hang. The lock is not re-entrant: do not take it twice in one thread.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import structlog
from sqlalchemy.engine import Engine

from runners.errors import ArcsError

log = structlog.get_logger("arcs.locks")

DEFAULT_TIMEOUT_S = 20 * 60.0
"""How long :func:`repo_lock` waits by default: below the index refresh job's 30-minute limit, so
a refresh stuck behind another ends with :class:`LockTimeout` (and is retried) instead."""

_POLL_MIN_S = 0.05
_POLL_MAX_S = 1.0
_LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL: lock_timeout expired


class LockTimeout(ArcsError):
    """Another process held the repository's lock for longer than the caller would wait."""

    exit_code = 1


class LockUnavailable(ArcsError):
    """The lock could not be taken at all (database unreachable, lock folder not writable)."""

    exit_code = 1


class LockSettings(Protocol):
    """What :func:`repo_lock` reads from the settings (``bot.settings.Settings`` conforms)."""

    @property
    def sqlalchemy_url(self) -> str:
        """The store's database URL."""
        ...

    @property
    def index_dir(self) -> Path:
        """The default folder of lock files."""
        ...


EngineFactory = Callable[[str], Engine]
"""Opens an engine on a database URL, for the PostgreSQL lock of a :class:`LockSettings` target.
The edge may pass the store's own (``bot.store.store.create_store_engine``); the default opens a
plain, unpooled one (:func:`plain_engine`)."""


def lock_name(repo: str) -> str:
    """The name of ``repo``'s lock: the Qdrant collection its index is kept in (stable, unique)."""
    from indexing.retention import collection_name

    return collection_name(repo)


def advisory_key(repo: str) -> int:
    """The signed 64-bit ``pg_advisory_lock`` key of ``repo`` (namespaced, stable across hosts)."""
    digest = hashlib.blake2b(f"arcs-index:{lock_name(repo)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_path(lock_dir: Path, repo: str) -> Path:
    """The lock file of ``repo`` in ``lock_dir`` (beside the index manifest ``<collection>.json``)."""
    return lock_dir / f"{lock_name(repo)}.lock"


def repo_lock(
    target: LockSettings | Engine,
    repo: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    lock_dir: Path | None = None,
    connect: EngineFactory | None = None,
) -> contextlib.AbstractContextManager[None]:
    """A context manager that holds ``repo``'s cross-process lock (see the module docstring).

    ``target`` is the settings (PostgreSQL when ``ARCS_DATABASE_URL`` names one: ``connect``,
    by default :func:`plain_engine`, opens an engine for the lock, disposed after; else a lock
    file in ``lock_dir``, by default ``settings.index_dir``) or an SQLAlchemy engine already open
    on the store (PostgreSQL: its pool gives the lock's connection; SQLite: a lock file in
    ``lock_dir``, which is then required). Raises :class:`LockTimeout` after ``timeout_s``
    seconds of waiting, :class:`LockUnavailable` when the lock cannot be taken at all.
    """
    if timeout_s < 0:
        raise ValueError("timeout_s must not be negative")
    if not isinstance(target, Engine):  # the settings (structurally: jobs does not import them)
        if _is_postgres_url(target.sqlalchemy_url):
            return _pg_lock_on_url(connect or plain_engine, target.sqlalchemy_url, repo, timeout_s)
        return _file_lock(lock_path(lock_dir or target.index_dir, repo), repo, timeout_s)
    if target.dialect.name == "postgresql":
        return _pg_lock(target, repo, timeout_s)
    if lock_dir is None:
        raise ValueError(f"repo_lock: a {target.dialect.name} engine needs lock_dir (the lock file's folder)")
    return _file_lock(lock_path(lock_dir, repo), repo, timeout_s)


def _is_postgres_url(url: str) -> bool:
    return url.split(":", 1)[0].split("+", 1)[0] in ("postgres", "postgresql")


def plain_engine(url: str) -> Engine:
    """An unpooled engine on the PostgreSQL ``url`` for one lock (the store's spelling rule:
    ``postgres://`` and ``postgresql://`` mean psycopg 3; an explicit driver is kept)."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            url = "postgresql+psycopg://" + url[len(prefix) :]
    return create_engine(url, poolclass=NullPool)


def _waited_too_long(repo: str, timeout_s: float) -> LockTimeout:
    return LockTimeout(
        f"the lock of {repo} is still held by another process after {timeout_s:g} s "
        "(an index refresh of the same repository); giving up"
    )


# --- SQLite: a lock file ------------------------------------------------------------------------


@contextlib.contextmanager
def _file_lock(path: Path, repo: str, timeout_s: float) -> Iterator[None]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise LockUnavailable(f"cannot open the lock file {path}: {exc.strerror or exc}") from None
    try:
        _flock_within(fd, repo, timeout_s)
        log.debug("lock.acquired", repo=repo, kind="file")
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _flock_within(fd: int, repo: str, timeout_s: float) -> None:
    """``flock(LOCK_EX)`` with a deadline: poll the non-blocking form with a growing pause (a
    blocking ``flock`` cannot be given a timeout without signals, which threads cannot use)."""
    deadline = time.monotonic() + timeout_s
    pause = _POLL_MIN_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockUnavailable(f"cannot lock the index of {repo}: {exc.strerror or exc}") from None
        left = deadline - time.monotonic()
        if left <= 0:
            raise _waited_too_long(repo, timeout_s)
        time.sleep(min(pause, left))
        pause = min(pause * 2, _POLL_MAX_S)


# --- PostgreSQL: an advisory lock ------------------------------------------------------------------


@contextlib.contextmanager
def _pg_lock_on_url(connect: EngineFactory, url: str, repo: str, timeout_s: float) -> Iterator[None]:
    engine = connect(url)
    try:
        with _pg_lock(engine, repo, timeout_s):
            yield
    finally:
        engine.dispose()


@contextlib.contextmanager
def _pg_lock(engine: Engine, repo: str, timeout_s: float) -> Iterator[None]:
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    key = advisory_key(repo)
    try:
        conn = engine.connect()
    except DBAPIError as exc:
        raise LockUnavailable(
            f"cannot lock the index of {repo}: the database is unreachable ({_one_line(exc)})"
        ) from None
    with conn:
        try:
            # lock_timeout bounds the wait of pg_advisory_lock; SET LOCAL keeps it to this
            # transaction, and the session-level lock outlives the commit. 0 would mean "forever".
            timeout_ms = max(1, int(timeout_s * 1000))
            conn.execute(text(f"SET LOCAL lock_timeout = {timeout_ms}"))
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
            conn.commit()
        except DBAPIError as exc:
            conn.rollback()
            if getattr(exc.orig, "sqlstate", None) == _LOCK_NOT_AVAILABLE:
                raise _waited_too_long(repo, timeout_s) from None
            raise LockUnavailable(f"cannot lock the index of {repo}: {_one_line(exc)}") from None
        log.debug("lock.acquired", repo=repo, kind="postgres")
        try:
            yield
        finally:
            # A failed unlock (the connection died) needs nothing more: the server released the
            # session's locks with the session.
            with contextlib.suppress(DBAPIError):
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
                conn.commit()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "EngineFactory",
    "LockTimeout",
    "LockUnavailable",
    "advisory_key",
    "lock_path",
    "plain_engine",
    "repo_lock",
]
