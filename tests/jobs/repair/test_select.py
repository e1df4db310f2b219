"""Candidate selection and best-so-far tracking (monotone, deterministic)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from jobs.repair.select import CandidateScore, best_so_far, select_best


def cand(key: str, *, ok: bool = True, passed: int = 5, lines: int = 10, order: int = 0) -> CandidateScore:
    return CandidateScore(key=key, submittable=ok, tests_passed=passed, diff_lines=lines, order=order)


def test_empty_and_unsubmittable_give_none() -> None:
    assert select_best([]) is None
    assert select_best([cand("a", ok=False, passed=99)]) is None


def test_most_tests_passed_wins() -> None:
    best = select_best([cand("a", passed=3, order=0), cand("b", passed=7, lines=500, order=1)])
    assert best is not None and best.key == "b"


def test_unsubmittable_never_wins_even_with_more_tests() -> None:
    best = select_best([cand("a", ok=False, passed=10, order=0), cand("b", passed=2, order=1)])
    assert best is not None and best.key == "b"


def test_smaller_diff_breaks_a_tie_in_tests() -> None:
    best = select_best([cand("a", lines=40, order=0), cand("b", lines=12, order=1)])
    assert best is not None and best.key == "b"


def test_agreement_breaks_a_tie_in_size() -> None:
    pool = [cand("a", order=0), cand("b", order=1), cand("b", order=2), cand("c", order=3)]
    best = select_best(pool)
    assert best == replace(pool[1], votes=2)


def test_votes_count_unsubmittable_duplicates_too() -> None:
    pool = [cand("a", order=0), cand("b", order=1), cand("b", ok=False, order=2)]
    best = select_best(pool)
    assert best is not None and (best.key, best.votes) == ("b", 2)


def test_proposal_order_breaks_the_last_tie() -> None:
    pool = [cand("x", order=4), cand("y", order=2), cand("z", order=3)]
    best = select_best(pool)
    assert best is not None and best.key == "y" and best.votes == 1


def test_selection_does_not_depend_on_input_order() -> None:
    rng = random.Random(7)
    for _ in range(200):
        pool = [
            cand(
                rng.choice("abcd"),
                ok=rng.random() < 0.7,
                passed=rng.randint(0, 3),
                lines=rng.randint(1, 4),
                order=k,
            )
            for k in range(rng.randint(0, 8))
        ]
        shuffled = pool[:]
        rng.shuffle(shuffled)
        assert select_best(pool) == select_best(shuffled)


def test_selected_candidate_dominates_every_other_submittable_one() -> None:
    rng = random.Random(11)
    for _ in range(300):
        pool = [
            cand(
                rng.choice("abc"),
                ok=rng.random() < 0.6,
                passed=rng.randint(0, 3),
                lines=rng.randint(1, 3),
                order=k,
            )
            for k in range(rng.randint(1, 7))
        ]
        best = select_best(pool)
        ok = [c for c in pool if c.submittable]
        if not ok:
            assert best is None
            continue
        assert best is not None and best.submittable
        assert best.tests_passed == max(c.tests_passed for c in ok)
        top = [c for c in ok if c.tests_passed == best.tests_passed]
        assert best.diff_lines == min(c.diff_lines for c in top)
        assert best.votes == sum(1 for c in pool if c.key == best.key)


# --- best so far ---------------------------------------------------------------------------------


def test_best_so_far_starts_with_the_first() -> None:
    first = cand("a", passed=0)
    assert best_so_far(None, first) is first


def test_best_so_far_ties_keep_the_earlier() -> None:
    first, second = cand("a", passed=4, order=0), cand("b", passed=4, lines=1, order=1)
    assert best_so_far(first, second) is first


def test_best_so_far_takes_strict_improvements_only() -> None:
    first = cand("a", passed=4)
    assert best_so_far(first, cand("b", passed=5)).key == "b"
    assert best_so_far(first, cand("c", passed=3)) is first


def test_submittable_beats_unsubmittable() -> None:
    blocked = cand("a", ok=False, passed=9)
    fine = cand("b", passed=2)
    assert best_so_far(blocked, fine) is fine
    assert best_so_far(fine, blocked) is fine


@pytest.mark.parametrize("seed", range(5))
def test_best_so_far_is_monotone_over_random_runs(seed: int) -> None:
    """Prop. 1: the tracked (submittable, tests passed) never decreases; ties keep the earliest."""
    rng = random.Random(seed)
    for _ in range(200):
        seq = [
            cand(f"k{k}", ok=rng.random() < 0.5, passed=rng.randint(0, 6), order=k)
            for k in range(rng.randint(1, 12))
        ]
        best: CandidateScore | None = None
        history: list[CandidateScore] = []
        for c in seq:
            best = best_so_far(best, c)
            history.append(best)
        ranks = [(h.submittable, h.tests_passed) for h in history]
        assert ranks == sorted(ranks), "best-so-far went backwards"
        submittable_passed = [h.tests_passed for h in history if h.submittable]
        assert submittable_passed == sorted(submittable_passed)
        top = max((c.submittable, c.tests_passed) for c in seq)
        assert best is not None and (best.submittable, best.tests_passed) == top
        assert best.order == min(c.order for c in seq if (c.submittable, c.tests_passed) == top)


def test_fewest_changed_tokens_break_a_tie_in_lines_before_votes_and_order() -> None:
    # Issue #29: among plausible one-line patches, the smallest semantic change wins.
    a = replace(cand("a", lines=2, order=0), changed_tokens=4)
    b = replace(cand("b", lines=2, order=1), changed_tokens=2)
    c = replace(cand("a", lines=2, order=2, ok=False), changed_tokens=4)  # a vote for "a"
    best = select_best([a, b, c])
    assert best is not None and best.key == "b"


def test_changed_tokens_of_a_diff() -> None:
    from jobs.repair.state import changed_tokens

    def diff(old: str, new: str) -> str:
        return f"--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-{old}\n+{new}\n"

    assert changed_tokens(diff("    if a < b:", "    if a <= b:")) == 2
    assert changed_tokens(diff("    return x // 10", "    return x % 100")) == 4
    assert changed_tokens(diff("    f(a, b)", "    f(b, a)")) == 4  # a swap moves two tokens
    assert changed_tokens(diff("    H += 12", "    H -= 12")) == 2
