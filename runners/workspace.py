"""Ephemeral workspaces: a private, disposable copy of a repository per candidate.

A copy (not a ``git worktree``) because candidates are usually *dirty* trees: a patch applied on top
of a checkout, untracked files included. ``cp -a --reflink=auto`` makes it copy-on-write where the
filesystem can (btrfs, XFS, overlayfs on those) and a plain copy elsewhere; symlinks, modes and
timestamps are preserved and nothing is excluded (``.git`` included: tests may call git).

Every workspace lives in a folder named ``arcs-ws-<pid>-*`` under one root, so a host process that
was SIGKILLed (and never ran its ``finally``) has its leftovers removed by the next process that
opens a workspace under the same root.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from jobs.repair.errors import ArcsError, UsageError

DEFAULT_MAX_BYTES = 4 << 30
"""Refuse to copy trees larger than this (4 GiB) unless the caller says otherwise."""

_PREFIX = "arcs-ws-"
_STALE = re.compile(rf"^{_PREFIX}(\d+)-")


class WorkspaceTooLarge(ArcsError):
    """The source tree is larger than the configured maximum workspace size."""


def default_root() -> Path:
    """``$TMPDIR/arcs-workspaces-<uid>``, created private (0700); where workspaces go by default.

    Refuses a folder that another user created or can write to: in a shared ``/tmp`` it could be a
    planted symlink or a place where someone else swaps files under the sandbox.
    """
    root = Path(tempfile.gettempdir()) / f"arcs-workspaces-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    info = root.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise UsageError(
            f"{root} is not a private folder of this user; remove it or name another workspace root"
        )
    return root


@contextlib.contextmanager
def ephemeral_workspace(
    src: Path,
    *,
    root: Path | None = None,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
    scrub_credentials: bool = True,
) -> Iterator[Path]:
    """Yield a private copy of ``src``; delete it on exit, whatever happened inside.

    The copy keeps ``src``'s folder name (``<root>/arcs-ws-<pid>-<random>/<name>``). Credentials
    that a clone may have left in ``.git/config`` (``https://user:token@`` URLs, ``extraheader``,
    ``[credential]`` sections) are removed from the copy unless ``scrub_credentials`` is false.
    Raises :class:`WorkspaceTooLarge` above ``max_bytes`` and :class:`UsageError` if ``src`` is
    not a folder.
    """
    src = Path(src)
    if not src.is_dir():
        raise UsageError(f"cannot make a workspace from {src}: not a folder")
    if max_bytes is not None:
        size = tree_size(src, stop_above=max_bytes)
        if size > max_bytes:
            raise WorkspaceTooLarge(
                f"{src} holds more than {max_bytes // (1 << 20)} MiB; raise the workspace size limit to test it"
            )
    if root is None:
        base = default_root()
    else:
        base = Path(root)
        base.mkdir(parents=True, exist_ok=True)
    sweep_stale(base)
    holder = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=base))
    try:
        workspace = holder / (src.resolve().name or "workspace")
        copy_tree(src, workspace)
        if scrub_credentials:
            scrub_git_credentials(workspace)
        yield workspace
    finally:
        remove_tree(holder)


def tree_size(root: Path, *, stop_above: int | None = None) -> int:
    """Sum of the sizes of everything under ``root`` (symlinks not followed).

    Stops early, returning a value above ``stop_above``, once that much has been counted.
    """
    total = 0
    stack = [os.fspath(root)]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += info.st_size
            if stat.S_ISDIR(info.st_mode):
                stack.append(entry.path)
            if stop_above is not None and total > stop_above:
                return total
    return total


def copy_tree(src: Path, dst: Path) -> None:
    """Copy ``src`` to the new path ``dst`` preserving symlinks, modes and times (reflink if possible)."""
    cp = shutil.which("cp") if sys.platform.startswith("linux") else None
    if cp is not None:
        done = subprocess.run(
            [cp, "-a", "--reflink=auto", "--", os.fspath(src), os.fspath(dst)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 0:
            return
        # A cp without GNU options: start again with the portable copy.
        remove_tree(dst)
    shutil.copytree(src, dst, symlinks=True)


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s\"]+@")
_SECTION = re.compile(r"^\s*\[\s*(?P<name>[^\s\]\"]+)")


def scrub_git_credentials(workspace: Path) -> bool:
    """Remove credentials from ``workspace/.git/config``; return True if anything changed.

    Drops ``user:token@`` from every URL, every ``extraheader`` line (``http.extraheader`` carries
    ``Authorization:`` headers) and whole ``[credential ...]`` sections. A ``.git`` *file*
    (worktree or submodule) points outside the workspace, which the sandbox cannot see, so only a
    real ``.git`` folder is touched.
    """
    config = workspace / ".git" / "config"
    if not config.is_file() or config.is_symlink():
        return False
    original = config.read_text(encoding="utf-8", errors="surrogateescape")
    kept: list[str] = []
    in_credential = False
    for line in original.splitlines(keepends=True):
        section = _SECTION.match(line)
        if section:
            in_credential = section.group("name").lower() == "credential"
        if in_credential:
            continue
        if "extraheader" in line.lower():
            continue
        kept.append(_USERINFO.sub(r"\g<scheme>", line))
    scrubbed = "".join(kept)
    if scrubbed == original:
        return False
    config.write_text(scrubbed, encoding="utf-8", errors="surrogateescape")
    return True


def _make_writable(func: Callable[..., object], path: str, _exc: BaseException) -> None:
    # A read-only folder (``chmod -w`` by a test, git's objects) blocks unlinking its entries.
    entry = Path(path)
    with contextlib.suppress(OSError):
        entry.parent.chmod(stat.S_IRWXU)
    if not entry.is_symlink():
        with contextlib.suppress(OSError):
            entry.chmod(stat.S_IRWXU)
    if func is os.open:
        # rmtree could not open a folder (it takes flags: calling it again as func(path) would
        # raise TypeError); once it is readable, remove it on its own.
        shutil.rmtree(path, ignore_errors=True)
        return
    with contextlib.suppress(FileNotFoundError):
        func(path)


def remove_tree(path: Path) -> None:
    """Delete ``path`` and everything in it, including read-only folders; missing is fine."""
    path = Path(path)
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    if sys.version_info >= (3, 12):  # pragma: no cover - 3.11 is the supported floor
        shutil.rmtree(path, onexc=_make_writable)
    else:
        shutil.rmtree(path, onerror=lambda f, p, e: _make_writable(f, p, e[1]))


def sweep_stale(root: Path) -> list[Path]:
    """Remove workspaces under ``root`` left by processes that no longer exist; return them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _STALE.match(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        if _alive(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            remove_tree(Path(entry.path))
            removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
