"""Keep the bump: a revert that only puts back a detected bump's old versions is not a repair
(issue #27: "never a revert of the bump unless configured"). Pure.

A red dependency update is the change since the last green commit; tier 0's revert candidates
would offer to undo it, and that candidate passes (the old versions were green), so it would be
the "fix" every time. :func:`reverts_only_bump` recognises such an edit list: it touches only
manifest/lock files, and every version it moves goes back across a bump found in the change.
A revert that also changes code, or a manifest edit that moves no version, is not one. A lock
file's lines that no reader takes as the installed version (package-lock's own ``packages[""]``
specifiers) count when the edit changes nothing but bumped versions back, token for token.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from difflib import SequenceMatcher

from jobs.repair.depupdate.detect import Bump, detect_bumps, is_manifest, version_key
from jobs.repair.model import Edit


def _apply(text: str | None, edit: Edit) -> tuple[bool, str | None]:
    """``(ok, text after edit)``; not ok when the edit cannot apply (it would fail its preview)."""
    if edit.kind == "create":
        return text is None, edit.new
    if edit.kind == "delete_file":
        return text is not None, None
    if text is None:
        return False, None
    if edit.kind == "replace":
        if text.count(edit.old) != 1:
            return False, text
        return True, text.replace(edit.old, edit.new, 1)
    lines = text.splitlines(keepends=True)  # insert: after line `line`
    if not 0 <= edit.line <= len(lines):
        return False, text
    new = edit.new if edit.new.endswith("\n") or not edit.new else edit.new + "\n"
    return True, "".join(lines[: edit.line]) + new + "".join(lines[edit.line :])


def _direction(old: str, new: str) -> int:
    """+1 up (or added), -1 down (or removed), 0 unchanged or not comparable."""
    if not old or not new:
        return (1 if new else -1) if old != new else 0
    a, b = version_key(old), version_key(new)
    return (a < b) - (a > b)


def _undoes(moved: Bump, bumps: Iterable[Bump]) -> bool:
    """``moved`` (a change the revert makes) goes back across one of ``bumps``: the same package,
    the opposite direction. A manifest's specifier (``^2.0.0``) and the lock's exact version
    (``2.0.1``) of one bump differ, so the direction is compared, not the strings."""
    step = _direction(moved.old, moved.new)
    return step != 0 and any(
        b.ecosystem == moved.ecosystem and b.package == moved.package and _direction(b.old, b.new) == -step
        for b in bumps
    )


_TOKEN = re.compile(r"[\w.+-]+|\S")


def _versions_back(edit: Edit, bumps: Iterable[Bump]) -> bool:
    """A ``replace`` whose only differences are tokens of a bump's new version turned into its
    old one (at least one); whitespace and layout do not count as differences."""
    back = {(b.new, b.old) for b in bumps if b.old and b.new}
    if edit.kind != "replace":
        return False
    head, after = _TOKEN.findall(edit.old), _TOKEN.findall(edit.new)
    ops = [op for op in SequenceMatcher(None, head, after, autojunk=False).get_opcodes() if op[0] != "equal"]
    return bool(ops) and all(
        tag == "replace"
        and i2 - i1 == j2 - j1
        and all(pair in back for pair in zip(head[i1:i2], after[j1:j2], strict=True))
        for tag, i1, i2, j1, j2 in ops
    )


def reverts_only_bump(
    edits: Sequence[Edit], bumps: Sequence[Bump], read: Callable[[str], str | None]
) -> bool:
    """True when ``edits`` (a revert candidate's, on the head tree ``read`` gives) change nothing
    but manifest/lock files and each package version they change goes back across one of
    ``bumps`` (at least one does). False for no bumps, an edit elsewhere, an edit that would not
    apply, or manifest edits that move no version (unless they only turn bumped versions back,
    :func:`_versions_back`)."""
    if not edits or not bumps:
        return False
    after: dict[str, str | None] = {}
    for edit in edits:
        if not is_manifest(edit.path):
            return False
        ok, text = _apply(after[edit.path] if edit.path in after else read(edit.path), edit)
        if not ok:
            return False
        after[edit.path] = text
    moved = detect_bumps({path: (read(path), text) for path, text in after.items()})
    if moved:
        return all(_undoes(m, bumps) for m in moved)
    return all(_versions_back(edit, bumps) for edit in edits)


__all__ = ["reverts_only_bump"]
