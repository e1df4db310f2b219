"""Apply a proposal's structured edits to a workspace copy: validate everything, then write all or nothing.

Failures are data: :class:`EditError` carries a ``reason`` written for the model (it is fed back
verbatim), e.g. ``old text occurs 3 times in src/a.py; include more context to make it unique``.

Paths are canonicalized first (a symlinked folder inside the workspace resolves to its target, a
symlinked file is refused); every read and write then goes through :mod:`runners.wsfs`, so a
link planted on the canonical path by the time of use is refused, never followed.
"""

from __future__ import annotations

import difflib
import heapq
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from jobs.repair.diffing import DEFAULT_MODE, unified_diff
from jobs.repair.model import Edit
from runners import wsfs

MAX_FILE_BYTES = 2_000_000
"""Larger files are not edited (generated or data files; a model cannot have read them)."""
_SNIPPET_CHARS = 120
_ANCHORS = 20


class EditError(Exception):
    """An edit that cannot be applied.

    ``index`` is the 0-based position of the edit in the sequence; ``reason`` is a complete,
    model-facing sentence naming the path. ``str(error)`` is ``edit #N (PATH): REASON`` (1-based).
    """

    def __init__(self, index: int, path: str, reason: str) -> None:
        super().__init__(index, path, reason)
        self.index = index
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return f"edit #{self.index + 1} ({self.path}): {self.reason}"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One touched file: its text before and after (None = absent) and its git mode."""

    path: str
    before: str | None
    after: str | None
    mode: int = DEFAULT_MODE
    """``0o100644`` or ``0o100755`` (the file's mode before the change; new files are 644)."""


@dataclass(frozen=True, slots=True)
class AppliedEdits:
    """What :func:`apply_edits` changed, one entry per touched file, sorted by path.

    Files whose final text equals their original text (an edit undone by a later one) are
    not listed.
    """

    changes: tuple[FileChange, ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        """Touched paths, sorted."""
        return tuple(c.path for c in self.changes)

    @property
    def before(self) -> dict[str, str | None]:
        """Path -> original text (None for created files)."""
        return {c.path: c.before for c in self.changes}

    @property
    def after(self) -> dict[str, str | None]:
        """Path -> new text (None for deleted files)."""
        return {c.path: c.after for c in self.changes}

    @property
    def modes(self) -> dict[str, int]:
        """Path -> git file mode."""
        return {c.path: c.mode for c in self.changes}

    @property
    def empty(self) -> bool:
        """True when nothing changed."""
        return not self.changes

    def diff(self) -> str:
        """The git-style unified diff of the change (accepted by ``git apply``)."""
        return unified_diff(self.before, self.after, modes=self.modes)


@dataclass
class _FileState:
    rel: str
    target: Path
    existed: bool
    raw: bytes | None
    before: str | None
    text: str | None
    """Working text: "\n" line ends and always a final newline (when non-empty)."""
    newline: str = "\n"
    trailing_newline: bool = True
    st_mode: int | None = None
    last_index: int = 0
    created_dirs: list[Path] = field(default_factory=list)


def apply_edits(workspace: Path, edits: Sequence[Edit]) -> AppliedEdits:
    """Apply ``edits`` to the files under ``workspace``, all or nothing.

    Every edit is validated against the running (in-memory) result of the edits before it, so
    several edits to one file apply in sequence. Only when all are valid is anything written;
    if writing fails part-way, files already written are restored. Files keep their mode,
    newline style (LF / CRLF) and whether they end with a newline; created files end with one.

    Raises :class:`EditError` for the first invalid edit; the workspace is then unchanged.
    """
    root = workspace.resolve()
    states: dict[str, _FileState] = {}
    for index, edit in enumerate(edits):
        rel, target = _resolve(root, index, edit.path)
        state = states.get(rel)
        if state is None:
            state = _load(root, index, rel, target)
            states[rel] = state
        state.last_index = index
        _apply_one(index, edit, state, states)
    changes: list[FileChange] = []
    writes: list[tuple[_FileState, bytes | None]] = []
    for rel in sorted(states):
        state = states[rel]
        final = _finish_text(state)
        if final == state.before:
            continue
        data = None
        if final is not None:
            try:
                data = final.encode("utf-8")
            except UnicodeEncodeError:
                raise EditError(state.last_index, rel, f"new text for {rel} is not valid Unicode") from None
        mode = _git_mode(state.st_mode) if state.st_mode is not None else DEFAULT_MODE
        changes.append(FileChange(path=rel, before=state.before, after=final, mode=mode))
        writes.append((state, data))
    _commit(root, writes)
    return AppliedEdits(changes=tuple(changes))


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def _resolve(root: Path, index: int, raw: str) -> tuple[str, Path]:
    """Canonical workspace-relative path (symlinked directories resolved) and its absolute path."""
    shown = raw or "<empty>"
    if not raw or not raw.strip():
        raise EditError(index, shown, "empty path")
    if "\0" in raw or "\\" in raw:
        raise EditError(index, shown, f"invalid path {raw!r}; use forward slashes")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise EditError(
            index, raw, f"path escapes the workspace: {raw} is absolute; use a repository-relative path"
        )
    parts = [p for p in PurePosixPath(raw).parts if p not in ("", ".")]
    if not parts:
        raise EditError(index, raw, "empty path")
    if ".." in parts:
        raise EditError(index, raw, f"path escapes the workspace: {raw} contains '..'")
    _check_git_internals(index, raw, parts)
    target = root.joinpath(*parts)
    parent = target.parent.resolve()
    if not parent.is_relative_to(root):
        raise EditError(index, raw, f"path escapes the workspace: {raw} leads outside it through a symlink")
    if target.is_symlink():
        real = target.resolve()
        if not real.is_relative_to(root):
            raise EditError(index, raw, f"path escapes the workspace: {raw} is a symlink to outside it")
        inside = real.relative_to(root).as_posix()
        raise EditError(index, raw, f"{raw} is a symlink to {inside}; edit {inside} instead")
    canonical = (parent / target.name).relative_to(root)
    _check_git_internals(index, raw, canonical.parts)
    return canonical.as_posix(), root / canonical


def _check_git_internals(index: int, raw: str, parts: Sequence[str]) -> None:
    if any(p.lower() == ".git" for p in parts):
        raise EditError(index, raw, f"{raw} is inside .git; repository internals cannot be edited")


def _load(root: Path, index: int, rel: str, target: Path) -> _FileState:
    info = wsfs.entry_stat(root, rel)
    if info is None:
        return _FileState(rel=rel, target=target, existed=False, raw=None, before=None, text=None)
    if stat.S_ISDIR(info.st_mode):
        raise EditError(index, rel, f"{rel} is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise EditError(index, rel, f"{rel} is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise EditError(index, rel, f"{rel} is too large to edit ({info.st_size} bytes)")
    try:
        raw = wsfs.read_bytes(root, rel, limit=MAX_FILE_BYTES, whole=True)
    except wsfs.TooLarge as exc:
        raise EditError(index, rel, f"{rel} is too large to edit ({exc.size} bytes)") from None
    except wsfs.Refused as exc:
        raise EditError(index, rel, f"{rel} cannot be read: {exc.why}") from None
    except OSError as exc:
        raise EditError(index, rel, f"{rel} cannot be read: {exc.strerror}") from None
    if b"\0" in raw:
        raise EditError(index, rel, f"{rel} is a binary file; it cannot be edited")
    try:
        before = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise EditError(index, rel, f"{rel} is not UTF-8 text (binary file?); it cannot be edited") from None
    newline = _newline_style(before)
    return _FileState(
        rel=rel,
        target=target,
        existed=True,
        raw=raw,
        before=before,
        text=_working_text(before, newline),
        newline=newline,
        trailing_newline=before.endswith("\n") or not before,
        st_mode=info.st_mode,
    )


def _newline_style(text: str) -> str:
    crlf = text.count("\r\n")
    # Only a file that is CRLF throughout is converted; mixed files are matched byte for byte.
    return "\r\n" if crlf and crlf == text.count("\n") else "\n"


def _working_text(text: str, newline: str) -> str:
    if newline == "\r\n":
        text = text.replace("\r\n", "\n")
    if text and not text.endswith("\n"):
        text += "\n"  # lets `old` end with "\n" at a last line that has none; undone on write
    return text


def _finish_text(state: _FileState) -> str | None:
    text = state.text
    if text is None:
        return None
    if text and not text.endswith("\n"):
        text += "\n"
    if state.existed and not state.trailing_newline and text.endswith("\n"):
        text = text[:-1]
    if state.newline == "\r\n":
        text = text.replace("\n", "\r\n")
    return text


def _normalize_edit_text(text: str) -> str:
    return text.replace("\r\n", "\n")


def _apply_one(index: int, edit: Edit, state: _FileState, states: Mapping[str, _FileState]) -> None:
    rel = state.rel
    kind = edit.kind
    if kind == "create":
        if state.text is not None:
            raise EditError(index, rel, f"file exists: {rel}; use a replace or insert edit to change it")
        _check_parents(index, state, states)
        if state.raw is None:
            state.newline = _newline_style(edit.new)
        state.text = _working_text(_normalize_edit_text(edit.new), "\n")
        return
    if state.text is None:
        raise EditError(index, rel, f"file not found: {rel}")
    if kind == "delete_file":
        state.text = None
    elif kind == "replace":
        state.text = _replace(
            index, rel, state.text, _normalize_edit_text(edit.old), _normalize_edit_text(edit.new)
        )
    elif kind == "insert":
        state.text = _insert(index, rel, state.text, edit.line, _normalize_edit_text(edit.new))
    else:
        raise EditError(index, rel, f"unknown edit kind {kind!r}; use replace, create, insert or delete_file")


def _check_parents(index: int, state: _FileState, states: Mapping[str, _FileState]) -> None:
    rel = state.rel
    for other in states.values():
        if other.text is not None and rel.startswith(other.rel + "/"):
            raise EditError(index, rel, f"cannot create {rel}: {other.rel} is a file")
        if other.text is not None and other.rel.startswith(rel + "/"):
            raise EditError(index, rel, f"cannot create {rel}: it would be a directory")
    parent = state.target.parent
    while True:
        if parent.exists() and not parent.is_dir():
            raise EditError(index, rel, f"cannot create {rel}: a parent path is a file")
        if parent.exists():
            break
        parent = parent.parent


def _find_all(text: str, needle: str) -> list[int]:
    found, start = [], 0
    while (pos := text.find(needle, start)) != -1:
        found.append(pos)
        start = pos + 1  # overlapping occurrences count: the match must be unambiguous
    return found


def _replace(index: int, rel: str, text: str, old: str, new: str) -> str:
    if not old:
        raise EditError(index, rel, f"old text is empty in an edit of {rel}; use an insert edit to add text")
    if old == new:
        raise EditError(index, rel, f"old and new text are identical in an edit of {rel}; it changes nothing")
    positions = _find_all(text, old)
    if not positions:
        raise EditError(index, rel, f"old text not found in {rel}{_closest_hint(text, old)}")
    if len(positions) > 1:
        lines = ", ".join(str(text.count("\n", 0, p) + 1) for p in positions[:5])
        raise EditError(
            index,
            rel,
            f"old text occurs {len(positions)} times in {rel} (at lines {lines}); include more context to make it unique",
        )
    at = positions[0]
    return text[:at] + new + text[at + len(old) :]


def _insert(index: int, rel: str, text: str, line: int, new: str) -> str:
    if not new:
        raise EditError(index, rel, f"nothing to insert into {rel}: new text is empty")
    count = text.count("\n")
    if line < 0 or line > count:
        raise EditError(
            index, rel, f"line out of range: {rel} has {count} lines; insert after line 0..{count}"
        )
    offset = 0
    for _ in range(line):
        offset = text.index("\n", offset) + 1
    block = new if new.endswith("\n") else new + "\n"
    return text[:offset] + block + text[offset:]


def _closest_hint(text: str, old: str) -> str:
    """`` (closest match at line N: '...')`` naming the most similar region of the file."""
    file_lines = text.split("\n")
    old_lines = old.strip("\n").split("\n")
    anchor = next((ln.strip() for ln in old_lines if ln.strip()), "")
    if not anchor or not any(ln.strip() for ln in file_lines):
        return ""
    width = len(old_lines)
    # Rank lines by similarity to the first non-blank line of `old`, then score whole windows at
    # the best few positions (keeps this linear in the file size).
    top: list[tuple[float, int]] = []  # min-heap of (ratio, -line): the best _ANCHORS lines
    matcher = difflib.SequenceMatcher(None, "", "", autojunk=False)
    matcher.set_seq2(anchor)  # difflib caches facts about seq2; the file lines vary as seq1
    for n, ln in enumerate(file_lines):
        stripped = ln.strip()
        if not stripped:
            continue
        matcher.set_seq1(stripped)
        floor = top[0][0] if len(top) == _ANCHORS else 0.3
        if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
            continue
        ratio = matcher.ratio()
        if ratio < floor:
            continue
        item = (ratio, -n)
        if len(top) < _ANCHORS:
            heapq.heappush(top, item)
        else:
            heapq.heapreplace(top, item)
    if not top:
        return ""
    scored = [(ratio, -neg) for ratio, neg in top]
    offset = next(k for k, ln in enumerate(old_lines) if ln.strip())
    best_ratio, best_line = 0.0, -1
    for _, n in sorted(scored, key=lambda s: (-s[0], s[1])):
        start = max(0, n - offset)
        window = "\n".join(file_lines[start : start + width])
        ratio = difflib.SequenceMatcher(None, window, old.strip("\n"), autojunk=False).ratio()
        if ratio > best_ratio:
            best_ratio, best_line = ratio, start
    if best_ratio < 0.5 or best_line < 0:
        return ""
    window_lines = file_lines[best_line : best_line + width]
    shown = next((ln for ln in window_lines if ln.strip()), window_lines[0])
    if len(shown) > _SNIPPET_CHARS:
        shown = shown[:_SNIPPET_CHARS] + "..."
    note = ""
    if "".join("".join(window_lines).split()) == "".join(old.split()):
        note = "; it differs only in whitespace/indentation"
    return f" (closest match at line {best_line + 1}: {shown!r}{note})"


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def _git_mode(st_mode: int) -> int:
    return 0o100755 if st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH) else 0o100644


def _commit(root: Path, writes: Sequence[tuple[_FileState, bytes | None]]) -> None:
    undo: list[Callable[[], None]] = []
    state: _FileState | None = None
    try:
        for state, data in writes:
            undo.append(_write_one(root, state, data))
    except OSError as exc:
        for step in reversed(undo):
            try:
                step()
            except OSError:
                pass  # best effort: the workspace is ephemeral and will be discarded anyway
        assert state is not None
        raise EditError(
            state.last_index, state.rel, f"could not write {state.rel}: {exc.strerror or exc}"
        ) from exc


def _write_one(root: Path, state: _FileState, data: bytes | None) -> Callable[[], None]:
    """Write one file; return the action that restores what was there. Cleans up after itself on failure."""
    rel, raw, st_mode = state.rel, state.raw, state.st_mode
    if data is None:
        wsfs.unlink(root, rel, missing_ok=False)
        return lambda: _restore(root, rel, raw, st_mode)
    created = _make_parents(root, rel)
    if raw is None:
        try:
            wsfs.write_bytes(root, rel, data, make_parents=False)
        except BaseException:
            _remove(root, rel, created)
            raise
        return lambda: _remove(root, rel, created)
    wsfs.write_bytes(root, rel, data, mode=stat.S_IMODE(st_mode) if st_mode is not None else None)
    return lambda: _restore(root, rel, raw, st_mode)


def _make_parents(root: Path, rel: str) -> list[str]:
    """Create the missing folders of ``rel``; return them, innermost first."""
    parts = PurePosixPath(rel).parts[:-1]
    missing: list[str] = []
    for i in range(len(parts), 0, -1):
        folder = "/".join(parts[:i])
        if wsfs.entry_stat(root, folder) is not None:
            break
        missing.append(folder)
    if missing:
        wsfs.make_dirs(root, missing[0], mode=0o777)  # minus the umask, as Path.mkdir()
    return missing


def _restore(root: Path, rel: str, raw: bytes | None, st_mode: int | None) -> None:
    if raw is None:
        return
    wsfs.write_bytes(root, rel, raw, mode=stat.S_IMODE(st_mode) if st_mode is not None else None)


def _remove(root: Path, rel: str, created: list[str]) -> None:
    wsfs.unlink(root, rel)
    for folder in created:  # innermost first
        try:
            wsfs.rmdir(root, folder)
        except OSError:
            break  # not empty: another new file of this batch lives there; its own undo runs later
