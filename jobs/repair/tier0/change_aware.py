"""Tier 0's change-aware first offers, in front of any proposer.

:class:`ChangeAwareProposer` wraps the proposer a tier would use (templates, the LLM) and, in its
first round only, offers before it:

1. the formatter/linter autofix (:mod:`jobs.repair.tier0.autofix`) when the failing command is a
   check the table knows: zero LLM, the fix verified by the check itself before it is offered;
2. revert candidates of the change since the last green run (:mod:`jobs.repair.tier0.reverts`),
   the culprit commit's first: with several commits and a ``find_culprit`` port (a bisection on
   the reproduced failing targets, run by the application before the candidates are made, unless
   the autofix already fixed the check), the commit it names; else the newest commit whose added
   lines sit at a failing frame. The rest are ranked by the reproduced failures' frames.

The loop verifies every offer like any candidate. What the autofix did is kept in
:attr:`ChangeAwareProposer.autofix_result` for the trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jobs.repair.budget import Budget
from jobs.repair.changes import ChangeSet
from jobs.repair.model import Edit, Proposal
from jobs.repair.ports import ProposalRequest, Proposer
from jobs.repair.tier0.autofix import AutofixResult, CommandBench, autofix
from jobs.repair.tier0.formatters import autofix_plan
from jobs.repair.tier0.reverts import RevertCandidate, RevertTree, revert_candidates

FindCulprit = Callable[[tuple[str, ...]], str | None]
"""The failing targets (empty: the whole command) -> the first bad commit of the change, or None."""

AUTOFIX_CLASSES = frozenset({"lint", "build", "unknown", ""})
"""Failure classes whose failing command may be a formatter check (a log without a class too)."""


class ChangeAwareProposer:
    """See the module docstring. ``bench`` None: no autofix; ``changes`` None: no reverts."""

    def __init__(
        self,
        inner: Proposer,
        *,
        check: str,
        bench: CommandBench | None = None,
        changes: ChangeSet | None = None,
        reverts: int = 4,
        autofix_runs: int = 4,
        timeout_s: float = 300.0,
        find_culprit: FindCulprit | None = None,
        revert_tree: RevertTree | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.check = check
        self.bench = bench
        self.changes = changes
        self.reverts = reverts
        self.autofix_runs = autofix_runs
        self.timeout_s = timeout_s
        self.autofix_result: AutofixResult | None = None
        self.revert_offers: tuple[RevertCandidate, ...] = ()
        self.find_culprit = find_culprit
        self.revert_tree = revert_tree
        """A three-way revert of a commit on the head tree (the application's git), for a
        culprit whose hunks no longer apply; None: none."""
        self.culprit = ""
        """The commit ``find_culprit`` named before the reverts were ranked ('' when none)."""
        self._offered = False

    def propose(self, request: ProposalRequest, remaining: Budget) -> list[Proposal]:
        """The first offers in the first round (nothing else then, when there are any), then ``inner``'s."""
        if not self._offered:
            self._offered = True
            first = self._first(request)
            if first:
                return first
        return self.inner.propose(request, remaining)

    # The loop reads these of the proposer after a round (model errors, a budget stop): the
    # wrapped proposer's, since the first offers never call a model.
    @property
    def last_errors(self) -> list[object]:
        """The wrapped proposer's ``last_errors`` (none of its own; the loop looks for LLM errors)."""
        return list(getattr(self.inner, "last_errors", None) or [])

    @property
    def last_budget_stop(self) -> str | None:
        """The wrapped proposer's ``last_budget_stop``."""
        stop = getattr(self.inner, "last_budget_stop", None)
        return stop if isinstance(stop, str) else None

    def revert_of(self, edits: Sequence[Edit]) -> RevertCandidate | None:
        """The revert offer whose edits are ``edits`` (the loop's winning patch), or None."""
        key = Proposal(edits=tuple(edits)).key
        return next((c for c in self.revert_offers if c.proposal.key == key), None)

    def _first(self, request: ProposalRequest) -> list[Proposal]:
        offers: list[Proposal] = []
        if (
            self.bench is not None
            and request.task.failure_class in AUTOFIX_CLASSES
            and autofix_plan(self.check) is not None
        ):
            files = self.changes.paths if self.changes is not None else None
            self.autofix_result = autofix(
                self.bench,
                self.check,
                changed_files=files,
                timeout_s=self.timeout_s,
                max_runs=self.autofix_runs,
            )
            proposal = self.autofix_result.proposal()
            if proposal is not None and self.autofix_result.fixed:
                offers.append(proposal)
        if self.changes is not None and self.reverts > 0:
            fixed = self.autofix_result is not None and self.autofix_result.fixed
            if self.find_culprit is not None and len(self.changes.commits) > 1 and not fixed:
                targets = tuple(dict.fromkeys(f.test_id for f in request.task.failures if f.test_id))
                self.culprit = self.find_culprit(targets) or ""
            self.revert_offers = tuple(
                c
                for c in revert_candidates(
                    self.changes,
                    request.task.failures,
                    read=request.source.read,
                    limit=self.reverts,
                    culprit=self.culprit,
                    fallback=self.revert_tree,
                )
                if c.proposal.key not in request.tried
            )
            offers += [c.proposal for c in self.revert_offers]
        return offers


__all__ = ["AUTOFIX_CLASSES", "ChangeAwareProposer", "FindCulprit"]
