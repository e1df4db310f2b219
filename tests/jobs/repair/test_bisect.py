"""Culprit bisection over a fake probe: log2 n runs, budget-bounded, flaky-aware."""

from __future__ import annotations

import math

import pytest

from jobs.repair.bisect import Outcome, bisect
from jobs.repair.fakes_change import FakeBisectProbe


def history(n: int, culprit: int) -> tuple[list[str], dict[str, list[Outcome]]]:
    shas = [f"{i:040x}" for i in range(1, n + 1)]
    return shas, {sha: ["fail" if i >= culprit else "pass"] for i, sha in enumerate(shas)}


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13, 32])
def test_finds_every_culprit_in_ceil_log2_runs(n: int) -> None:
    for culprit in range(n):
        shas, outcomes = history(n, culprit)
        probe = FakeBisectProbe(outcomes)
        result = bisect(shas, probe, budget=64)
        assert result.status == "found" and result.culprit == shas[culprit]
        assert result.runs <= math.ceil(math.log2(n))
        assert shas[-1] not in probe.calls  # the red head is known to fail: never re-run


def test_single_commit_needs_no_run() -> None:
    probe = FakeBisectProbe({"a" * 40: ["fail"]})
    result = bisect(["a" * 40], probe)
    assert result.status == "single" and result.culprit == "a" * 40 and result.runs == 0


def test_empty_range() -> None:
    assert bisect([], FakeBisectProbe({})).status == "empty"


def test_budget_stops_with_the_suspect_range() -> None:
    shas, outcomes = history(16, 11)
    result = bisect(shas, FakeBisectProbe(outcomes), budget=2)
    assert result.status == "budget" and result.culprit is None and result.runs == 2
    assert shas[11] in result.suspects and len(result.suspects) == 4


def test_flaky_and_untestable_commits_are_skipped_like_git_bisect_skip() -> None:
    shas, outcomes = history(8, 5)
    outcomes[shas[3]] = ["flaky"]
    probe = FakeBisectProbe(outcomes)
    result = bisect(shas, probe, budget=10)
    assert result.status == "found" and result.culprit == shas[5]
    assert probe.calls[:2] == [shas[3], shas[2]]  # the flaky midpoint, then its neighbour
    # with 3 and 4 both untestable, any of 3, 4, 5 may be the first bad commit
    outcomes[shas[4]] = ["skip"]
    result = bisect(shas, FakeBisectProbe(outcomes), budget=10)
    assert result.status == "inconclusive" and result.suspects == (shas[3], shas[4], shas[5])


def test_only_untestable_commits_left_is_inconclusive() -> None:
    shas, outcomes = history(4, 2)
    outcomes[shas[1]] = ["skip"]
    outcomes[shas[2]] = ["skip"]
    result = bisect(shas, FakeBisectProbe(outcomes), budget=10)
    assert result.status == "inconclusive" and result.culprit is None
    assert result.suspects == (shas[1], shas[2], shas[3])


def test_confirmation_catches_a_flaky_red_run() -> None:
    shas, outcomes = history(4, 3)
    outcomes[shas[3]] = ["pass"]  # the "red" head passes when run again: nothing to blame
    result = bisect(shas, FakeBisectProbe(outcomes), confirm=True)
    assert result.status == "flaky" and result.culprit is None


def test_confirmation_keeps_a_real_culprit() -> None:
    shas, outcomes = history(4, 1)
    probe = FakeBisectProbe(outcomes)
    result = bisect(shas, probe, confirm=True)
    assert result.status == "found" and result.culprit == shas[1]
    assert probe.calls[-1] == shas[1]
    assert result.to_json()["culprit"] == shas[1]
