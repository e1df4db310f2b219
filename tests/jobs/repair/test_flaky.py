"""The flaky-test classifier (:mod:`jobs.repair.flaky`): mixed outcomes at one commit, flip rate,
the evidence sentence, and the observations a report keeps of its runs."""

from __future__ import annotations

import datetime as dt

from jobs.repair.flaky import (
    PATCHED_ENV,
    SANDBOX_ENV,
    Observation,
    TestRun,
    classify,
    classify_all,
    evidence,
    observations,
    runs_of,
)

T = "tests/test_io.py::test_read"
DAY0 = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)


def run(sha: str, failed: bool, n: int, *, env: str = "ci:CI", source: str = "ci", test: str = T) -> TestRun:
    return TestRun(test, sha, env, source, failed, at=DAY0 + dt.timedelta(hours=n), run_key=f"k{n}")  # type: ignore[arg-type]


def test_failed_and_passed_at_one_commit_is_flaky_with_the_issue_sentence() -> None:
    sha = "a1b2c3d4" * 5
    rows = [run(sha, True, 0), run(sha, True, 1)]
    rows += [run(sha, i == 2, 2 + i, env=SANDBOX_ENV, source="reproduction") for i in range(6)]
    rows += [run(sha, i < 2, 10 + i) for i in range(4)]  # CI: 2 more fails, 2 passes
    verdict = classify(T, rows)
    assert verdict.flaky and verdict.reason == "mixed"
    assert verdict.sentence == (
        f"`{T}` failed 5 of 12 runs at a1b2c3d, passed here 5 of 6 in ARCS' sandbox, first seen failing 2026-11-20"
    )
    assert verdict.runs == 12 and verdict.failures == 5
    # 4 of 6 CI runs and 1 of 6 sandbox runs at the mixed places
    assert verdict.flake_rate == round(5 / 12, 4)
    assert verdict.first_seen == DAY0 and verdict.last_seen == DAY0 + dt.timedelta(hours=13)


def test_a_real_break_and_its_fix_are_not_flaky() -> None:
    # pass at c1..c3, fail at c4..c6 (every run), pass again at c7 after the fix: two flips
    rows = [run(f"c{i}", 4 <= i <= 6, i * 2 + k) for i in range(1, 8) for k in range(2)]
    verdict = classify(T, rows)
    assert not verdict.flaky and verdict.sentence == "" and verdict.flake_rate == 0.0


def test_one_environment_failing_where_another_passes_is_not_mixed() -> None:
    # CI fails, ARCS' sandbox passes at the same commit: an environment difference, not evidence
    rows = [run("c1", True, 0), run("c1", False, 1, env=SANDBOX_ENV, source="reproduction")]
    assert not classify(T, rows).flaky


def test_flip_rate_over_recent_commits_is_flaky() -> None:
    pattern = [False, True, False, False, True, False, True, False]  # 6 flips over 8 commits
    rows = [run(f"c{i}", failed, i) for i, failed in enumerate(pattern)]
    verdict = classify(T, rows)
    assert verdict.flaky and verdict.reason == "flips"
    assert (
        "flipped between pass and fail 6 times over its last 8 commits (ci:CI; failed at 3)"
        in verdict.sentence
    )
    assert verdict.flake_rate == 0.375
    # the same flips after a long calm stretch are under the rate within the 30-commit window
    calm = [run(f"d{i}", False, -100 + i) for i in range(30)]
    assert not classify(T, [*calm, *rows], window=30).flaky
    assert classify(T, [*calm, *rows], window=8).flaky


def test_classify_all_and_evidence_join_only_the_flaky() -> None:
    rows = [run("c1", True, 0), run("c1", False, 1), run("c1", True, 2, test="t::other")]
    verdicts = classify_all(rows)
    assert verdicts[T].flaky and not verdicts["t::other"].flaky
    assert evidence(verdicts.values()) == verdicts[T].sentence
    many = [
        classify(f"t{i}", [run("c", True, 0, test=f"t{i}"), run("c", False, 1, test=f"t{i}")])
        for i in range(7)
    ]
    assert evidence(many).endswith("; and 2 more") and evidence(many).count("`t") == 5
    assert classify("nothing", rows).runs == 0


def test_observations_keep_the_failing_tests_runs_only() -> None:
    baseline = (("a", "b"), ("c", "d"))
    reruns = [(("a",), ("b", "c")), ((), ("a", "b"))]
    found = observations(baseline, reruns, verification=(("e",), ("a", "b")))
    assert [o.to_json() for o in found] == [
        ["a", True, "reproduction", 0],
        ["b", True, "reproduction", 0],
        ["a", True, "reproduction", 1],
        ["b", False, "reproduction", 1],
        ["a", False, "reproduction", 2],
        ["b", False, "reproduction", 2],
        ["e", True, "verification", 0],
        ["a", False, "verification", 0],
        ["b", False, "verification", 0],
    ]
    assert all(Observation.read(o.to_json()) == o for o in found)
    assert Observation.read(["a", "yes", "ci", 0]) is None and Observation.read("a") is None
    assert observations(None, reruns) == ()
    rows = runs_of(found[:3], sha="f" * 40, key="attempt:7")
    assert [r.run_key for r in rows] == [
        "attempt:7:reproduction:0",
        "attempt:7:reproduction:0",
        "attempt:7:reproduction:1",
    ]
    assert {r.env for r in rows} == {SANDBOX_ENV} and rows[0].sha == "f" * 40


def test_a_reproduction_that_passed_on_re_run_classifies_as_flaky_by_itself() -> None:
    found = observations((("a",), ()), [((), ("a",)), (("a",), ())])
    verdict = classify("a", runs_of(found, sha="b" * 40, key="attempt:1"))
    assert (
        verdict.flaky
        and verdict.sentence == "`a` failed 2 of 3 runs at bbbbbbb, passed here 1 of 3 in ARCS' sandbox"
    )


def test_a_fix_passing_where_the_commit_failed_is_not_a_flake() -> None:
    # the baseline failed twice at the commit; the verification of the patched tree passed
    found = observations((("a",), ()), [(("a",), ())], verification=((), ("a",)))
    rows = runs_of(found, sha="c" * 40, key="attempt:3")
    assert [r.env for r in rows] == [SANDBOX_ENV, SANDBOX_ENV, PATCHED_ENV]
    verdict = classify("a", rows)
    assert not verdict.flaky and verdict.runs == 2
