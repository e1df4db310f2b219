"""Which files of a repository get indexed, and reading them safely.

Discovery asks git (tracked files plus untracked files that are not ignored, so a dirty working tree and
nested ``.gitignore`` files are handled exactly as git does), then drops what is not worth indexing:
caller exclusions, symlinks, deleted files, oversized, binary, generated and minified files, and files
whose language is unknown. Repositories are untrusted input: nothing here follows a symlink, waits
on a FIFO or reads a file whole (every read goes through :mod:`runners.wsfs`, with a size cap).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pathspec

# is_test_path lives in the pure indexing.languages (the repair core uses it); re-exported here.
from indexing.languages import is_test_path, language_for_path
from runners import wsfs

__all__ = [
    "BINARY_SNIFF_BYTES",
    "MINIFIED_LINE_CHARS",
    "discover_files",
    "is_generated",
    "is_indexable",
    "is_minified",
    "is_test_path",
    "read_text",
]

BINARY_SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes marks a file as binary."""
GENERATED_MARKER_LINES = 5
MINIFIED_SNIFF_BYTES = 64 * 1024
MINIFIED_LINE_CHARS = 1000
"""A line longer than this (in the first 64 KiB) marks a file as minified."""

# "@generated" (Facebook/Buck convention) and Go's "Code generated ... DO NOT EDIT." (which also
# covers protoc, stringer, mockgen… headers).
_GENERATED = re.compile(r"@generated\b|DO NOT EDIT")
# Prose may legitimately put a whole paragraph on one line; the minified check is for code/data.
_PROSE_LANGUAGES = frozenset({"markdown", "rst"})
_PROSE_SUFFIXES = (".txt", ".text", ".adoc", ".asciidoc", ".org", ".tex")
_VCS_DIRS = frozenset({".git", ".hg", ".svn"})
_GIT_TIMEOUT_S = 120
READ_LIMIT = 16 << 20
"""The largest file :func:`read_text` returns (larger: None); discovery's own cap is lower."""
_GITIGNORE_LIMIT = 1 << 20


def discover_files(
    repo_root: Path,
    *,
    exclude: Sequence[str] = (),
    max_file_bytes: int = 1_000_000,
) -> list[str]:
    """Repository-relative POSIX paths of the indexable files under ``repo_root``, sorted.

    ``exclude`` holds gitignore-style patterns (``node_modules/``, ``*.min.js``, ``!keep.js``) applied on
    top of the repository's own ignore rules. Outside a git work tree the directory is walked instead,
    honouring the ``.gitignore`` files found on the way.
    """
    root = Path(repo_root)
    listed = _git_ls_files(root)
    candidates = listed if listed is not None else list(_walk_files(root))
    spec = pathspec.GitIgnoreSpec.from_lines(exclude) if exclude else None
    found: list[str] = []
    for rel in sorted(set(candidates)):
        language = language_for_path(rel)
        if language is None:
            continue
        if spec is not None and spec.match_file(rel):
            continue
        if _indexable(root, rel, language, max_file_bytes):
            found.append(rel)
    return found


def read_text(repo_root: Path, rel: str, *, limit: int = READ_LIMIT) -> str | None:
    """The UTF-8 text of ``repo_root/rel`` (a leading BOM removed), or ``None``.

    ``None`` when the file is missing, unreadable, a symlink (or below one), not a regular file,
    outside the repository, larger than ``limit``, binary or not valid UTF-8. Never raises for such
    files; the caller decides whether to warn.
    """
    data = _read_bytes(Path(repo_root), rel, limit=limit)
    if data is None:
        return None
    return _decode(data)


def is_generated(text: str) -> bool:
    """True when one of the first lines carries a "generated, do not edit" marker."""
    head = text.split("\n", GENERATED_MARKER_LINES)[:GENERATED_MARKER_LINES]
    return any(_GENERATED.search(line) for line in head)


def is_minified(text: str) -> bool:
    """True when a line in the first 64 KiB is longer than :data:`MINIFIED_LINE_CHARS`."""
    head = text[:MINIFIED_SNIFF_BYTES]
    return any(len(line) > MINIFIED_LINE_CHARS for line in head.split("\n"))


# ----------------------------------------------------------------------------------------- internals


def _git_ls_files(root: Path) -> list[str] | None:
    """Tracked + untracked-not-ignored files, or None when ``root`` is not a usable git work tree."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=False,
            timeout=_GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    paths: list[str] = []
    for raw in done.stdout.split(b"\0"):
        if not raw:
            continue
        try:
            paths.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            continue  # a non-UTF-8 file name cannot be stored as a str path portably; skip it
    return paths


def _walk_files(root: Path) -> Iterator[str]:
    """Files under ``root`` (no symlinks followed), honouring nested ``.gitignore`` files."""
    # Each directory's rules apply to paths relative to that directory, as git does.
    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []

    def ignored(rel: str, is_dir: bool) -> bool:
        probe = rel + "/" if is_dir else rel
        for base, spec in specs:
            if base and not probe.startswith(base + "/"):
                continue
            sub = probe[len(base) + 1 :] if base else probe
            if spec.match_file(sub):
                return True
        return False

    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        # Drop rules from directories we have left (os.walk is depth-first, top-down).
        specs[:] = [(b, s) for b, s in specs if not b or rel_dir == b or rel_dir.startswith(b + "/")]
        if ".gitignore" in filenames:
            lines = _read_lines(root, _join(rel_dir, ".gitignore"))
            if lines:
                specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
        dirnames[:] = sorted(
            d for d in dirnames if d not in _VCS_DIRS and not ignored(_join(rel_dir, d), True)
        )
        for name in sorted(filenames):
            rel = _join(rel_dir, name)
            if not ignored(rel, False):
                yield rel


def _join(base: str, name: str) -> str:
    return f"{base}/{name}" if base else name


def _read_lines(root: Path, rel: str) -> list[str]:
    try:
        return wsfs.read_text(root, rel, limit=_GITIGNORE_LIMIT, errors="replace").splitlines()
    except OSError:
        return []


def _indexable(root: Path, rel: str, language: str, max_file_bytes: int) -> bool:
    st = wsfs.entry_stat(root, rel)
    if st is None:
        return False  # deleted from the work tree, unreadable, or below a symlink
    if not stat.S_ISREG(st.st_mode) or st.st_size > max_file_bytes:
        return False  # symlinks, submodules (directories), sockets…; oversized files
    data = _read_bytes(root, rel, limit=max_file_bytes)
    if data is None:
        return False
    text = _decode(data)
    if text is None or is_generated(text):
        return False
    prose = language in _PROSE_LANGUAGES or rel.lower().endswith(_PROSE_SUFFIXES)
    return prose or not is_minified(text)


def _read_bytes(root: Path, rel: str, *, limit: int) -> bytes | None:
    """The whole regular file ``rel`` of ``root`` when at most ``limit`` bytes; None for links (at
    any component), FIFOs, escapes, larger files and I/O errors."""
    try:
        return wsfs.read_bytes(root, rel, limit=limit, whole=True)
    except OSError:
        return None


def _decode(data: bytes) -> str | None:
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.removeprefix("\ufeff")


def is_indexable(
    repo_root: Path,
    rel: str,
    *,
    exclude: Sequence[str] = (),
    max_file_bytes: int = 1_000_000,
) -> bool:
    """Whether :func:`discover_files` would list ``rel`` -- for one path, without listing the tree.

    Applies the same language, exclusion, symlink, size, binary, generated and minified checks. It
    does not consult the repository's ignore rules: the caller passes paths git reported (tracked,
    or untracked and not ignored).
    """
    rel = rel.replace("\\", "/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in rel.split("/")):
        return False
    if any(p in _VCS_DIRS for p in rel.split("/")[:-1]):
        return False
    language = language_for_path(rel)
    if language is None:
        return False
    if exclude and pathspec.GitIgnoreSpec.from_lines(exclude).match_file(rel):
        return False
    return _indexable(Path(repo_root), rel, language, max_file_bytes)
