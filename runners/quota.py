"""The disk quota of one sandboxed run: how much the workspace and its temp space may grow.

No mount option or filesystem quota is needed: a watcher on the host polls while the command runs.

* The temp space (``/tmp``, ``$HOME``, ``/dev/shm`` of the sandbox) is size-limited tmpfs (a write
  past its size fails with ENOSPC); its use is read exactly with ``statvfs`` through
  ``/proc/<sandbox pid>/root``.
* The workspace is a host folder. Each poll reads ``statvfs`` of its filesystem (a few µs); only
  when the filesystem grew by more than the headroom left under the quota since the last
  measurement, or every ``recheck_s`` (another tenant freeing space can hide growth), is the
  workspace walked (``lstat`` of every entry, blocks allocated, hard links once, no symlink
  followed, no file opened), plus the blocks of deleted files the run still holds open.

The run is stopped (``killed_by="disk"``) when workspace growth plus temp use reaches the quota, or
when a temp mount is full. Cost: one walk of the workspace at the start, one more at the end when
its filesystem grew by 1 MiB or more meanwhile (bench/RESULTS.md, Sandbox).
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_FINAL_SLACK = 1 << 20
"""Below this much growth of the workspace's filesystem, the end of a run needs no walk."""
_FULL_MARGIN = 1 << 20
"""A temp mount with less than this free counts as full (its writes fail with ENOSPC)."""


@dataclass(frozen=True, slots=True)
class DiskUse:
    """One measurement, in bytes."""

    workspace_growth: int
    temp: int
    deleted_open: int

    @property
    def total(self) -> int:
        """What counts against the quota."""
        return max(self.workspace_growth, 0) + self.temp + self.deleted_open


def tree_bytes(root: Path) -> tuple[int, int]:
    """``(bytes allocated, entries)`` under ``root``: ``st_blocks`` of every entry, hard links once.

    Never follows a symlink, never leaves ``root``'s filesystem, never opens a file (a FIFO cannot
    block it); entries that vanish during the walk are skipped.
    """
    try:
        top = root.lstat()
    except OSError:
        return 0, 0
    device = top.st_dev
    total, entries = top.st_blocks * 512, 1
    seen: set[int] = set()
    stack = [os.fspath(root)]
    while stack:
        folder = stack.pop()
        try:
            scan = os.scandir(folder)
        except OSError:
            continue
        with scan:
            for entry in scan:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_dev != device:
                    continue
                entries += 1
                if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                    if info.st_ino in seen:
                        continue
                    seen.add(info.st_ino)
                total += info.st_blocks * 512
                if stat.S_ISDIR(info.st_mode):
                    stack.append(entry.path)
    return total, entries


def deleted_open_bytes(pids: Iterable[int], device: int, proc: Path = Path("/proc")) -> int:
    """Blocks of regular files on ``device`` that ``pids`` hold open after unlinking them.

    ``stat`` of ``/proc/PID/fd/N`` reaches the inode without opening it.
    """
    seen: set[int] = set()
    total = 0
    for pid in pids:
        try:
            links = list((proc / str(pid) / "fd").iterdir())
        except OSError:
            continue
        for link in links:
            try:
                if not str(link.readlink()).endswith(" (deleted)"):
                    continue
                info = link.stat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_dev == device and info.st_ino not in seen:
                seen.add(info.st_ino)
                total += info.st_blocks * 512
    return total


def _used(path: str) -> tuple[int, int, int]:
    """``(used bytes, free bytes, size)`` of the filesystem at ``path``."""
    st = os.statvfs(path)
    size = st.f_blocks * st.f_frsize
    return size - st.f_bfree * st.f_frsize, st.f_bavail * st.f_frsize, size


class DiskWatch:
    """Polls one run's disk use against ``quota_bytes`` (see the module docstring)."""

    def __init__(
        self,
        workspace: Path,
        quota_bytes: int,
        *,
        temp_mounts: Mapping[str, int] | None = None,
        extra_roots: Sequence[Path] = (),
        recheck_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        proc: Path = Path("/proc"),
    ) -> None:
        """Measure the baseline now (one walk of ``workspace`` and of ``extra_roots``: other host
        folders the run may write, such as ARCS's private probe folder bound at ``/run/arcs``)."""
        self.workspace = workspace
        self.roots = (workspace, *extra_roots)
        self.quota_bytes = quota_bytes
        self.temp_mounts = dict(temp_mounts or {})
        """The sandbox's tmpfs mounts and their sizes in bytes."""
        self.recheck_s = recheck_s
        self._clock = clock
        self._proc = proc
        self._device = workspace.lstat().st_dev
        started = clock()
        self._base, self.entries = self._walk()
        self.walk_s = clock() - started
        self._fs_at_walk = self._fs_used()
        self._growth = 0
        self._deleted = 0
        self._temp = 0
        self._next_walk = started + self._gap(recheck_s)
        self._earliest = started + 2 * self.walk_s
        self.walks = 1
        self.peak = DiskUse(0, 0, 0)
        self.full_mount = ""
        """A temp mount found full (its writes fail with ENOSPC), else ''."""

    def _walk(self) -> tuple[int, int]:
        walks = [tree_bytes(root) for root in self.roots]
        return sum(size for size, _ in walks), sum(entries for _, entries in walks)

    def _gap(self, at_least: float) -> float:
        # A big workspace is walked less often: the watcher stays a small share of one core.
        return max(at_least, 20 * self.walk_s)

    def _fs_used(self) -> int:
        try:
            return _used(os.fspath(self.workspace))[0]
        except OSError:
            return 0

    def final(self) -> bool:
        """After the run: walk the workspace once more (a run may end between two polls) unless its
        filesystem grew by less than 1 MiB since the last walk; True when its growth plus the temp
        use last seen reached the quota."""
        if self._fs_used() - self._fs_at_walk >= _FINAL_SLACK:
            self._next_walk = self._clock()
        return self.poll(None, list)

    def poll(self, sandbox_pid: int | None, pids: Callable[[], Iterable[int]]) -> bool:
        """Measure what changed; True when the run reached its quota or filled a temp mount.

        ``sandbox_pid`` is a process inside the sandbox's mount namespace (its temp mounts are
        read through ``/proc/<pid>/root``); ``pids`` lists the run's processes (open deleted files).
        """
        if sandbox_pid is not None:
            temp, seen = 0, 0
            for mount, expected in self.temp_mounts.items():
                with contextlib.suppress(OSError):
                    used, free, size = _used(f"{self._proc}/{sandbox_pid}/root{mount}")
                    # Until bwrap has mounted it (and pivoted into the new root), the path is the
                    # host's: only a filesystem of exactly the size we asked for is the sandbox's.
                    if size != expected:
                        continue
                    seen += 1
                    temp += used
                    if free < min(_FULL_MARGIN, size // 16):
                        self.full_mount = mount
            if seen:
                self._temp = temp
        now = self._clock()
        fs_now = self._fs_used()
        estimate = self._growth + max(fs_now - self._fs_at_walk, 0) + self._deleted + self._temp
        due = now >= self._next_walk or (estimate >= self.quota_bytes and now >= self._earliest)
        if due:
            started = self._clock()
            size, self.entries = self._walk()
            self._growth = size - self._base
            self._deleted = deleted_open_bytes(pids(), self._device, self._proc)
            self.walk_s = self._clock() - started
            self.walks += 1
            self._fs_at_walk = fs_now
            self._next_walk = now + self._gap(self.recheck_s)
            # Walks the filesystem's growth asks for (others may write to it too): at most a third of a core.
            self._earliest = self._clock() + 2 * self.walk_s
        use = DiskUse(self._growth, self._temp, self._deleted)
        if use.total > self.peak.total:
            self.peak = use
        return use.total >= self.quota_bytes or bool(self.full_mount)


__all__ = ["DiskUse", "DiskWatch", "deleted_open_bytes", "tree_bytes"]
