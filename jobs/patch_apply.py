"""A stored patch applied to the files it was made against (pure): what "Apply" publishes for a
partial fix ARCS found but did not open a pull request for (:mod:`jobs.commands`).

Strict, like ``git apply`` without fuzz: every context and removed line must be where the hunk
says, else :class:`PatchDoesNotApply` (the commit moved on, or the patch is not ARCS's); a path
outside the repository is refused. Lines the patch adds end with ``\\n``.
"""

from __future__ import annotations

from collections.abc import Callable

from jobs.render_checks import repo_path
from jobs.repair.diffing import FilePatch, parse_patch

__all__ = ["PatchDoesNotApply", "apply_file", "patched_files"]


class PatchDoesNotApply(ValueError):
    """The patch does not fit the files it is applied to (one line naming the file and line)."""


def apply_file(old: str, patch: FilePatch) -> str:
    """``old`` with ``patch``'s hunks applied (:class:`PatchDoesNotApply` when they do not fit)."""
    lines = old.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    for hunk in patch.hunks:
        # A hunk that removes nothing inserts after its old_start line; else it starts there.
        start = hunk.old_start if hunk.old_len == 0 else hunk.old_start - 1
        if start < pos or start > len(lines):
            raise PatchDoesNotApply(f"{patch.path}: a hunk at line {hunk.old_start} is out of place")
        out.extend(lines[pos:start])
        pos = start
        for line in hunk.lines:
            if line.kind == "+":
                out.append(line.text + "\n")
                continue
            if pos >= len(lines) or lines[pos].rstrip("\r\n") != line.text:
                raise PatchDoesNotApply(f"{patch.path}: line {pos + 1} is not what the patch expects")
            if line.kind == " ":
                out.append(lines[pos])
            pos += 1
    out.extend(lines[pos:])
    return "".join(out)


def patched_files(patch: str, read: Callable[[str], str | None]) -> dict[str, str | None]:
    """The new content of every file ``patch`` changes (``None``: deleted), reading the current
    content with ``read`` (``None``: absent). Renames delete the old path."""
    files: dict[str, str | None] = {}
    for file in parse_patch(patch):
        if file.binary:
            raise PatchDoesNotApply(f"{file.path}: a binary change cannot be applied")
        old_path = repo_path(file.old_path) if file.old_path is not None else None
        new_path = repo_path(file.new_path) if file.new_path is not None else None
        if (file.old_path is not None and old_path is None) or (
            file.new_path is not None and new_path is None
        ):
            raise PatchDoesNotApply(f"{file.path}: not a path inside the repository")
        old = read(old_path) if old_path is not None else None
        if old_path is not None and old is None:
            raise PatchDoesNotApply(f"{old_path}: the file does not exist")
        if new_path is None:
            files[str(old_path)] = None
            continue
        if old_path is None and read(new_path) is not None:
            raise PatchDoesNotApply(f"{new_path}: the file already exists")
        files[new_path] = apply_file(old or "", file)
        if old_path is not None and old_path != new_path:
            files[old_path] = None
    if not files:
        raise PatchDoesNotApply("the patch changes no file")
    return files
