"""Tier 0's dependency-update stage, in front of any proposer (issue #27, item 3).

:class:`DependencyUpdateProposer` wraps the proposer a tier would use and, in its first round
only, offers the migrations of the bumped dependencies' renamed, moved and re-keyworded API
(:mod:`jobs.repair.tier0.migrate`) to the repository's Python files, skipping what the loop
already tried; the loop verifies each like any candidate. When nothing is offered (or after the
first round) the wrapped proposer goes on. :func:`breaking_report` is the text of the one comment
ARCS leaves when no fix verified: which breaking changes hit this repository, where, and the
changelog line that says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from jobs.repair.budget import Budget
from jobs.repair.depupdate.context import DependencyChange
from jobs.repair.depupdate.hits import hits
from jobs.repair.model import Proposal
from jobs.repair.ports import ProposalRequest, Proposer, SourceView
from jobs.repair.tier0.migrate import MigrationCandidate, migration_candidates

MAX_REPORT_SITES = 5


class DependencyUpdateProposer:
    """See the module docstring."""

    def __init__(self, inner: Proposer, deps: Sequence[DependencyChange], *, limit: int = 6) -> None:
        self.inner = inner
        self.name = inner.name
        self.deps = tuple(deps)
        self.limit = limit
        self.offers: tuple[MigrationCandidate, ...] = ()
        self._offered = False

    def propose(self, request: ProposalRequest, remaining: Budget) -> list[Proposal]:
        """The migrations in the first round (when there are any), then ``inner``'s proposals."""
        if not self._offered:
            self._offered = True
            paths = [p for p in request.source.files() if p.endswith((".py", ".pyi"))]
            offers: list[MigrationCandidate] = []
            for dep in self.deps:
                versions = f"{dep.bump.old} -> {dep.bump.new}"
                offers += migration_candidates(
                    dep.bump.package, versions, dep.api, paths, request.source.read
                )
            self.offers = tuple(c for c in offers if c.proposal.key not in request.tried)[: self.limit]
            if self.offers:
                return [c.proposal for c in self.offers]
        return self.inner.propose(request, remaining)

    @property
    def last_errors(self) -> list[object]:
        """The wrapped proposer's ``last_errors`` (the migrations never call a model)."""
        return list(getattr(self.inner, "last_errors", None) or [])

    @property
    def last_budget_stop(self) -> str | None:
        """The wrapped proposer's ``last_budget_stop``."""
        stop = getattr(self.inner, "last_budget_stop", None)
        return stop if isinstance(stop, str) else None


def breaking_report(deps: Sequence[DependencyChange], source: SourceView) -> str:
    """Markdown naming the breaking changes that hit the repository ('' when none is known).
    The names come from the dependency's code and changelog: the caller renders it as text."""
    paths = [p for p in source.files() if p.endswith(".py")]
    out: list[str] = []
    for dep in deps:
        found = hits(dep.api, paths, source.read, dep.changelog)
        if not found:
            continue
        out.append(
            f"**{dep.bump.package} {dep.bump.old} -> {dep.bump.new}** breaks code this repository uses:"
        )
        for h in found:
            sites = ", ".join(f"`{p}:{line}`" for p, line in h.sites[:MAX_REPORT_SITES])
            more = len(h.sites) - MAX_REPORT_SITES
            out.append(f"- `{h.change.describe()}` at {sites}" + (f" and {more} more" if more > 0 else ""))
            out += [f"  - changelog: {line}" for line in h.changelog[:2]]
    return "\n".join(out)


__all__ = ["DependencyUpdateProposer", "breaking_report"]
