"""Workflow commands ``arcs action`` prints: ``::error`` at the failing tests' lines and
``::notice`` at the patch's hunks, so the annotations show in the run's summary and on the
pull request's "Files changed" view (pure builders).

The places are the check run's (:mod:`jobs.render_checks`): the located failures of the
reproduction (:class:`jobs.repair.report.FailureSpot`, repository files only) and the hunks of the
proposed patch. Only repository-relative paths are printed (:func:`jobs.render_checks.repo_path`).

The text comes from the tests' output, which whoever wrote the tests controls: every value is
escaped as the runner unescapes it (GitHub's workflow-command rules: ``%`` ``\\r`` ``\\n`` in
the message; also ``:`` and ``,`` in a property), so a message can never end the line and start
a command of its own (``::set-output``, ``::add-mask::``, ``::stop-commands::``) nor add a property.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobs.render_checks import failure_annotations, patch_annotations

if TYPE_CHECKING:
    from bot.action.env import ActionEnv
    from bot.action.summary import ActionOutcome
    from jobs.repair.report import FailureSpot

MAX_ERROR_COMMANDS = 10
"""GitHub shows at most 10 ``error`` annotations per step (and 10 warnings, 10 notices); more are
dropped by the runner, so ARCS prints no more and says how many it left out."""
MAX_NOTICE_COMMANDS = 10
"""The same limit for ``notice`` annotations."""


def escape_data(text: str) -> str:
    """A command's message as the runner reads it back: ``%`` → ``%25``, ``\\r`` → ``%0D``,
    ``\\n`` → ``%0A``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property's value: :func:`escape_data`, and ``:`` → ``%3A``, ``,`` → ``%2C``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(kind: str, message: str, properties: Mapping[str, str | int] | None = None) -> str:
    """``::kind key=value,…::message`` on one line, every value escaped."""
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in (properties or {}).items())
    return f"::{kind}{' ' + props if props else ''}::{escape_data(message)}"


def scrub(text: str, roots: Sequence[str]) -> str:
    """``text`` with the absolute folders in ``roots`` (the workspace, the sandbox's) removed in
    front of the repository paths they hold."""
    for root in sorted({r.rstrip("/") for r in roots if r.strip("/")}, key=len, reverse=True):
        text = text.replace(root + "/", "")
    return text


def _annotation_commands(
    kind: str, annotations: Iterable[Mapping[str, Any]], roots: Sequence[str]
) -> list[str]:
    out = []
    for a in annotations:
        props: dict[str, str | int] = {"file": a["path"], "line": a["start_line"]}
        if a["end_line"] != a["start_line"]:
            props["endLine"] = a["end_line"]
        if a.get("title"):
            props["title"] = scrub(str(a["title"]), roots)
        out.append(workflow_command(kind, scrub(str(a["message"]), roots), props))
    return out


def failure_commands(spots: Iterable[FailureSpot], roots: Sequence[str] = ()) -> tuple[list[str], int]:
    """``::error`` at each failing test's line (at most :data:`MAX_ERROR_COMMANDS`) and how many
    places were left out."""
    found = _annotation_commands("error", failure_annotations(spots), roots)
    return found[:MAX_ERROR_COMMANDS], max(0, len(found) - MAX_ERROR_COMMANDS)


def patch_commands(diff: str) -> tuple[list[str], int]:
    """``::notice`` "ARCS changed this" at each hunk of the patch (on the failing commit's lines,
    at most :data:`MAX_NOTICE_COMMANDS`) and how many were left out."""
    found = _annotation_commands("notice", patch_annotations(diff), ())
    return found[:MAX_NOTICE_COMMANDS], max(0, len(found) - MAX_NOTICE_COMMANDS)


def step_commands(spots: Iterable[FailureSpot], diff: str, roots: Sequence[str] = ()) -> list[str]:
    """Every line to print: the errors, the notices, and a plain line for what the caps left out."""
    errors, more_errors = failure_commands(spots, roots)
    notices, more_notices = patch_commands(diff)
    lines = [*errors, *notices]
    if more_errors:
        lines.append(
            f"arcs: {more_errors} more failing test location(s) not annotated "
            f"(GitHub shows at most {MAX_ERROR_COMMANDS} error annotations per step; the job summary lists the tests)"
        )
    if more_notices:
        lines.append(
            f"arcs: {more_notices} more changed hunk(s) not annotated (the patch is in the job summary)"
        )
    return lines


def outcome_commands(env: ActionEnv, outcome: ActionOutcome) -> list[str]:
    """:func:`step_commands` of a run: its located failures and its patch; the workspace's,
    the runner's temporary and the sandbox's folders are cut from the messages."""
    from runners.execute import SANDBOX_ROOTS

    diff = outcome.summary.diff if outcome.summary is not None else ""
    roots = (*SANDBOX_ROOTS, str(env.workspace), str(env.runner_temp))
    return step_commands(outcome.failures, diff, roots)


__all__ = [
    "MAX_ERROR_COMMANDS",
    "MAX_NOTICE_COMMANDS",
    "escape_data",
    "escape_property",
    "failure_commands",
    "outcome_commands",
    "patch_commands",
    "scrub",
    "step_commands",
    "workflow_command",
]
