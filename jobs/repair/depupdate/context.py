"""The "what changed in <package> old -> new" section for the LLM tiers (issue #27, item 3). Pure.

The API difference (:mod:`jobs.repair.depupdate.compare`) and the changelog section
(:mod:`jobs.repair.depupdate.changelog`) come from the dependency's own files, i.e. from whoever
published it: the text is sanitized and fenced as untrusted data, and budgeted. Within the budget:
the API changes that hit names the repository uses (or the failing frames name) first, then the
changelog lines that mention those names, then the other API changes, then the changelog's
other lines; what does not fit is counted.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from jobs.repair.depupdate.apidiff import ApiChange
from jobs.repair.depupdate.changelog import Section, mentioning
from jobs.repair.depupdate.detect import Bump
from jobs.repair.prompts import render
from jobs.repair.task import fence_untrusted, sanitize_untrusted

LABEL = "dependency-changes"
MAX_LINE_CHARS = 240
TAIL_RESERVE = 40
"""Room kept for the "[n more line(s) not shown]" marker."""
SHARE = 0.15
"""Share of a context budget the section may take."""


@dataclass(frozen=True, slots=True)
class DependencyChange:
    """What is known of one bump: its API difference and changelog sections."""

    bump: Bump
    api: tuple[ApiChange, ...] = ()
    changelog: tuple[Section, ...] = ()
    notes: tuple[str, ...] = field(default=())
    """Why something is missing ("sdist not found", …), for the report."""


def _safe(text: str) -> str:
    """A package name or version for the heading: registry-name characters only (it comes from a
    manifest anyone could have pushed)."""
    return re.sub(r"[^A-Za-z0-9@/._+!-]", "", text)[:100]


def _hits(change: ApiChange, used: Collection[str]) -> bool:
    last = change.name.split(".")[-1] if change.name else change.module.split(".")[-1]
    return change.qualified in used or last in used or change.module in used


def section(dep: DependencyChange, *, used: Collection[str] = (), budget_chars: int) -> str:
    """The rendered section within ``budget_chars`` ('' when nothing is known or nothing fits).
    ``used``: names (bare or dotted) the repository imports or the failure's frames mention."""
    b = dep.bump
    hit = [c for c in dep.api if _hits(c, used)]
    other = [c for c in dep.api if not _hits(c, used)]
    named = mentioning(dep.changelog, [c.name or c.module for c in hit] + list(used))
    rest = [f"{s.version}: {ln.strip()}" for s in dep.changelog for ln in s.lines if ln.strip()]
    groups: list[tuple[str, Sequence[str]]] = [
        ("API changes that hit names this repository uses:", [c.describe() for c in hit]),
        ("Changelog lines about them:", named),
        ("Other breaking API changes:", [c.describe() for c in other]),
        ("Changelog between the versions:", [ln for ln in rest if ln not in named]),
    ]
    heading = {
        "package": _safe(b.package),
        "old": _safe(b.old) or "(none)",
        "new": _safe(b.new) or "(removed)",
    }
    frame = render("dependency_section", changes="", **heading)
    room = budget_chars - len(frame)
    body: list[str] = []
    left = 0

    def fenced(lines: Sequence[str]) -> str:
        text = sanitize_untrusted("\n".join(lines), limit=max(room, 0))
        return fence_untrusted(LABEL, text)

    for title, lines in groups:
        if not lines:
            continue
        trial = [*body, title]
        shown = 0
        for line in lines:
            line = line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"
            if len(fenced([*trial, "- " + line])) > room - TAIL_RESERVE:
                break
            trial.append("- " + line)
            shown += 1
        if shown:
            body = trial
        left += len(lines) - shown
    if not body:
        return ""
    if left and len(fenced([*body, f"[{left} more line(s) not shown]"])) <= room:
        body.append(f"[{left} more line(s) not shown]")
    return render("dependency_section", changes=fenced(body), **heading)


def section_budget(context_chars: int) -> int:
    """The character budget of the section within a context of ``context_chars``."""
    return int(context_chars * SHARE)


__all__ = ["LABEL", "DependencyChange", "section", "section_budget"]
