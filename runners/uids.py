"""Sandbox uids that no two runs share, across every worker process of the host.

In ``setpriv`` mode each run drops to a fresh uid; the kernel counts ``RLIMIT_NPROC`` per uid and
file ownership separates runs, so two runs must never hold the same uid at once, even when they
come from different worker processes. A uid is *leased* by holding an exclusive ``flock`` on
``<state dir>/<uid>``: the kernel drops the lock when the holder exits, however it exits, so a
killed worker never leaks a uid. A lease file is unlinked on release; a process that locked it just
before that finds its path gone (or pointing at a new file) and tries another uid.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import random
import stat
import threading
from pathlib import Path

from runners.errors import ArcsError

DEFAULT_STATE_DIR = Path("/run/arcs-sandbox/uids")
SANDBOX_UID_BASE = 2_000_000_000
"""Sandbox uids: far above login users, container subuid ranges and systemd's dynamic users."""
SANDBOX_UID_SPAN = 1 << 24
_ATTEMPTS = 1000
_BY_DIR: dict[Path, UidLeases] = {}
_BY_DIR_LOCK = threading.Lock()


class UidLeaseError(ArcsError):
    """No sandbox uid could be leased (the state folder is unusable, or every uid is taken)."""


class UidLeases:
    """Leases uids in ``[base, base + span)`` through lock files under ``state_dir``."""

    def __init__(self, state_dir: Path, base: int, span: int, *, rng: random.Random | None = None) -> None:
        """Nothing touches the disk until the first :meth:`acquire`."""
        self.state_dir = Path(state_dir)
        self.base = base
        self.span = span
        self._rng = rng or random.SystemRandom()
        self._held: dict[int, int] = {}
        self._lock = threading.Lock()
        self._ready = False

    def _prepare(self) -> None:
        # Root's private folder: a lease file another user could create or swap would let them
        # hand a sandbox someone else's uid.
        if self._ready:
            return
        self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = self.state_dir.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise UidLeaseError(f"{self.state_dir} is not a private folder of this user; remove it")
        self._ready = True

    def acquire(self) -> int:
        """A uid no other run (of any process using ``state_dir``) holds; keep it until :meth:`release`."""
        with self._lock:
            self._prepare()
            for _ in range(_ATTEMPTS):
                uid = self.base + self._rng.randrange(self.span)
                if uid in self._held:
                    continue
                fd = self._try_lock(self.state_dir / str(uid))
                if fd is not None:
                    self._held[uid] = fd
                    return uid
        raise UidLeaseError(f"no free sandbox uid after {_ATTEMPTS} tries under {self.state_dir}")

    @staticmethod
    def _try_lock(path: Path) -> int | None:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EISDIR, errno.EACCES):
                return None
            raise UidLeaseError(f"cannot create a uid lease under {path.parent}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # Still the file at that path? (its holder may have unlinked it before we locked it)
            held, now = os.fstat(fd), os.lstat(path)
            if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino) and held.st_nlink:
                return fd
        except OSError:
            pass
        os.close(fd)
        return None

    def release(self, uid: int) -> None:
        """Give ``uid`` back: unlink its lease file, then drop the lock."""
        with self._lock:
            fd = self._held.pop(uid, None)
        if fd is None:
            return
        with contextlib.suppress(OSError):
            (self.state_dir / str(uid)).unlink()
        os.close(fd)

    def held(self) -> frozenset[int]:
        """The uids this object holds now."""
        with self._lock:
            return frozenset(self._held)


def uid_leases(state_dir: Path = DEFAULT_STATE_DIR) -> UidLeases:
    """The sandbox uid leases of ``state_dir``: one object per folder in this process."""
    with _BY_DIR_LOCK:
        leases = _BY_DIR.get(state_dir)
        if leases is None:
            leases = _BY_DIR[state_dir] = UidLeases(state_dir, SANDBOX_UID_BASE, SANDBOX_UID_SPAN)
        return leases


__all__ = [
    "DEFAULT_STATE_DIR",
    "SANDBOX_UID_BASE",
    "SANDBOX_UID_SPAN",
    "UidLeaseError",
    "UidLeases",
    "uid_leases",
]
