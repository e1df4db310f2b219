"""Encode(f_t), stable truncation, redundancy filtering and ARKS query formulation."""

from __future__ import annotations

from jobs.repair.fakes import InMemorySource, outcome
from jobs.repair.feedback import (
    code_query,
    encode,
    failure_hints,
    feedback_query,
    filter_redundancy,
    fit_evidence,
    fit_history,
    formulate_queries,
    frame_context,
    merge_round,
    observed_failures,
    similarity,
    trim_failure,
    verified_snippet,
)
from jobs.repair.model import Evidence, Failure, Feedback, Frame

DIFF = (
    "diff --git a/calc/core.py b/calc/core.py\n"
    "index 1111111..2222222 100644\n"
    "--- a/calc/core.py\n"
    "+++ b/calc/core.py\n"
    "@@ -1,2 +1,2 @@\n"
    " def is_adult(age):\n"
    "-    return age > 18\n"
    "+    return age >= 18\n"
)


def fail(test_id: str, *, message: str = "boom", frames: int = 0, type_: str = "AssertionError") -> Failure:
    return Failure(
        test_id=test_id,
        type=type_,
        message=message,
        path="calc/core.py",
        line=2,
        frames=tuple(Frame(f"mod{i}.py", i + 1, f"f{i}") for i in range(frames)),
    )


def test_trim_failure_keeps_the_innermost_frames_and_cuts_the_message() -> None:
    long = "\n".join(f"line {i}" for i in range(40))
    trimmed = trim_failure(fail("t", message=long, frames=10), max_frames=3)
    assert [f.path for f in trimmed.frames] == ["mod7.py", "mod8.py", "mod9.py"]  # innermost last
    assert trimmed.message.startswith("line 0\n") and "[... 28 more lines]" in trimmed.message
    assert len(trim_failure(fail("t", message="x" * 5000)).message) < 700


def test_observed_failures_order_targets_then_regressions_then_new_errors() -> None:
    run = outcome(
        ["p1"],
        {t: fail(t) for t in ["other", "regressed", "target2", "target1"]},
        errors=["<run>"],
    )
    got = observed_failures(run, targets=["target1", "target2"], baseline_passed=["regressed", "p1"])
    assert [f.test_id for f in got] == ["target1", "target2", "regressed", "<run>", "other"]
    assert len(observed_failures(run, targets=["target1"], limit=2)) == 2
    # only observed failures: passing tests never appear
    assert "p1" not in [f.test_id for f in got]


def test_encode_summarizes_only_what_was_observed() -> None:
    run = outcome(["a"], {"t": fail("t"), "b": fail("b")})
    fb = encode(2, run, targets=["t"], baseline_passed=["a", "b"], gate_failures=["regressions: b now fails"])
    assert fb.round == 2
    assert (
        fb.summary
        == "1 of 1 target tests still fail; 1 previously passing tests now fail; rejected by regressions"
    )
    assert [f.test_id for f in fb.failures] == ["t", "b"]
    fixed = encode(0, outcome(["t", "a"]), targets=["t"])
    assert fixed.summary == "all target tests pass" and fixed.failures == ()
    not_applied = encode(1, None, edit_errors=["edit #1 (x.py): old text not found"])
    assert not_applied.summary == "the edits did not apply" and not_applied.edit_errors


def test_merge_round_dedupes_in_preference_order() -> None:
    a = Feedback(0, "s1", (fail("t"),), ("e1",), ())
    b = Feedback(0, "s2", (fail("t"), fail("u")), ("e1", "e2"), ("policy: x",))
    merged = merge_round(0, [a, b])
    assert merged is not None
    assert [f.test_id for f in merged.failures] == ["t", "u"]
    assert merged.edit_errors == ("e1", "e2") and merged.gate_failures == ("policy: x",)
    assert merged.summary == "candidate 1: s1; candidate 2: s2"
    assert merge_round(0, []) is None


def test_fit_history_keeps_the_latest_round_whole_and_drops_oldest_first() -> None:
    history = [Feedback(i, f"round {i} " + "x" * 300, (fail(f"t{i}", message="y" * 500),)) for i in range(6)]
    kept, dropped = fit_history(history, budget_chars=1_200)
    assert kept[-1] is history[-1]  # latest failing trace always kept
    assert [f.round for f in kept] == list(range(6 - len(kept), 6))  # a suffix: oldest dropped first
    assert dropped == 6 - len(kept) > 0
    assert fit_history(history, budget_chars=10) == ((history[-1],), 5)
    assert fit_history([], budget_chars=10) == ((), 0)
    assert fit_history(history, budget_chars=1_200) == (kept, dropped)  # stable


def ev(i: str, score: float, text: str = "", path: str = "a.py", start: int = 1, end: int = 5) -> Evidence:
    return Evidence(i, "code", path, start, end, text or f"def f_{i}(): return {i!r}", score=score)


def test_fit_evidence_drops_lowest_score_first_but_never_pinned() -> None:
    items = [
        ev("hi", 0.9, "a" * 100),
        ev("lo", 0.1, "b" * 100),
        ev("mid", 0.5, "c" * 100),
        ev("pin", 0.0, "d" * 100),
    ]
    kept, dropped = fit_evidence(items, budget_chars=250, pinned=["pin"])
    assert dropped == ("lo", "mid")
    assert [e.id for e in kept] == ["hi", "pin"]  # input order preserved
    assert fit_evidence(items, budget_chars=10_000) == (tuple(items), ())


def test_filter_redundancy_drops_contained_ranges_and_near_duplicates() -> None:
    a = ev(
        "a", 0.9, "def reserve(self, sku, quantity): return self.available(sku) > quantity", start=1, end=20
    )
    # Contained and shown by `a` (its text is part of a's; #15: a container must show the text).
    inside = ev("inside", 0.8, "return self.available(sku)", start=5, end=8)
    dup = ev(
        "dup", 0.7, "def reserve(self, sku, quantity): return self.available(sku) > quantity", path="b.py"
    )
    other = ev("other", 0.6, "class Report: pass", path="c.py")
    assert [e.id for e in filter_redundancy([a, inside, dup, other])] == ["a", "other"]
    assert similarity("a b c", "a b c") == 1.0 and similarity("alpha beta", "gamma delta") == 0.0


def test_query_formulations_follow_arks() -> None:
    fb = Feedback(
        0,
        "1 of 1 target tests still fail",
        (fail("tests/t.py::test_x", message="OutOfStock: 5 > 5", frames=2),),
    )
    first = formulate_queries("reserve fails at the boundary")
    assert [(q.formulation, q.text) for q in first] == [("question", "reserve fails at the boundary")]
    later = formulate_queries(
        "q", feedback=fb, candidate_diff=DIFF, explanation="compare with >= instead of >"
    )
    assert [q.formulation for q in later] == ["question", "feedback", "code", "explained"]
    planned = formulate_queries("q", plan=["fix the boundary", "fix the boundary", "docs"], feedback=fb)
    assert [q.formulation for q in planned] == ["subgoal", "subgoal", "feedback"]  # deduplicated
    assert (
        "AssertionError" in feedback_query(fb)
        and "f1" in feedback_query(fb)
        and "test_x" in feedback_query(fb)
    )
    assert code_query(DIFF) == "return age >= 18"
    assert code_query("not a diff") == ""


def test_failure_hints_innermost_first() -> None:
    f = Failure(
        "t", frames=(Frame("tests/t.py", 3, "test"), Frame("src/a.py", 9, "g")), path="src/a.py", line=9
    )
    assert failure_hints([f], [("docs/x.md", 1)]) == (("src/a.py", 9), ("tests/t.py", 3), ("docs/x.md", 1))
    assert len(failure_hints([f] * 3, [(f"p{i}.py", i) for i in range(20)], limit=4)) == 4


def test_frame_context_windows_are_merged_per_file() -> None:
    source = InMemorySource({"a.py": "\n".join(f"line {i}" for i in range(1, 101)), "tests/test_a.py": "x\n"})
    items = frame_context(
        source, [("a.py", 50), ("a.py", 55), ("missing.py", 3), ("tests/test_a.py", 1)], radius=5
    )
    assert [(e.path, e.start_line, e.end_line, e.source) for e in items] == [
        ("a.py", 45, 60, "code"),
        ("tests/test_a.py", 1, 1, "test"),
    ]
    assert items[0].text.splitlines()[0] == "line 45"


def test_verified_snippet() -> None:
    snippet = verified_snippet("r1c2", DIFF, tests_passed=3, round_index=0)
    assert (snippet.id, snippet.source, snippet.path, snippet.start_line) == (
        "verified:r1c2",
        "verified",
        "calc/core.py",
        1,
    )
    assert "passed 3 tests" in snippet.why and snippet.text == DIFF
