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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

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

    @property
    def runs(self) -> int:
        """Probes made (each one sandboxed run of the failing targets)."""
        return len(self.probes)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping for the trace."""
        return {
            "status": self.status,
            "culprit": self.culprit,
            "suspects": list(self.suspects),
            "probes": [[sha, outcome] for sha, outcome in self.probes],
        }


def bisect(commits: Sequence[str], probe: Probe, *, budget: int = 8, confirm: bool = False) -> BisectResult:
    """Find the first failing commit of ``commits`` (oldest first; the commit before the first is
    green, the last is red) with at most ``budget`` probes."""
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
