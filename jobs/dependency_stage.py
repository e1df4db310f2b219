"""The dependency-update stage of a repair (issue #27), as :func:`jobs.build.build` wires it.

:func:`prepare` (the engine, before the repair): the bumps in the change since the last green
commit (or the pull request's diff), and for each what changed in the dependency
(:func:`jobs.dependency_changes.what_changed`, through a fetch port: download and unpack on the
host, never build). ``arcs replay`` reads the same :class:`DependencyStage` back from the trace
(:meth:`DependencyStage.from_json`) and fetches nothing.

``fix``: :meth:`DependencyStage.proposer` puts the tier-0 migrations
(:class:`DependencyUpdateProposer`) before the change-first offers, and :meth:`DependencyStage.task`
gives the LLM tiers the fenced section. ``comment``: no candidate search (:class:`NoSearch`), the
report names what broke. ``off``: no stage at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jobs.dependency_changes import Fetch, bump_notices, checkout_bumps, what_changed
from jobs.render_depupdate import DependencyReport, Mode, dependency_markdown, dependency_title
from jobs.repair.budget import Budget
from jobs.repair.changes import ChangeSet
from jobs.repair.depupdate.context import DependencyChange, section, section_budget
from jobs.repair.depupdate.hits import Hit, hits
from jobs.repair.depupdate.record import MODES, DependencyUpdate, change_from_json, change_to_json
from jobs.repair.model import Edit, Proposal
from jobs.repair.ports import ProposalRequest, Proposer, SourceView
from jobs.repair.task import RepairTask
from jobs.repair.tier0.depupdate_stage import DependencyUpdateProposer, breaking_report
from jobs.repair.tier0.migrate import MigrationCandidate

CONTEXT_CHARS = 60_000
"""The LLM context the sections are budgeted against (``pack_context``'s default budget)."""
TRACE_KEY = "dependency_update"
"""Where the stage's record lives in the trace's ``repo`` part."""


class NoSearch:
    """``dependency_updates: comment``: the loop reproduces the failure and proposes nothing."""

    name = "dependency-comment"

    def __init__(self) -> None:
        self.last_errors: list[object] = []
        self.last_budget_stop: str | None = None

    def propose(self, request: ProposalRequest, remaining: Budget) -> list[Proposal]:
        """No candidates: the update is only commented on."""
        return []


@dataclass(frozen=True, slots=True)
class DependencyStage:
    """The bumps of one repair and what changed in each (see the module docstring)."""

    mode: Mode
    deps: tuple[DependencyChange, ...]

    def to_json(self) -> dict[str, Any]:
        """The trace's record (``repo["dependency_update"]``)."""
        return {"mode": self.mode, "deps": [change_to_json(d) for d in self.deps]}

    @classmethod
    def from_json(cls, data: object) -> DependencyStage | None:
        """The recorded stage (None: none recorded, or a record this version cannot read)."""
        if not isinstance(data, Mapping):
            return None
        mode = str(data.get("mode", "fix"))
        try:
            deps = tuple(change_from_json(d) for d in data.get("deps") or () if isinstance(d, Mapping))
        except (KeyError, ValueError):
            return None
        if mode not in MODES or mode == "off" or not deps:
            return None
        return cls(mode, deps)  # type: ignore[arg-type]  # checked just above

    def notices(self) -> list[str]:
        """Trace lines: one per bump, then what the mode does."""
        lines = bump_notices([d.bump for d in self.deps])
        lines += [f"dependency {d.bump.package}: {n}" for d in self.deps for n in d.notes]
        if self.mode == "comment":
            lines.append(
                "dependency_updates: comment: no candidate search, the breaking changes are reported"
            )
        return lines

    def proposer(self, inner: Proposer) -> Proposer:
        """What the loop asks: the migrations first (``fix``), or nothing at all (``comment``)."""
        if self.mode == "comment":
            return NoSearch()
        return DependencyUpdateProposer(inner, self.deps)

    def task(self, task: RepairTask, source: SourceView) -> RepairTask:
        """``task`` with the dependency changes for the LLM tiers' section (``fix`` only)."""
        if self.mode != "fix" or task.dependency_context:
            return task
        used = list(dict.fromkeys(h.change.qualified for found in self.hits(source).values() for h in found))
        each = section_budget(CONTEXT_CHARS) // len(self.deps)
        parts = [section(d, used=used, budget_chars=each) for d in self.deps]
        return replace(task, dependency_context="\n\n".join(p for p in parts if p))

    def hits(self, source: SourceView) -> dict[str, tuple[Hit, ...]]:
        """package -> the breaking changes the repository's Python files use."""
        paths = [p for p in source.files() if p.endswith(".py")]
        return {d.bump.package: tuple(hits(d.api, paths, source.read, d.changelog)) for d in self.deps}

    def report(
        self,
        source: SourceView,
        *,
        fixed: bool,
        edits: tuple[Edit, ...] = (),
        offers: tuple[MigrationCandidate, ...] = (),
    ) -> DependencyUpdate:
        """The report's record: the bumps, and the section the messages append."""
        migration = next((c for c in offers if fixed and tuple(c.proposal.edits) == tuple(edits)), None)
        rendered = DependencyReport(
            self.deps, mode=self.mode, fixed=fixed, migration=migration, hits=self.hits(source)
        )
        broke = "" if fixed else breaking_report(self.deps, source)
        return DependencyUpdate(
            bumps=tuple(d.bump for d in self.deps),
            mode=self.mode,
            title=dependency_title(rendered),
            markdown=dependency_markdown(rendered),
            breaking=broke,
        )


def prepare(changes: ChangeSet | None, repo: Path, mode: Mode, fetch: Fetch) -> DependencyStage | None:
    """The stage of a repair on ``repo`` (None: ``off``, no change known, or no bump in it)."""
    if mode == "off" or changes is None:
        return None
    bumps = checkout_bumps(changes, repo)
    if not bumps:
        return None
    return DependencyStage(mode, tuple(what_changed(b, fetch_root=fetch) for b in bumps))


__all__ = ["TRACE_KEY", "DependencyStage", "NoSearch", "prepare"]
