"""Culprit finding: the first commit after the last green one at which the failing targets fail.

Pure: :func:`bisect` drives a :class:`Probe` (commit -> ``pass``/``fail``/``flaky``/``skip``; the
application runs the failing targets at that commit in the sandbox and asks the flaky triage) and
never runs anything itself. Binary search over ``green < c1 < ... < cn = red``: ``ceil(log2 n)``
probes when every answer is clear, never more than ``budget``.

Flaky-aware: a ``flaky`` or ``skip`` answer (the triage saw the targets both pass and fail, or the
commit cannot be tested: it does not build, setup failed) says nothing about that commit; the
search probes its nearest untested neighbour inside the open range instead, like ``git bisect
skip``. With ``confirm``, the culprit is probed once more: a pass there means the red run was
flaky, not caused by a commit (status ``flaky``).

With ``flake_rate`` (the failing test's measured rate of false failures, from the test history),
one run proves nothing: the search is the Bayesian noisy bisection of
:mod:`jobs.repair.noisy_bisect`, which repeats probes until the culprit's posterior reaches
``confidence`` or the budget ends; the result carries that ``probability``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from jobs.repair.noisy_bisect import noisy_bisect

Outcome = Literal["pass", "fail", "flaky", "skip"]
Probe = Callable[[str], Outcome]
"""Runs the failing targets at a commit: ``pass``, ``fail``, ``flaky`` (both seen) or ``skip`` (untestable)."""

Status = Literal["found", "single", "budget", "inconclusive", "flaky", "empty"]


@dataclass(frozen=True, slots=True)
class BisectResult:
    """The culprit (when found) and how it was found.

    ``suspects`` is the range still in doubt (one commit when found): what a report names when
    the search stopped early.
    """

    status: Status
    culprit: str | None
    suspects: tuple[str, ...]
    probes: tuple[tuple[str, Outcome], ...] = ()
    probability: float | None = None
    """The culprit's posterior probability (a flake-aware search only; None: one-run probes)."""

    @property
    def runs(self) -> int:
        """Probes made (each one sandboxed run of the failing targets)."""
        return len(self.probes)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping for the trace."""
        data: dict[str, Any] = {
            "status": self.status,
            "culprit": self.culprit,
            "suspects": list(self.suspects),
            "probes": [[sha, outcome] for sha, outcome in self.probes],
        }
        if self.probability is not None:
            data["probability"] = round(self.probability, 4)
        return data


def bisect(
    commits: Sequence[str],
    probe: Probe,
    *,
    budget: int = 8,
    confirm: bool = False,
    flake_rate: float | None = None,
    confidence: float = 0.95,
) -> BisectResult:
    """Find the first failing commit of ``commits`` (oldest first; the commit before the first is
    green, the last is red) with at most ``budget`` probes; flake-aware with ``flake_rate`` > 0."""
    if flake_rate is not None and flake_rate > 0 and commits:
        return _noisy(
            commits, probe, budget=budget, confirm=confirm, flake_rate=flake_rate, confidence=confidence
        )
    if not commits:
        return BisectResult("empty", None, ())
    probes: list[tuple[str, Outcome]] = []
    if len(commits) == 1:
        return _confirmed(commits, 0, probes, probe, budget, confirm, status="single")
    good, bad = -1, len(commits) - 1  # indices: commits[good] passes (-1: the green base), commits[bad] fails
    untestable: set[int] = set()
    while bad - good > 1:
        mid = _pick(good, bad, untestable)
        if mid is None:
            return BisectResult("inconclusive", None, tuple(commits[good + 1 : bad + 1]), tuple(probes))
        if len(probes) >= budget:
            return BisectResult("budget", None, tuple(commits[good + 1 : bad + 1]), tuple(probes))
        outcome = probe(commits[mid])
        probes.append((commits[mid], outcome))
        if outcome == "pass":
            good = mid
        elif outcome == "fail":
            bad = mid
        else:
            untestable.add(mid)
    return _confirmed(commits, bad, probes, probe, budget, confirm, status="found")


def _noisy(
    commits: Sequence[str], probe: Probe, *, budget: int, confirm: bool, flake_rate: float, confidence: float
) -> BisectResult:
    """:func:`jobs.repair.noisy_bisect.noisy_bisect` as a :class:`BisectResult`: ``confirm`` gives
    "the red run itself was a flake" a prior (status ``flaky`` when it wins); a search the budget
    stopped names its most probable commit as the only suspect, with its probability."""
    found = noisy_bisect(
        commits,
        probe,
        flake_rate=min(flake_rate, 0.9),
        confidence=confidence,
        budget=budget,
        prior_no_culprit=0.1 if confirm else 0.0,
    )
    probes = found.probes
    if found.status == "found" and found.culprit is not None:
        status: Status = "single" if len(commits) == 1 else "found"
        return BisectResult(status, found.culprit, (found.culprit,), probes, found.probability)
    if found.status == "no_culprit":
        return BisectResult("flaky", None, (commits[-1],), probes, found.probability)
    if found.status == "budget" and found.culprit is not None:
        return BisectResult("budget", None, (found.culprit,), probes, found.probability)
    return BisectResult("inconclusive", None, tuple(commits), probes, found.probability)


def _pick(good: int, bad: int, untestable: set[int]) -> int | None:
    """The testable index nearest the middle of the open range (good, bad), or None."""
    mid = (good + bad) // 2
    for step in range(bad - good):
        for i in (mid - step, mid + step):
            if good < i < bad and i not in untestable:
                return i
    return None


def _confirmed(
    commits: Sequence[str],
    index: int,
    probes: list[tuple[str, Outcome]],
    probe: Probe,
    budget: int,
    confirm: bool,
    *,
    status: Status,
) -> BisectResult:
    culprit = commits[index]
    if confirm and len(probes) < budget:
        outcome = probe(culprit)
        probes.append((culprit, outcome))
        if outcome != "fail":
            return BisectResult("flaky", None, (culprit,), tuple(probes))
    return BisectResult(status, culprit, (culprit,), tuple(probes))


__all__ = ["BisectResult", "Outcome", "Probe", "Status", "bisect"]
