"""Ephemeral workspaces: a private, disposable copy of a repository per candidate.

A copy (not a ``git worktree``) because candidates are usually *dirty* trees: a patch applied on top
of a checkout, untracked files included. ``cp -a --reflink=auto`` makes it copy-on-write where the
filesystem can (btrfs, XFS, overlayfs on those) and a plain copy elsewhere; symlinks, modes and
timestamps are preserved and nothing is excluded (``.git`` included: tests may call git).

Dependency folders (``node_modules``, :data:`DEPENDENCY_FOLDERS`) can be *shared* instead of copied
(``share=``): the copy gets an empty folder in their place and :func:`shared_folders` names the
source, which a runner that can mount (:class:`runners.sandbox.LocalSandbox`) binds there
read-only. A candidate then reads the same ``node_modules`` as every other candidate and cannot
change it (104 MB / 7.7k files were copied per candidate before). :func:`shareable` says when.

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
from collections.abc import Iterator, Sequence
from pathlib import Path

from runners import wsfs
from runners.errors import ArcsError, UsageError

DEFAULT_MAX_BYTES = 4 << 30
"""Refuse to copy trees larger than this (4 GiB) unless the caller says otherwise."""

_GIT_CONFIG_LIMIT = 16 << 20
_PREFIX = "arcs-ws-"
_STALE = re.compile(rf"^{_PREFIX}(\d+)-")


DEPENDENCY_FOLDERS: tuple[str, ...] = ("node_modules",)
"""Top-level folders that hold installed dependencies, shared read-only rather than copied."""

_SHARED: dict[Path, tuple[tuple[str, Path], ...]] = {}
"""Live workspaces' shared folders: workspace -> ((workspace-relative name, source folder), ...)."""


def shared_folders(workspace: Path) -> tuple[tuple[str, Path], ...]:
    """The folders of ``workspace`` that stand for a read-only mount of their source (see ``share=``)."""
    return _SHARED.get(Path(workspace).resolve(), ())


def shareable(runner: object, setup: str | None) -> tuple[str, ...]:
    """What ``share=`` may be for a workspace run by ``runner``: the dependency folders when the
    runner mounts shared folders (``mounts_shared``) and no ``setup:`` step may reinstall them."""
    return DEPENDENCY_FOLDERS if getattr(runner, "mounts_shared", False) and not setup else ()


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
    share: Sequence[str] = (),
) -> Iterator[Path]:
    """Yield a private copy of ``src``; delete it on exit, whatever happened inside.

    The copy keeps ``src``'s folder name (``<root>/arcs-ws-<pid>-<random>/<name>``). Credentials
    that a clone may have left in ``.git/config`` (``https://user:token@`` URLs, ``extraheader``,
    ``[credential]`` sections) are removed from the copy unless ``scrub_credentials`` is false.
    Raises :class:`WorkspaceTooLarge` above ``max_bytes`` and :class:`UsageError` if ``src`` is
    not a folder. Top-level folders named in ``share`` (real folders, not links) are not copied:
    see :func:`shared_folders`.
    """
    src = Path(src)
    if not src.is_dir():
        raise UsageError(f"cannot make a workspace from {src}: not a folder")
    shared = tuple(
        (name, src.resolve() / name)
        for name in dict.fromkeys(share)
        if "/" not in name and name not in ("", ".", "..") and _real_dir(src / name)
    )
    if max_bytes is not None:
        size = tree_size(src, stop_above=max_bytes, skip=frozenset(n for n, _ in shared))
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
        copy_tree(src, workspace, skip=frozenset(n for n, _ in shared))
        for name, _ in shared:
            wsfs.make_dirs(workspace, name)  # the mount point
        if scrub_credentials:
            scrub_git_credentials(workspace)
        if shared:
            _SHARED[workspace.resolve()] = shared
        yield workspace
    finally:
        _SHARED.pop((holder / (src.resolve().name or "workspace")).resolve(), None)
        remove_tree(holder)


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def tree_size(root: Path, *, stop_above: int | None = None, skip: frozenset[str] = frozenset()) -> int:
    """Sum of the sizes of everything under ``root`` (symlinks not followed), the top-level
    entries named in ``skip`` left out.

    Stops early, returning a value above ``stop_above``, once that much has been counted.
    """
    total = 0
    top = os.fspath(root)
    stack = [top]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            if current == top and entry.name in skip:
                continue
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


def copy_tree(src: Path, dst: Path, *, skip: frozenset[str] = frozenset()) -> None:
    """Copy ``src`` to the new path ``dst`` preserving symlinks, modes and times (reflink if
    possible), leaving out the top-level entries named in ``skip``."""
    src, dst = Path(src), Path(dst)
    cp = shutil.which("cp") if sys.platform.startswith("linux") else None
    if cp is not None:
        if skip:
            # One cp for the kept entries into a folder made like src.
            sources = sorted(os.fspath(p) for p in src.iterdir() if p.name not in skip)
            dst.mkdir()
            done = subprocess.run(
                [cp, "-a", "--reflink=auto", "--", *sources, os.fspath(dst)] if sources else ["true"],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode == 0:
                shutil.copystat(src, dst, follow_symlinks=False)
                return
        else:
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
    shutil.copytree(src, dst, symlinks=True, ignore=lambda d, _: skip if Path(d) == src else ())


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s\"]+@")
_SECTION = re.compile(r"^\s*\[\s*(?P<name>[^\s\]\"]+)")


def scrub_git_credentials(workspace: Path) -> bool:
    """Remove credentials from ``workspace/.git/config``; return True if anything changed.

    Drops ``user:token@`` from every URL, every ``extraheader`` line (``http.extraheader`` carries
    ``Authorization:`` headers) and whole ``[credential ...]`` sections. A ``.git`` *file*
    (worktree or submodule) points outside the workspace, which the sandbox cannot see, so only a
    real ``.git`` folder is touched.
    """
    try:
        original = wsfs.read_text(
            workspace, ".git/config", limit=_GIT_CONFIG_LIMIT, whole=True, errors="surrogateescape"
        )
    except wsfs.TooLarge as exc:
        raise UsageError(f"cannot scrub credentials from {workspace}/.git/config: {exc}") from None
    except OSError:
        return False  # missing, a symlink, a .git file (worktree) or a FIFO: nothing to scrub
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
    wsfs.write_bytes(
        workspace, ".git/config", scrubbed.encode("utf-8", "surrogateescape"), make_parents=False
    )
    return True


def remove_tree(path: Path) -> None:
    """Delete ``path`` and everything in it, including read-only folders; missing is fine.

    No link is followed and modes are changed only through descriptors
    (:func:`runners.wsfs.remove_tree`): a tree the sandbox wrote cannot redirect the removal."""
    wsfs.remove_tree(Path(path))


@contextlib.contextmanager
def private_folder(root: Path | None = None) -> Iterator[Path]:
    """Yield a fresh folder of ARCS's own, outside every workspace, for one run's probes; delete it
    on exit.

    The sandbox sees it read-write at ``$ARCS_PRIVATE`` (:data:`runners.base.PRIVATE_ENV`): the
    hang probe and the spectrum tracer are written there instead of into the repository's tree, so
    the host never creates, chmods or cleans a path the repository controls. It lives next to the
    workspaces (``<root>/arcs-ws-<pid>-private-*``, 0755 in a 0700 root): a container engine sees
    it at the same path, and a killed process's leftovers go with the stale-workspace sweep.
    """
    base = default_root() if root is None else Path(root)
    if root is not None:
        base.mkdir(parents=True, exist_ok=True)
    sweep_stale(base)
    folder = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-private-", dir=base))
    try:
        # mkdtemp made it 0700 and ours: the sandbox user (another uid in setpriv mode) must be
        # able to reach the probes' subfolders.
        with wsfs.directory(folder) as fd:
            os.fchmod(fd, 0o755)
        yield folder
    finally:
        remove_tree(folder)


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
