"""The "ARCS" check run's annotations and buttons, as pure functions (beside :mod:`jobs.render`,
which writes its title, summary and text).

Annotations point at code on the commit the check run is on:

* **failure** annotations at the lines where the failing tests failed
  (:class:`jobs.repair.report.FailureSpot`: file, line, test id, one-line message);
* **notice** annotations at each hunk of the proposed patch, "ARCS changed this". The check run
  sits on the red commit, not on the fix's branch, so a hunk is placed at the lines it replaces
  on that commit (the old side of the diff); the message names the new side's lines in the fix.
  A file the patch creates does not exist on that commit and gets no annotation.

Only repository-relative paths are ever sent (:func:`repo_path`): an absolute path (a sandbox or
host path), ``..``, a ``.git`` path or a backslash is dropped, never rewritten into a guess.

GitHub takes at most :data:`MAX_ANNOTATIONS_PER_REQUEST` annotations per create/update request and
appends the annotations of every request: :func:`annotation_batches` splits them (the gateway
sends the first batch with the update and the rest in follow-up updates), and
:data:`MAX_ANNOTATIONS` caps the total.

Buttons (``requested_action``, :func:`check_actions`): at most three per check run; GitHub limits
a label to 20 characters, a description to 40 and an identifier to 20. The identifiers are what
:mod:`bot.handlers.check_run_action` reads back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobs.render_text import one_line
from jobs.repair.diffing import parse_patch

if TYPE_CHECKING:
    from jobs.ports import AttemptView
    from jobs.repair.report import FailureSpot
    from jobs.summary import RepairSummary

__all__ = [
    "ACTIONS",
    "ACTION_APPLY",
    "ACTION_FIX",
    "ACTION_RERUN",
    "MAX_ANNOTATIONS",
    "MAX_ANNOTATIONS_PER_REQUEST",
    "annotation_batches",
    "attempt_buttons",
    "check_actions",
    "check_annotations",
    "failure_annotations",
    "patch_annotations",
    "repo_path",
]

MAX_ANNOTATIONS_PER_REQUEST = 50
"""GitHub's limit per check-run create/update request (the rest go in follow-up updates)."""
MAX_ANNOTATIONS = 150
"""The most annotations ARCS puts on one check run: three requests. Every batch is one more write
on the installation's rate limit and mutation lane, and past a few dozen the "Files changed"
view is noise; the summary and the pull request list everything."""
MAX_FAILURE_ANNOTATIONS = 50
"""Failing-test annotations come first but never take more than one request's worth, so the
patch's hunks still get theirs."""
MAX_MESSAGE_CHARS = 1000
MAX_TITLE_CHARS = 255

ACTION_RERUN = "arcs-rerun"
ACTION_APPLY = "arcs-apply"
ACTION_FIX = "arcs-fix"
ACTIONS: Mapping[str, tuple[str, str]] = {
    ACTION_RERUN: ("Re-run ARCS", "Start a new ARCS attempt here"),
    ACTION_APPLY: ("Apply", "Open a pull request with this patch"),
    ACTION_FIX: ("Fix with ARCS", "Ask ARCS to repair this failure"),
}
"""identifier -> (label, description), within GitHub's limits (20, 40 and 20 characters)."""


def repo_path(path: str) -> str | None:
    """``path`` when it is a plain repository-relative POSIX path, else None (absolute, a drive
    letter, ``..``, a ``.git`` path, a backslash or a NUL: never sent to GitHub)."""
    text = path.strip()
    if not text or "\\" in text or "\0" in text or text.startswith("/") or text[1:2] == ":":
        return None
    while text.startswith("./"):
        text = text[2:]
    parts = text.split("/")
    if any(part in ("", ".", "..") for part in parts) or parts[0] == ".git":
        return None
    return text


def _annotation(path: str, start: int, end: int, level: str, message: str, title: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": path,
        "start_line": start,
        "end_line": max(end, start),
        "annotation_level": level,
        "message": one_line(message, MAX_MESSAGE_CHARS) or "(no message)",
    }
    if title:
        out["title"] = one_line(title, MAX_TITLE_CHARS)
    return out


def failure_annotations(spots: Iterable[FailureSpot]) -> list[dict[str, Any]]:
    """A ``failure`` annotation at each failing test's line (test id as title), once per place."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, int, str]] = set()
    for spot in spots:
        path = repo_path(spot.path)
        if path is None or spot.line < 1 or (path, spot.line, spot.test_id) in seen:
            continue
        seen.add((path, spot.line, spot.test_id))
        message = spot.message or "failed"
        if spot.test_id:
            message = f"{spot.test_id} failed here: {message}"
        out.append(
            _annotation(path, spot.line, spot.line, "failure", message, spot.test_id or "Test failure")
        )
        if len(out) >= MAX_FAILURE_ANNOTATIONS:
            break
    return out


def patch_annotations(diff: str) -> list[dict[str, Any]]:
    """A ``notice`` annotation, "ARCS changed this", at each hunk of ``diff`` (see the module
    docstring: placed on the lines it replaces; new files and binary files are skipped)."""
    out: list[dict[str, Any]] = []
    for file in parse_patch(diff):
        if file.status == "added" or file.binary or file.old_path is None:
            continue
        path = repo_path(file.old_path)
        if path is None:
            continue
        for hunk in file.hunks:
            start = max(hunk.old_start, 1)
            end = max(hunk.old_start + hunk.old_len - 1, start)
            added = sum(1 for line in hunk.lines if line.kind == "+")
            removed = sum(1 for line in hunk.lines if line.kind == "-")
            if file.status == "deleted":
                where = "ARCS deletes this file"
            elif hunk.new_len:
                last = hunk.new_start + hunk.new_len - 1
                where = (
                    f"lines {hunk.new_start}-{last} in the fix"
                    if last > hunk.new_start
                    else (f"line {hunk.new_start} in the fix")
                )
            else:
                where = "removed in the fix"
            message = f"ARCS changed this ({where}; +{added} -{removed})."
            if file.status == "renamed" and file.new_path:
                message += f" The file becomes {file.new_path}."
            out.append(_annotation(path, start, end, "notice", message, "ARCS changed this"))
    return out


def check_annotations(summary: RepairSummary) -> list[dict[str, Any]]:
    """Every annotation of an attempt's check run: the failing tests' lines first, then the
    proposed patch's hunks, at most :data:`MAX_ANNOTATIONS`."""
    found = failure_annotations(summary.failure_spots) + patch_annotations(summary.diff)
    return found[:MAX_ANNOTATIONS]


def annotation_batches(annotations: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """``annotations`` (capped at :data:`MAX_ANNOTATIONS`) in requests of at most
    :data:`MAX_ANNOTATIONS_PER_REQUEST`; ``[]`` when there are none."""
    kept = list(annotations[:MAX_ANNOTATIONS])
    size = MAX_ANNOTATIONS_PER_REQUEST
    return [kept[i : i + size] for i in range(0, len(kept), size)]


def check_actions(*identifiers: str) -> list[dict[str, str]]:
    """The ``actions`` of a check run for ``identifiers`` (known ones, in order, at most three)."""
    out: list[dict[str, str]] = []
    for identifier in dict.fromkeys(identifiers):
        if identifier in ACTIONS and len(out) < 3:
            label, description = ACTIONS[identifier]
            out.append({"label": label, "description": description, "identifier": identifier})
    return out


def attempt_buttons(attempt: AttemptView) -> list[dict[str, str]]:
    """The buttons of an attempt's completed check run: "Re-run ARCS" where commands work (an
    attempt on a pull request), and "Apply" for a partial fix that opened no pull request. A click
    is a ``/arcs`` command by whoever clicked (the same permission rule)."""
    if attempt.issue_number is None or attempt.trigger == "issue":
        return []
    wanted = [ACTION_RERUN]
    if attempt.status == "partial" and attempt.patch and attempt.pr_number is None and not attempt.files:
        wanted.append(ACTION_APPLY)
    return check_actions(*wanted)
