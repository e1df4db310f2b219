"""Flaky tests from evidence: a test's recorded outcomes, the verdict "flaky" and its sentence.

Pure. A test's history is its :class:`TestRun` rows (one per test per run: the CI failures ARCS is
sent, the reproduction's baseline and triage re-runs, candidate and verification runs), each at a
commit and in an environment (``ci:<workflow>``, ``sandbox``). :func:`classify` calls a test flaky

* when it both failed and passed at one commit in one environment (``mixed``: the code did not
  change, the outcome did), or
* from its flip rate (``flips``): over its last commits in one environment, each commit's outcome
  flips from the previous one's at least ``min_flips`` times and in at least ``flip_rate`` of the
  transitions (a real break flips once, its fix once more).

Research on flaky tests agrees that such history features beat reading the test's code. The
evidence sentence (``failed 3 of 12 runs at a1b2c3d, passed here 5 of 6 in ARCS' sandbox, first
seen failing 2026-11-20``) goes into the check run and the status comment; :attr:`FlakyVerdict.flake_rate` is
what a flake-aware bisection (:mod:`jobs.repair.noisy_bisect`) takes.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

Source = Literal["ci", "reproduction", "candidate", "verification"]
SOURCES: tuple[Source, ...] = ("ci", "reproduction", "candidate", "verification")
SANDBOX_ENV = "sandbox"
"""The environment key of ARCS' own runs of a commit (CI runs are ``ci:<workflow name>``)."""
PATCHED_ENV = "sandbox:patched"
"""ARCS' runs of a candidate's tree (``candidate``, ``verification``): kept, but not the commit's
outcomes, so the classifier leaves them out (a fix passing where the commit failed is no flake)."""
MAX_OBSERVATIONS = 400
"""Observations one report keeps (the failing tests' runs; a passing suite is not recorded)."""


@dataclass(frozen=True, slots=True)
class Observation:
    """One test's outcome in one run of an attempt (no commit or environment yet: the attempt's)."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    test_id: str
    failed: bool
    source: Source
    run: int = 0
    """The run's number within the attempt and source (0: the baseline, 1..: re-runs)."""

    def to_json(self) -> list[Any]:
        """``[test_id, failed, source, run]``."""
        return [self.test_id, self.failed, self.source, self.run]

    @classmethod
    def read(cls, data: object) -> Observation | None:
        """Inverse of :meth:`to_json`; None for anything else."""
        if not isinstance(data, list | tuple) or len(data) != 4:
            return None
        test_id, failed, source, run = data
        if not isinstance(test_id, str) or not test_id or source not in SOURCES:
            return None
        if not isinstance(failed, bool) or not isinstance(run, int):
            return None
        return cls(test_id, failed, source, run)


@dataclass(frozen=True, slots=True)
class TestRun:
    """A recorded outcome: ``test_id`` at commit ``sha`` in environment ``env``."""

    __test__: ClassVar[bool] = False

    test_id: str
    sha: str
    env: str
    source: Source
    failed: bool
    at: dt.datetime | None = None
    run_key: str = ""
    """What makes the row unique with the repository and test (``attempt:12:reproduction:3``,
    ``ci:555:1``): a redelivered run or a retried job records it once."""


@dataclass(frozen=True, slots=True)
class FlakyVerdict:
    """What a test's history says: flaky or not, why, and the numbers behind the sentence."""

    test_id: str
    flaky: bool
    reason: Literal["mixed", "flips", ""] = ""
    sentence: str = ""
    runs: int = 0
    failures: int = 0
    flake_rate: float = 0.0
    """Failures per run where it is flaky (the mixed commits; else every run); 0 when not flaky."""
    first_seen: dt.datetime | None = None
    last_seen: dt.datetime | None = None


def classify(
    test_id: str,
    runs: Iterable[TestRun],
    *,
    window: int = 30,
    min_flips: int = 3,
    flip_rate: float = 0.3,
) -> FlakyVerdict:
    """The verdict on ``test_id`` from its ``runs`` (any order; rows of other tests are ignored)."""
    mine = sorted((r for r in runs if r.test_id == test_id and r.env != PATCHED_ENV), key=_order)
    if not mine:
        return FlakyVerdict(test_id, False)
    failures = sum(r.failed for r in mine)
    seen = [r.at for r in mine if r.at is not None]
    first = min(seen) if seen else None
    last = max(seen) if seen else None
    first_failure = next((r.at for r in mine if r.failed and r.at is not None), None)
    by_place: dict[tuple[str, str], list[TestRun]] = defaultdict(list)
    for r in mine:
        by_place[(r.sha, r.env)].append(r)
    mixed = [place for place, rs in by_place.items() if {r.failed for r in rs} == {True, False}]
    base = FlakyVerdict(test_id, False, runs=len(mine), failures=failures, first_seen=first, last_seen=last)
    if mixed:
        at_mixed = [r for place in mixed for r in by_place[place]]
        # the newest commit where it was seen both ways is the one the sentence names
        sha = max(mixed, key=lambda place: max(_order(r) for r in by_place[place]))[0]
        sentence = _mixed_sentence(test_id, [r for r in mine if r.sha == sha], sha, first_failure)
        rate = sum(r.failed for r in at_mixed) / len(at_mixed)
        return _flaky(base, "mixed", sentence, rate)
    for env in sorted({r.env for r in mine}):
        outcomes = _per_commit([r for r in mine if r.env == env])[-window:]
        flips = sum(a != b for a, b in itertools.pairwise(outcomes))
        if flips >= min_flips and flips >= flip_rate * (len(outcomes) - 1):
            fails = sum(outcomes)
            sentence = (
                f"`{test_id}` flipped between pass and fail {flips} times over its last {len(outcomes)} "
                f"commits ({env}; failed at {fails}){_first(first_failure)}"
            )
            return _flaky(base, "flips", sentence, failures / len(mine))
    return base


def classify_all(runs: Iterable[TestRun], **options: Any) -> dict[str, FlakyVerdict]:
    """:func:`classify` for every test in ``runs``."""
    rows = list(runs)
    by_test: dict[str, list[TestRun]] = defaultdict(list)
    for r in rows:
        by_test[r.test_id].append(r)
    return {t: classify(t, rs, **options) for t, rs in by_test.items()}


def evidence(verdicts: Iterable[FlakyVerdict], limit: int = 5) -> str:
    """The flaky verdicts' sentences joined (``; ``), at most ``limit`` and a count of the rest."""
    lines = [v.sentence for v in verdicts if v.flaky and v.sentence]
    more = len(lines) - limit
    return "; ".join(lines[:limit]) + (f"; and {more} more" if more > 0 else "")


def observations(
    baseline: tuple[Sequence[str], Sequence[str]] | None,
    reruns: Sequence[tuple[Sequence[str], Sequence[str]]] = (),
    *,
    verification: tuple[Sequence[str], Sequence[str]] | None = None,
) -> tuple[Observation, ...]:
    """The observations worth keeping from an attempt's runs, each given as ``(failed, passed)``
    ids: every test that failed in the baseline, its outcome in each triage re-run
    (``reproduction``), and (``verification``) the final run's failures and the baseline's
    failures it passed. A test that never failed here is not recorded (a passing suite says
    nothing about flakiness and would swamp the store)."""
    if baseline is None:
        return ()
    failing = list(dict.fromkeys(baseline[0]))
    out = [Observation(t, True, "reproduction", 0) for t in failing]
    for n, (failed, passed) in enumerate(reruns, start=1):
        failed_set, passed_set = set(failed), set(passed)
        out += [
            Observation(t, t in failed_set, "reproduction", n)
            for t in failing
            if t in failed_set | passed_set
        ]
    if verification is not None:
        v_failed, v_passed = set(verification[0]), set(verification[1])
        out += [Observation(t, True, "verification", 0) for t in dict.fromkeys(verification[0])]
        out += [Observation(t, False, "verification", 0) for t in failing if t in v_passed - v_failed]
    return tuple(out[:MAX_OBSERVATIONS])


def runs_of(
    found: Iterable[Observation], *, sha: str, env: str = SANDBOX_ENV, key: str
) -> tuple[TestRun, ...]:
    """An attempt's observations as rows at ``sha``; ``key`` names the attempt (``attempt:12``).
    Runs of a candidate's tree go to :data:`PATCHED_ENV`."""
    return tuple(
        TestRun(
            o.test_id,
            sha,
            env if o.source in ("ci", "reproduction") else PATCHED_ENV,
            o.source,
            o.failed,
            run_key=f"{key}:{o.source}:{o.run}",
        )
        for o in found
    )


# -- helpers ------------------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _order(r: TestRun) -> tuple[dt.datetime, str]:
    return (r.at or _EPOCH, r.run_key)


def _per_commit(rows: Sequence[TestRun]) -> list[bool]:
    """One outcome per commit (did it fail there), in the order the commits were first seen."""
    outcome: dict[str, bool] = {}
    for r in rows:  # sorted by time already
        outcome[r.sha] = outcome.get(r.sha, False) or r.failed
    return list(outcome.values())


def _mixed_sentence(test_id: str, at_sha: Sequence[TestRun], sha: str, first: dt.datetime | None) -> str:
    fails = sum(r.failed for r in at_sha)
    here = [r for r in at_sha if r.env == SANDBOX_ENV]
    text = f"`{test_id}` failed {fails} of {len(at_sha)} runs at {sha[:7]}"
    if here:
        passed = sum(not r.failed for r in here)
        text += f", passed here {passed} of {len(here)} in ARCS' sandbox"
    return text + _first(first)


def _first(at: dt.datetime | None) -> str:
    return f", first seen failing {at:%Y-%m-%d}" if at is not None else ""


def _flaky(base: FlakyVerdict, reason: Literal["mixed", "flips"], sentence: str, rate: float) -> FlakyVerdict:
    return FlakyVerdict(
        base.test_id,
        True,
        reason,
        sentence,
        base.runs,
        base.failures,
        round(rate, 4),
        base.first_seen,
        base.last_seen,
    )


__all__ = [
    "MAX_OBSERVATIONS",
    "PATCHED_ENV",
    "SANDBOX_ENV",
    "SOURCES",
    "FlakyVerdict",
    "Observation",
    "Source",
    "TestRun",
    "classify",
    "classify_all",
    "evidence",
    "observations",
    "runs_of",
]
