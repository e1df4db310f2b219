"""The state of one repair run, as separate values with one owner each.

- :class:`Baseline`: what reproduction established (the base run, the targets, what passed and
  failed before the change, a synthesized reproduction test); set once, then read. Its methods
  judge a later run against it (targets gate, fixed targets, new failures, regressions, score).
- :class:`SearchState`: the candidates tried so far (history, dedup keys, scores, best-so-far,
  the knowledge soup, the batch in flight).
- :class:`Acceptance`: how the search ends (accepted/reverted candidate, quality rejections, the
  verification record, what stopped it, an interrupt).
- :class:`RunState` bundles them with the task, the trace, the
  :class:`~jobs.repair.meter.BudgetMeter` and the failing tests' call path (once localized).

Also the test-id matching rules shared by the loop's modules.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from jobs.repair.diffing import normalize_patch
from jobs.repair.edits import AppliedEdits
from jobs.repair.gates import regression_gate, targets_gate
from jobs.repair.judge import KnownGood, Standing
from jobs.repair.judge import proven_failing as proven_failing
from jobs.repair.meter import BudgetMeter
from jobs.repair.model import Edit, Evidence, Feedback, GateResult, Usage
from jobs.repair.select import CandidateScore, best_so_far, select_best
from jobs.repair.spectrum import Localization
from jobs.repair.task import RepairTask
from jobs.repair.trace import CandidateRecord, Trace, usage_to_json
from jobs.repair.workbench import RUN_ERROR_PREFIX, CandidateRun, TestOutcome

# --- candidates --------------------------------------------------------------------------------------


@dataclass
class Scored:
    """An executed (or statically rejected) candidate with its score."""

    record: CandidateRecord
    score: CandidateScore
    outcome: TestOutcome | None
    """The most complete run (full suite when it ran, else the targets run)."""


@dataclass
class Pending:
    """A candidate of the batch in flight: applied and gated, its target run not yet judged."""

    cand: CandidateRecord
    applied: AppliedEdits
    order: int
    first: TestOutcome | None = None
    stopped: str = ""


# --- baseline ----------------------------------------------------------------------------------------


@dataclass
class Baseline:
    """What the reproduction established; the yardstick of every later run."""

    outcome: TestOutcome | None = None
    """The base run (None until it ran)."""
    targets: tuple[str, ...] = ()
    passed: frozenset[str] = frozenset()
    """Passed on the base code (flaky tests left out)."""
    errors: frozenset[str] = frozenset()
    failing: frozenset[str] = frozenset()
    """Every test the (fail-fast-free) baseline saw fail: proven failing before the change."""
    synthesized: bool = False
    """The targets come from a reproduction test the Test Designer wrote."""
    tests_text: str = ""
    """Source of the target tests (for the quality checker)."""
    extra_edits: tuple[Edit, ...] = ()
    """Edits every candidate carries first (the synthesized test)."""
    reference_s: float | None = None
    """Duration the later runs' timeout is derived from (None: no run completed yet)."""
    known_good: KnownGood | None = None
    """The known-good baseline (the last green commit's run of the failing tests): only failures
    proven there may remain in a ``partial`` verdict. None: every failing test is a target."""

    def targets_gate(self, outcome: TestOutcome, targets: Sequence[str] | None = None) -> GateResult:
        """The targets gate of ``outcome`` for ``targets`` (default: all of them)."""
        targets = self.targets if targets is None else targets
        passed = list(outcome.passed)
        # A run-level error target ("<run>", a collection error) is fixed when it is gone and the run
        # either reported tests or, for a command whose output names no tests, exited 0.
        if not outcome.timed_out and (outcome.ran or (outcome.exit_code == 0 and not outcome.errors)):
            passed.extend(t for t in targets if t in self.errors and t not in outcome.errors)
        return targets_gate(targets, passed, (*outcome.failed, *outcome.errors))

    def fixed_targets(self, outcome: TestOutcome) -> frozenset[str]:
        """The targets that pass in ``outcome``."""
        return frozenset(t for t in self.targets if self.targets_gate(outcome, (t,)).passed)

    def standing(self, scored: Scored) -> Standing | None:
        """How ``scored`` stands against the targets (None when it never ran)."""
        outcome = scored.outcome
        if outcome is None or scored.record.duplicate_of or not self.targets:
            return None
        return Standing(
            candidate=scored.record.id,
            targets=len(set(self.targets)),
            fixed=len(self.fixed_targets(outcome)),
            new_failures=len(self.new_failures(outcome)),
            tests_passed=scored.score.tests_passed,
            diff_lines=scored.score.diff_lines,
            order=scored.score.order,
            timed_out=outcome.timed_out,
        )

    def new_failures(self, outcome: TestOutcome) -> list[str]:
        """Ids failing in ``outcome`` that the baseline did not see fail."""
        return sorted(t for t in outcome.failing if not proven_failing(t, self.failing))

    def regression_gate(self, full: TestOutcome, select: Sequence[str] | None) -> GateResult:
        """No test fails now that was not proven failing before; none that passed stopped running."""
        baseline = self.passed - set(self.targets)
        if select is not None:
            baseline = frozenset(t for t in baseline if selected_by(t, select))
        return regression_gate(baseline, (*full.failed, *full.errors), full.ran, failing_before=self.failing)

    def tests_passed(self, run: CandidateRun, select: Sequence[str] | None) -> int:
        """Score: targets passing plus previously passing tests still passing (when the suite ran)."""
        outcome = run.full or run.targets
        if outcome is None:
            return 0
        gate = self.targets_gate(outcome)
        n_targets = len(set(self.targets))
        if gate.passed:
            ok_targets = n_targets
        else:
            data = gate.data
            bad = len(list(_seq(data.get("failed")))) + len(list(_seq(data.get("not_run"))))
            ok_targets = max(0, n_targets - bad)
        if run.full is None:
            return ok_targets
        others = self.passed - set(self.targets)
        if select is not None:
            others = frozenset(t for t in others if selected_by(t, select))
        still = others & set(run.full.passed)
        return ok_targets + len(still)


# --- search ------------------------------------------------------------------------------------------


@dataclass
class SearchState:
    """The candidates of the search so far."""

    history: list[Feedback] = field(default_factory=list)
    tried: set[str] = field(default_factory=set)
    by_proposal: dict[str, str] = field(default_factory=dict)
    by_patch: dict[str, Scored] = field(default_factory=dict)
    scored: list[Scored] = field(default_factory=list)
    best: CandidateScore | None = None
    soup: list[Evidence] = field(default_factory=list)
    last_diff: str = ""
    last_explanation: str = ""
    shown: dict[str, Evidence] = field(default_factory=dict)
    """Evidence the proposer was shown in earlier rounds (by id): carried into later rounds at a
    lower priority, and left out of later retrieval so new queries surface new code (#15)."""
    explored: list[Evidence] = field(default_factory=list)
    """The code earlier rounds' ``open``/``symbol`` tool calls showed, merged per file
    (:func:`jobs.repair.tools_session.explored_evidence`): shown again in later rounds (#15)."""
    pending: dict[str, str] = field(default_factory=dict)
    """Patch key -> candidate id of candidates prepared but not yet executed (this batch)."""
    deferred: list[CandidateRecord] = field(default_factory=list)
    """Duplicates of pending candidates, scored once the original has run."""
    order: int = 0

    def score(
        self,
        cand: CandidateRecord,
        outcome: TestOutcome | None,
        tests_passed: int,
        submittable: bool,
        *,
        rejected: set[str],
        targets_fixed: int = 0,
    ) -> Scored:
        """Score ``cand`` (``rejected``: ids out of the pool; ``targets_fixed``: how many targets
        pass with it), record it, update the best so far."""
        cand.tests_passed = tests_passed
        cand.submittable = submittable and cand.id not in rejected
        lines = normalized_size(cand.diff) if cand.diff else 0
        score = CandidateScore(
            key=cand.patch_key or cand.proposal_key,
            submittable=cand.submittable,
            tests_passed=tests_passed,
            diff_lines=lines,
            changed_tokens=changed_tokens(cand.diff) if cand.diff else 0,
            order=self.order,
            targets_fixed=targets_fixed,
        )
        self.order += 1
        scored = Scored(cand, score, outcome)
        self.scored.append(scored)
        if not cand.duplicate_of:
            self.best = best_so_far(self.best, score)
        return scored

    def select(self, rejected: set[str]) -> Scored | None:
        """The best submittable candidate so far (tests passed, smallest normalized diff, votes)."""
        pool = [
            s
            for s in self.scored
            if s.record.submittable and s.record.id not in rejected and not s.record.duplicate_of
        ]
        if not pool:
            return None
        in_pool = {id(s.score) for s in pool}
        # Votes count every candidate that produced the same normalized patch, submittable or not.
        scores = [
            s.score if id(s.score) in in_pool else replace(s.score, submittable=False) for s in self.scored
        ]
        best = select_best(scores)
        if best is None:
            return None
        return next(s for s in pool if s.score.key == best.key)

    def id_of(self, score: CandidateScore | None) -> str:
        """The candidate id of ``score`` ('' for None)."""
        if score is None:
            return ""
        return next((s.record.id for s in self.scored if s.score is score), "")


# --- acceptance --------------------------------------------------------------------------------------


@dataclass
class Acceptance:
    """How the search ends."""

    accepted: Scored | None = None
    reverted: Scored | None = None
    rejected: set[str] = field(default_factory=set)
    """Candidates out of the pool (the quality checker or the final verification rejected them)."""
    quality_reason: str = ""
    clarified: bool = False
    verification: dict[str, Any] = field(default_factory=dict)
    pre_existing: tuple[str, ...] = ()
    """Set with a ``partial`` acceptance: the pre-existing failures the exact command still shows."""
    stop: str = ""
    """Budget dimension (or ``rounds``, ``candidates``, ``hangs``) that ended the search."""
    hang_stop: str = ""
    """With ``stop == "hangs"``: which test the last candidates all hung in (one line)."""
    proposer_dead: str = ""
    interrupted: str = ""
    """The :class:`~jobs.repair.ports.Interrupt`'s reason, once it asked the loop to stop."""
    checks: int = 0
    """How many times the interrupt was asked (a replay stops at the same check)."""

    @property
    def settled(self) -> bool:
        """A candidate was accepted or reverted to, or the proposer cannot go on."""
        return self.accepted is not None or self.reverted is not None or bool(self.proposer_dead)


@dataclass
class RunState:
    """Everything one run of the loop holds."""

    task: RepairTask
    trace: Trace
    meter: BudgetMeter
    owns_meter: bool = True
    """The loop made ``meter`` and records its spend; False: a repair's window (jobs.build records it)."""
    base: Baseline = field(default_factory=Baseline)
    search: SearchState = field(default_factory=SearchState)
    acc: Acceptance = field(default_factory=Acceptance)
    localized: bool = False
    """The failing tests' call path was asked for (once per run: :func:`~jobs.repair.
    spectrum_context.localize`)."""
    spectrum: Localization | None = None
    """What that gave (None: nothing to localize with)."""

    def role_event(
        self,
        round_index: int,
        role: str,
        *,
        ok: bool,
        error: str = "",
        usage: Usage | None = None,
        detail: str = "",
    ) -> None:
        """Record one role call in the trace."""
        self.trace.roles.append(
            {
                "round": round_index,
                "role": role,
                "ok": ok,
                "error": error,
                "detail": detail,
                "usage": usage_to_json(usage or Usage()),
            }
        )


# --- test ids ----------------------------------------------------------------------------------------


def normalized_size(diff: str) -> int:
    """Changed lines of ``diff`` after normalization (whitespace-only changes do not count):
    the diff size used by selection."""
    return sum(1 for line in normalize_patch(diff).splitlines() if line[:1] in "-+")


_TOKEN = re.compile(r"\w+|[^\w\s]+")


def changed_tokens(diff: str) -> int:
    """Tokens (words and operator runs) a diff removes plus those it adds, matched per hunk (issue
    #29): the smallest semantic change among plausible candidates is the one changing fewest
    tokens (``<`` -> ``<=`` is 2, ``x`` -> ``x + 1`` is 2 added, ``a, b`` -> ``b, a`` is 4). Language-neutral."""
    removed: list[str] = []
    added: list[str] = []
    for line in normalize_patch(diff).splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line[:1] == "-":
            removed += _TOKEN.findall(line[1:])
        elif line[:1] == "+":
            added += _TOKEN.findall(line[1:])
    same = sum(
        b.size for b in difflib.SequenceMatcher(None, removed, added, autojunk=False).get_matching_blocks()
    )
    return len(removed) + len(added) - 2 * same


def named_in(test_id: str, names: Sequence[str]) -> bool:
    """Whether ``test_id`` is one of ``names``, allowing for a different path prefix (CI may run
    from another directory: ``pkg/tests/test_a.py::t`` is ``tests/test_a.py::t``)."""
    return any(test_id == n or test_id.endswith("/" + n) or n.endswith("/" + test_id) for n in names)


def fails(outcome: TestOutcome, test_id: str) -> bool:
    """``test_id`` failed in ``outcome`` (or did not run in a broken run)."""
    if test_id in outcome.failed or test_id in outcome.errors:
        return True
    if any(
        t == test_id or t.startswith(test_id + "::") or t.startswith(test_id + "[") for t in outcome.failed
    ):
        return True
    if test_id in outcome.passed:
        return False
    return outcome.broken


def selected_by(test_id: str, select: Sequence[str]) -> bool:
    """``test_id`` is (a member of) one of the selected ids."""
    return any(test_id == s or test_id.startswith((s + "::", s + "[", s + "/")) for s in select)


def covers_all(outcome: TestOutcome, targets: Sequence[str]) -> bool:
    """Every target ran (or errored) in ``outcome``."""
    ran = set(outcome.ran) | set(outcome.errors)
    return all(t in ran for t in targets)


def narrowing(targets: Sequence[str]) -> tuple[str, ...] | None:
    """The ids to narrow a run to: the targets, or None (the whole suite) when one of them is a
    run-level error (``<run>``: a timeout, a crash), which names no test to select."""
    if any(t.startswith(RUN_ERROR_PREFIX) for t in targets):
        return None
    return tuple(targets)


def _seq(value: object) -> Iterable[object]:
    return value if isinstance(value, list | tuple) else ()
