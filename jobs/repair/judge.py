"""How a candidate stands, and what verdict its final run earns (pure; issue #23).

The README's definitions, as code:

* **fixed**: the exact test command exited 0 on the patched tree;
* **partial**: every target test passes and the command still fails *only* on tests proven failing
  at a known-good baseline (:class:`KnownGood`: the last green commit's tree, or a CI history). With
  no known-good baseline every failing test is a target, so ``partial`` is impossible there;
* anything else is **not fixed**. The report then names the best candidate as "best: k of n
  targets" (:func:`best_of`), and nothing publishes it.

:class:`Standing` is one candidate's position against the targets; :func:`rank_key` orders
standings (a candidate that fixes every target above one that fixes some, then fewer new failures,
fewer behaviour changes no test checks, more tests passing, a smaller diff, earlier). Tier 0's
choice of the best candidate, the final decision (:func:`decide`) and later "most plausible"
selection (#29, #30) all read these, so they live here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Decision = Literal["fixed", "partial", "not_fixed"]


def proven_failing(test_id: str, before: Iterable[str]) -> bool:
    """``test_id`` (or the test it is a parametrization/member of) is one of ``before``."""
    known = frozenset(before)
    if test_id in known:
        return True
    return any(
        test_id.startswith(b) and test_id[len(b) :].startswith(("::", "[", "/", "#", ".")) for b in known
    )


@dataclass(frozen=True, slots=True)
class KnownGood:
    """A known-good baseline: where it comes from, and the tests proven failing there too."""

    source: str
    """One phrase: ``the last green commit 1a2b3c4`` or ``the CI history``."""
    failing: frozenset[str] = frozenset()
    """Tests that fail at the known-good baseline as well (not caused by the change)."""
    checked: frozenset[str] = frozenset()
    """Tests that were run there (a test outside this set is not proven either way)."""

    def proves(self, test_id: str) -> bool:
        """``test_id`` is proven failing at the known-good baseline."""
        return proven_failing(test_id, self.failing)

    def to_json(self) -> dict[str, Any]:
        """The trace's record."""
        return {"source": self.source, "failing": sorted(self.failing), "checked": sorted(self.checked)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> KnownGood | None:
        """Inverse of :meth:`to_json` (None for no record)."""
        if not data or not isinstance(data.get("source"), str):
            return None
        return cls(
            source=data["source"],
            failing=frozenset(str(t) for t in data.get("failing") or ()),
            checked=frozenset(str(t) for t in data.get("checked") or ()),
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    """What :func:`decide` concluded about one final run."""

    decision: Decision
    pre_existing: tuple[str, ...] = ()
    """``partial``: the tests that still fail, each proven failing at the known-good baseline."""
    failing_targets: tuple[str, ...] = ()
    """Targets that still fail (never ``fixed`` or ``partial`` then)."""
    unproven: tuple[str, ...] = ()
    """Non-target tests that still fail and are not proven failing at the known-good baseline."""

    @property
    def accepted(self) -> bool:
        """``fixed`` or ``partial``."""
        return self.decision != "not_fixed"


def decide(
    *,
    exit_ok: bool,
    targets: Sequence[str],
    passing_targets: Iterable[str],
    failing: Iterable[str],
    known_good: KnownGood | None,
) -> Verdict:
    """The verdict of a final run of the exact command.

    ``exit_ok``: it exited 0 (and did not time out). ``passing_targets``: the targets that passed in
    it; ``failing``: every test id that failed or errored in it. ``partial`` needs every target
    passing, something still failing, and each failure proven at ``known_good``."""
    if exit_ok:
        return Verdict("fixed")
    passed = set(passing_targets)
    failing_targets = tuple(t for t in dict.fromkeys(targets) if t not in passed)
    rest = sorted(t for t in set(failing) if t not in set(targets))
    if known_good is None:
        return Verdict("not_fixed", failing_targets=failing_targets, unproven=tuple(rest))
    unproven = tuple(t for t in rest if not known_good.proves(t))
    if failing_targets or unproven or not rest:
        return Verdict("not_fixed", failing_targets=failing_targets, unproven=unproven)
    return Verdict("partial", pre_existing=tuple(rest))


@dataclass(frozen=True, slots=True)
class Standing:
    """One executed candidate against the targets (what ranking and the report need)."""

    candidate: str
    targets: int
    """How many targets there are (n)."""
    fixed: int
    """How many of them pass with the candidate (k)."""
    new_failures: int = 0
    """Tests failing with the candidate that the baseline did not see fail."""
    tests_passed: int = 0
    diff_lines: int = 0
    order: int = 0
    behaviour_changes: int = 0
    """Results the behaviour probe saw change on inputs no test checks (0: none, or not probed)."""
    timed_out: bool = False

    @property
    def all_targets(self) -> bool:
        """Every target passes."""
        return self.targets > 0 and self.fixed >= self.targets

    def line(self) -> str:
        """``best: 1 of 4 targets (r2c3)``, and how many tests that passed before fail with it."""
        head = f"best: {self.fixed} of {self.targets} target{'s' if self.targets != 1 else ''} ({self.candidate})"
        if self.new_failures:
            n = self.new_failures
            head += f", but {n} test{'s' if n != 1 else ''} that passed before fail{'s' if n == 1 else ''} with it"
        return head

    def to_json(self) -> dict[str, Any]:
        """The trace's record."""
        return {
            "candidate": self.candidate,
            "targets": self.targets,
            "fixed": self.fixed,
            "new_failures": self.new_failures,
            "tests_passed": self.tests_passed,
            "diff_lines": self.diff_lines,
            "behaviour_changes": self.behaviour_changes,
        }


def rank_key(s: Standing) -> tuple[int, int, int, int, int, int, int, int]:
    """Smaller is better: every target fixed first, then more targets, fewer new failures, no
    timeout, fewer unchecked behaviour changes, more tests passing, a smaller diff, earlier."""
    return (
        0 if s.all_targets else 1,
        -s.fixed,
        s.new_failures,
        1 if s.timed_out else 0,
        s.behaviour_changes,
        -s.tests_passed,
        s.diff_lines,
        s.order,
    )


def best_of(standings: Iterable[Standing]) -> Standing | None:
    """The best standing that fixes at least one target (None when none does)."""
    useful = [s for s in standings if s.fixed > 0]
    return min(useful, key=rank_key) if useful else None


@dataclass(frozen=True, slots=True)
class BestCandidate:
    """The report's "best: k of n targets" for a run that is not fixed: never published."""

    standing: Standing
    patch: str
    explanation: str = ""
    behaviour: Mapping[str, Any] = field(default_factory=dict)
    """The behaviour probe's record of this candidate (empty when it was not probed)."""

    def to_json(self) -> dict[str, Any]:
        """The trace's ``outcome.best``."""
        return {
            **self.standing.to_json(),
            "patch": self.patch,
            "explanation": self.explanation,
            "behaviour": dict(self.behaviour),
        }


__all__ = [
    "BestCandidate",
    "Decision",
    "KnownGood",
    "Standing",
    "Verdict",
    "best_of",
    "decide",
    "proven_failing",
    "rank_key",
]
