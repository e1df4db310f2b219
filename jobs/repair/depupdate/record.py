"""The recorded values of the dependency-update stage (issue #27). Pure.

:func:`change_to_json` / :func:`change_from_json` keep what the stage computed for one bump
(:class:`DependencyChange`: the API difference, the changelog sections, the notes) in the trace, so
``arcs replay`` re-runs the stage from the record and never fetches a distribution.
:class:`DependencyUpdate` is the report's typed field: the bumps ``{ecosystem, package, old, new}``,
the ``.arcs.yml`` mode, and the rendered section the check run and the pull request body append.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobs.repair.depupdate.apidiff import ApiChange
from jobs.repair.depupdate.changelog import Section
from jobs.repair.depupdate.context import DependencyChange
from jobs.repair.depupdate.detect import Bump
from jobs.repair.trace_values import mapping, text

MODES = ("fix", "comment", "off")
MAX_MARKDOWN_CHARS = 12_500
_KINDS = (
    "removed",
    "renamed",
    "moved",
    "keyword_renamed",
    "keyword_removed",
    "required_added",
    "module_removed",
)


def change_to_json(dep: DependencyChange) -> dict[str, Any]:
    """The trace's record of one bump's :class:`DependencyChange`."""
    return {
        "bump": dep.bump.to_json(),
        "api": [c.to_json() for c in dep.api],
        "changelog": [
            {"version": s.version, "heading": s.heading, "lines": list(s.lines)} for s in dep.changelog
        ],
        "notes": list(dep.notes),
    }


def change_from_json(data: Mapping[str, Any]) -> DependencyChange:
    """Inverse of :func:`change_to_json` (ValueError for a record it cannot read)."""
    api: list[ApiChange] = []
    for c in data.get("api") or ():
        c = mapping(c)
        kind = str(c.get("kind", ""))
        if kind not in _KINDS:
            raise ValueError(f"unknown API change kind {kind!r}")
        api.append(
            ApiChange(
                kind=kind,  # type: ignore[arg-type]  # checked just above
                module=str(c.get("module", "")),
                name=str(c.get("name", "")),
                replacement=str(c.get("replacement", "")),
                keyword=str(c.get("keyword", "")),
                evidence=str(c.get("evidence", "")),
            )
        )
    sections = tuple(
        Section(
            str(mapping(s).get("version", "")),
            str(mapping(s).get("heading", "")),
            tuple(str(ln) for ln in mapping(s).get("lines") or ()),
        )
        for s in data.get("changelog") or ()
    )
    notes = tuple(str(n) for n in data.get("notes") or ())
    return DependencyChange(Bump.from_json(mapping(data.get("bump"))), tuple(api), sections, notes)


@dataclass(frozen=True, slots=True)
class DependencyUpdate:
    """The report's record of a dependency update (see the module docstring)."""

    bumps: tuple[Bump, ...]
    mode: str = "fix"
    """``.arcs.yml`` ``dependency_updates``: ``fix``, ``comment`` or ``off``."""
    title: str = ""
    """One line (``jobs.render_depupdate.dependency_title``)."""
    markdown: str = ""
    """The section the check-run summary and the pull request body append
    (``jobs.render_depupdate.dependency_markdown``; already defused and fenced)."""
    breaking: str = ""
    """``comment`` or no fix: what broke, where (``breaking_report``; '' when nothing known)."""

    def to_json(self) -> dict[str, Any]:
        """The stored shape."""
        return {
            "bumps": [b.to_json() for b in self.bumps],
            "mode": self.mode,
            "title": self.title,
            "markdown": self.markdown,
            "breaking": self.breaking,
        }

    @classmethod
    def read(cls, data: object) -> DependencyUpdate | None:
        """The record, or None (absent: a report from before #27, or no bump; unreadable bumps
        are skipped)."""
        d = mapping(data)
        bumps: list[Bump] = []
        for b in d.get("bumps") or ():
            try:
                bumps.append(Bump.from_json(mapping(b)))
            except (KeyError, ValueError):
                continue
        if not bumps:
            return None
        mode = text(d.get("mode"), 20)
        return cls(
            bumps=tuple(bumps),
            mode=mode if mode in MODES else "fix",
            title=text(d.get("title"), 300),
            markdown=text(d.get("markdown"), MAX_MARKDOWN_CHARS),
            breaking=text(d.get("breaking"), MAX_MARKDOWN_CHARS),
        )


__all__ = ["MODES", "DependencyUpdate", "change_from_json", "change_to_json"]
