"""Choosing among executed candidates, and best-so-far tracking across rounds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class CandidateScore:
    """What selection needs to know about one executed candidate.

    ``key`` is the candidate's :func:`~jobs.repair.diffing.patch_key`; ``submittable`` means
    every gate passed; ``diff_lines`` is the size of its (normalized) diff; ``order`` its
    position in proposal order (breaks the last ties, so selection is deterministic); ``votes``
    is filled in by :func:`select_best` from the candidates sharing ``key``; ``targets_fixed`` is
    how many target tests pass with it (tier 0 ranks a candidate that fixes every target above one
    that fixes some, whatever else they pass: :func:`best_so_far`).
    """

    key: str
    submittable: bool
    tests_passed: int
    diff_lines: int
    order: int
    votes: int = 1
    targets_fixed: int = 0
    changed_tokens: int = 0
    """Tokens the diff removes plus adds (:func:`jobs.repair.state.changed_tokens`)."""


def _rank(c: CandidateScore) -> tuple[int, int, int, int, int]:
    return (-c.tests_passed, c.diff_lines, c.changed_tokens, -c.votes, c.order)


def select_best(candidates: Sequence[CandidateScore]) -> CandidateScore | None:
    """The best submittable candidate, or None when none is submittable.

    The rule among plausible candidates (language-neutral, issue #29): most tests passed, then
    smallest diff, then fewest changed tokens (the smallest semantic change), then most agreement (how many candidates — of all,
    submittable or not — produced the same patch key), then earliest in proposal order. The
    returned value has ``votes`` set.
    """
    votes = Counter(c.key for c in candidates)
    pool = [replace(c, votes=votes[c.key]) for c in candidates if c.submittable]
    if not pool:
        return None
    return min(pool, key=_rank)


def best_so_far(previous: CandidateScore | None, new: CandidateScore) -> CandidateScore:
    """Best-so-far tracking (seed 000, Prop. 1): ``new`` replaces ``previous`` only if strictly better.

    Better means: submittable beats not submittable, then more target tests fixed, then more tests
    passed. Ties keep the earlier candidate. Hence, once a submittable candidate is held (it fixes
    every target), tests passed never decreases, a candidate that failed a gate never displaces
    one that passed them all, and one that fixes some targets never displaces one that fixes more
    (its own count of passing tests may be larger only because the whole suite ran for the other).
    """
    if previous is None:
        return new
    if (new.submittable, new.targets_fixed, new.tests_passed) > (
        previous.submittable,
        previous.targets_fixed,
        previous.tests_passed,
    ):
        return new
    return previous
