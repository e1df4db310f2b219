"""The one way the host touches a workspace (issue #22): no symlink followed, no block, no unbounded read.

A workspace is a tree an untrusted repository controls: the checkout it committed, and every copy
its ``setup:`` and tests ran in (they can leave symlinks, FIFOs, devices and huge files behind, and
replace any entry between two host operations of a run). The host often runs as root. So every
host-side read, write, chmod, unlink, mkdir or removal of a path inside a workspace goes through
this module, which

* resolves a workspace-relative path from a directory file descriptor of the workspace root, one
  component at a time (``openat`` with ``O_DIRECTORY | O_NOFOLLOW``): a symlink anywhere on the
  way, a ``..`` or an absolute path is refused with :class:`Refused`, checked at the moment of
  use (never once in advance: ``setup:`` can plant a link at run time);
* opens files ``O_NOFOLLOW | O_NONBLOCK`` and requires a regular file (``fstat``): a FIFO or a
  device never blocks the worker, a symlink to a host file is never read;
* reads at most a stated number of bytes (the head, or for logs the tail), or refuses a larger
  file with :class:`TooLarge`;
* writes atomically (a fresh ``O_EXCL`` temporary file, ``fchmod``, ``renameat`` over the name:
  a planted symlink is replaced, never written through);
* changes modes only through descriptors it opened without following links (``fchmod``), and
  removes trees descriptor by descriptor (a read-only folder is made writable through its own
  descriptor, never by name).

The root itself is trusted: ARCS made it (an ephemeral copy) or the operator named it; it is
opened once, following links, as the operator would expect.

It lives in ``runners`` (most of its users are runners: the workspace, the sandbox, execution)
as a stdlib-only leaf that ``indexing`` and the repair core (``jobs/repair/edits.py``) may import
too: the import contracts keep ``runners`` and ``indexing`` apart and the core pure, except for the
modules they list under ``leaves``, which must import only the standard library and have no effects.
``tests/test_workspace_io.py`` fails on any file operation in the product packages outside this
module that is not on its commented allowlist of non-workspace paths.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

__all__ = [
    "DEFAULT_LIMIT",
    "SOURCE_LIMIT",
    "Refused",
    "TooLarge",
    "chmod",
    "chown_tree",
    "directory",
    "entry_stat",
    "listdir",
    "make_dirs",
    "parts_of",
    "read_bytes",
    "read_text",
    "remove",
    "remove_tree",
    "rmdir",
    "text_or_none",
    "unlink",
    "write_bytes",
    "write_text",
]

DEFAULT_LIMIT = 1 << 20
"""What a read returns at most unless the caller states otherwise (1 MiB)."""
SOURCE_LIMIT = 16 << 20
"""The largest source or text file the host reads whole (16 MiB)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CHUNK = 1 << 16


class Refused(OSError):
    """A workspace entry the host will not touch: a symlink on the way, not a regular file (or not a
    folder), or a path that leaves the workspace. ``str()`` is one line naming the path and why."""

    def __init__(self, rel: str, why: str) -> None:
        super().__init__(errno.EPERM, f"{rel or '.'}: {why}")
        self.rel = rel
        self.why = why

    def __str__(self) -> str:
        return f"{self.rel or '.'}: {self.why}"


class TooLarge(OSError):
    """A file larger than the caller's limit where the whole file was asked for."""

    def __init__(self, rel: str, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"{rel}: {size} bytes, more than the {limit} bytes allowed")
        self.rel = rel
        self.size = size
        self.limit = limit

    def __str__(self) -> str:
        return f"{self.rel}: {self.size} bytes, more than the {self.limit} bytes allowed"


# ----------------------------------------------------------------------------------------- paths


def parts_of(rel: str | PurePosixPath) -> tuple[str, ...]:
    """The components of a workspace-relative path (``''`` and ``.`` dropped); :class:`Refused` for an
    absolute path, a ``..``, a NUL or a backslash."""
    text = str(rel)
    if "\0" in text or "\\" in text:
        raise Refused(text, "not a valid workspace path")
    if text.startswith("/"):
        raise Refused(text, "an absolute path, not a path inside the workspace")
    parts = tuple(p for p in text.split("/") if p not in ("", "."))
    if ".." in parts:
        raise Refused(text, "leaves the workspace ('..')")
    return parts


def _open_root(root: Path) -> int:
    return os.open(os.fspath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _why_not_dir(dirfd: int, name: str) -> str:
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except OSError:
        return "not a folder"
    return "a symlink (not followed)" if stat.S_ISLNK(st.st_mode) else "not a folder"


def _descend(dirfd: int, parts: tuple[str, ...], *, create: bool, mode: int) -> int:
    """A new descriptor of the folder ``parts`` below ``dirfd`` (which stays open)."""
    fd = os.dup(dirfd)
    try:
        for i, name in enumerate(parts):
            shown = "/".join(parts[: i + 1])
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, mode, dir_fd=fd)
                try:
                    nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                        raise Refused(shown, _why_not_dir(fd, name)) from None
                    raise
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                    raise Refused(shown, _why_not_dir(fd, name)) from None
                raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def directory(root: Path, rel: str = "", *, create: bool = False, mode: int = 0o755) -> Iterator[int]:
    """A descriptor of the folder ``rel`` of ``root`` (no link followed), closed on exit.

    ``create`` makes missing folders (``mode``, before the umask) on the way."""
    parts = parts_of(rel)
    top = _open_root(root)
    try:
        fd = _descend(top, parts, create=create, mode=mode)
    finally:
        os.close(top)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _parent(root: Path, rel: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
    parts = parts_of(rel)
    if not parts:
        raise Refused(rel, "names the workspace root itself, not an entry in it")
    with directory(root, "/".join(parts[:-1]), create=create) as fd:
        yield fd, parts[-1]


# ----------------------------------------------------------------------------------------- reading


def _open_file(dirfd: int, name: str, rel: str) -> tuple[int, os.stat_result]:
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dirfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(rel, "a symlink (not followed)") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise Refused(rel, kind)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _read_fd(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        try:
            chunk = os.read(fd, min(left, _CHUNK))
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_bytes(root: Path, rel: str, *, limit: int, tail: bool = False, whole: bool = False) -> bytes:
    """At most ``limit`` bytes of the regular file ``rel`` of ``root``: its head, or with ``tail``
    its last ``limit`` bytes. ``whole``: :class:`TooLarge` when the file holds more than ``limit``.

    Raises :class:`Refused` (symlink, FIFO, device, folder, escape), ``FileNotFoundError`` and other
    ``OSError``s; never blocks and never follows a link."""
    if limit < 0:
        raise ValueError("limit must be >= 0")
    with _parent(root, rel) as (dirfd, name):
        fd, st = _open_file(dirfd, name, rel)
    try:
        if whole and st.st_size > limit:
            raise TooLarge(rel, st.st_size, limit)
        if tail and st.st_size > limit:
            os.lseek(fd, st.st_size - limit, os.SEEK_SET)
        data = _read_fd(fd, limit + 1 if whole else limit)
    finally:
        os.close(fd)
    if whole and len(data) > limit:  # it grew after the fstat
        raise TooLarge(rel, len(data), limit)
    return data


def read_text(
    root: Path,
    rel: str,
    *,
    limit: int = DEFAULT_LIMIT,
    tail: bool = False,
    whole: bool = False,
    errors: str = "strict",
) -> str:
    """:func:`read_bytes` decoded as UTF-8 (``errors`` as for ``bytes.decode``)."""
    return read_bytes(root, rel, limit=limit, tail=tail, whole=whole).decode("utf-8", errors)


def text_or_none(root: Path, rel: str, *, limit: int = SOURCE_LIMIT) -> str | None:
    """The whole UTF-8 text of ``rel``, or None when it is missing, refused, larger than ``limit``,
    unreadable or not UTF-8 (for optional files such as ``package.json`` or ``setup.cfg``)."""
    try:
        return read_text(root, rel, limit=limit, whole=True)
    except (OSError, UnicodeDecodeError):
        return None


def entry_stat(root: Path, rel: str) -> os.stat_result | None:
    """``lstat`` of ``rel`` reached without following links; None when it (or a folder on the way)
    is missing or is a symlink."""
    try:
        with _parent(root, rel) as (dirfd, name):
            return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except OSError:
        return None


def listdir(root: Path, rel: str = "") -> list[str]:
    """The names in the folder ``rel`` (sorted; no link followed on the way)."""
    with directory(root, rel) as fd:
        return sorted(os.listdir(fd))  # noqa: PTH208 - a descriptor, not a path


# ----------------------------------------------------------------------------------------- writing


def write_bytes(
    root: Path, rel: str, data: bytes, *, mode: int | None = None, make_parents: bool = True
) -> None:
    """Replace ``rel`` with a regular file holding ``data``, atomically.

    ``mode``: the new file's permission bits; None keeps those of the regular file it replaces (a
    new file gets 0666 minus the umask, as ``open()`` gives). A symlink at ``rel`` is replaced
    (never written through); a folder there is an ``IsADirectoryError``. ``make_parents`` creates
    missing folders (0755 minus the umask)."""
    with _parent(root, rel, create=make_parents) as (dirfd, name):
        if mode is None:
            with contextlib.suppress(FileNotFoundError):
                old = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                mode = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else None
        tmp = f".{name[:200]}.arcs-{secrets.token_hex(6)}"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dirfd
        )
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if mode is not None:
                    os.fchmod(fd, mode)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dirfd)
            raise


def write_text(
    root: Path, rel: str, text: str, *, mode: int | None = None, make_parents: bool = True
) -> None:
    """:func:`write_bytes` of ``text`` encoded as UTF-8."""
    write_bytes(root, rel, text.encode("utf-8"), mode=mode, make_parents=make_parents)


def make_dirs(root: Path, rel: str, *, mode: int = 0o755) -> None:
    """Create the folder ``rel`` and its missing parents (no link followed; existing ones kept)."""
    with directory(root, rel, create=True, mode=mode):
        pass


def chmod(root: Path, rel: str, mode: int) -> None:
    """Set the permission bits of the file or folder ``rel`` through a descriptor opened without
    following links (:class:`Refused` for a symlink, FIFO or device)."""
    with _parent(root, rel) as (dirfd, name):
        try:
            fd = os.open(
                name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=dirfd
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Refused(rel, "a symlink (not followed)") from None
            raise
        try:
            st = os.fstat(fd)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                raise Refused(rel, "not a regular file or folder")
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


def unlink(root: Path, rel: str, *, missing_ok: bool = True) -> None:
    """Remove the file or symlink ``rel`` (the link itself, never its target)."""
    try:
        with _parent(root, rel) as (dirfd, name):
            os.unlink(name, dir_fd=dirfd)
    except FileNotFoundError:
        if not missing_ok:
            raise


def rmdir(root: Path, rel: str) -> None:
    """Remove the empty folder ``rel`` (``OSError`` when it is not empty or not a folder)."""
    with _parent(root, rel) as (dirfd, name):
        os.rmdir(name, dir_fd=dirfd)


def remove(root: Path, rel: str) -> None:
    """Remove ``rel`` whatever it is (a folder with everything in it); missing is fine."""
    try:
        with _parent(root, rel) as (dirfd, name):
            _remove_at(dirfd, name)
    except FileNotFoundError:
        pass


def remove_tree(path: Path) -> None:
    """Delete ``path`` and everything in it without following any link, including read-only folders;
    missing is fine. ``path``'s parent is trusted (ARCS's own folder); ``path`` itself may be a link
    (then only the link goes)."""
    path = Path(path)
    try:
        parent = _open_root(path.parent)
    except FileNotFoundError:
        return
    try:
        _remove_at(parent, path.name)
    finally:
        os.close(parent)


def _remove_at(parent: int, name: str) -> None:
    """Remove ``name`` in the folder ``parent``: iteratively (a deep tree cannot exhaust the stack),
    one descriptor per level, modes changed only through descriptors."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        _unlink_at(parent, name)
        return
    # (parent fd, name in it, own fd, entries left); the first parent is the caller's.
    stack: list[tuple[int, str, int, list[str]]] = []
    fd = _open_dir_for_removal(parent, name)
    stack.append((parent, name, fd, os.listdir(fd)))  # noqa: PTH208 - a descriptor
    try:
        while stack:
            up, here, fd, left = stack[-1]
            if not left:
                stack.pop()
                os.close(fd)
                _rmdir_at(up, here)
                continue
            child = left.pop()
            try:
                cst = os.stat(child, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(cst.st_mode):
                cfd = _open_dir_for_removal(fd, child)
                stack.append((fd, child, cfd, os.listdir(cfd)))  # noqa: PTH208 - a descriptor
            else:
                _unlink_at(fd, child)
    finally:
        for _up, _here, fd, _left in stack:
            with contextlib.suppress(OSError):
                os.close(fd)


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """``chown -hR uid:gid root``: every entry below ``root`` (trusted, as for every function here)
    reached descriptor by descriptor, links changed themselves and never followed."""
    top = _open_root(root)
    stack = [top]
    try:
        os.chown(top, uid, gid)
        while stack:
            fd = stack.pop()
            try:
                with os.scandir(fd) as entries:
                    names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
                for name, is_dir in names:
                    with contextlib.suppress(FileNotFoundError):
                        os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
                        if is_dir:
                            stack.append(os.open(name, _DIR_FLAGS, dir_fd=fd))
            finally:
                os.close(fd)
    finally:
        for fd in stack:
            os.close(fd)


def _unlink_at(dirfd: int, name: str) -> None:
    _remove_entry_at(dirfd, name, folder=False)


def _rmdir_at(dirfd: int, name: str) -> None:
    _remove_entry_at(dirfd, name, folder=True)


def _remove_entry_at(dirfd: int, name: str, *, folder: bool) -> None:
    remove = os.rmdir if folder else os.unlink
    try:
        remove(name, dir_fd=dirfd)
    except FileNotFoundError:
        pass
    except PermissionError:
        # The folder is read-only (``chmod -w`` by a test, git's objects): make it writable
        # through its own descriptor, then try again.
        os.fchmod(dirfd, stat.S_IRWXU)
        with contextlib.suppress(FileNotFoundError):
            remove(name, dir_fd=dirfd)


def _open_dir_for_removal(parent: int, name: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        pass
    # Not readable by this user (mode 000 left by a test): change its mode through an O_PATH
    # descriptor (the kernel's /proc/self/fd link names that very inode, not a path), then open.
    path_fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        os.chmod(f"/proc/self/fd/{path_fd}", stat.S_IRWXU)  # noqa: PTH101 - the inode of path_fd
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        if os.fstat(fd)[stat.ST_INO] != os.fstat(path_fd)[stat.ST_INO]:
            os.close(fd)
            raise Refused(name, "changed while it was being removed")
        return fd
    finally:
        os.close(path_fd)
