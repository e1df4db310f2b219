"""Flake-aware culprit finding: a Bayesian noisy bisection over an ordered range of commits.

Pure, like :mod:`jobs.repair.bisect`: it drives a probe (commit -> ``pass``/``fail``/``flaky``/
``skip``) and never runs anything itself. The difference is that here a probe may lie: at a
commit before the culprit the test still fails with the test's measured ``flake_rate`` (and, with
``miss_rate``, a commit at or after the culprit may pass). One run therefore never settles a
commit; instead a posterior over "commit k is the first bad one" is kept and updated by Bayes'
rule after every run, the next commit probed is the one whose run is expected to tell the most
(largest mutual information with the culprit), and the search stops when one commit's posterior
reaches ``confidence`` or the run ``budget`` is spent. This is the scheme of Google's flake-aware
culprit finder; with ``flake_rate == miss_rate == 0`` it reduces to the plain binary search.

Hypotheses are indices ``0..n-1`` (``commits[k]`` is the first bad commit) plus, when
``prior_no_culprit > 0``, "none": every commit is good and the red run was itself a flake.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Outcome = Literal["pass", "fail", "flaky", "skip"]
"""One probe's answer, as :data:`jobs.repair.bisect.Outcome` (that module delegates here)."""
NoisyStatus = Literal["found", "no_culprit", "budget", "inconclusive", "empty"]


@dataclass(frozen=True, slots=True)
class NoisyBisectResult:
    """The most probable culprit, its posterior probability and the runs spent.

    ``status`` is ``found`` when ``probability`` reached the confidence asked for, ``no_culprit``
    when "nothing in the range broke it" did, ``budget`` when the runs ran out first (``culprit``
    is then the most probable commit, ``probability`` says how sure), ``inconclusive`` when no
    testable commit is left whose run could change the posterior.
    """

    status: NoisyStatus
    culprit: str | None
    probability: float
    confidence: float
    flake_rate: float
    probes: tuple[tuple[str, Outcome], ...] = ()

    @property
    def runs(self) -> int:
        """Probes made (each one sandboxed run of the failing targets)."""
        return len(self.probes)

    def sentence(self) -> str:
        """One line for a report: ``culprit a1b2c3d with probability 97 % after 9 runs (flake rate 20 %)``."""
        rate = f"flake rate {self.flake_rate:.0%}"
        runs = f"{self.runs} run" + ("" if self.runs == 1 else "s")
        if self.status == "no_culprit":
            return f"no culprit in the range (probability {self.probability:.0%}) after {runs}; the red run was flaky ({rate})"
        if self.culprit is None:
            return f"no culprit found after {runs} ({rate})"
        sure = "" if self.status == "found" else f", below the {self.confidence:.0%} asked for"
        return (
            f"culprit {self.culprit[:7]} with probability {self.probability:.0%}{sure} after {runs} ({rate})"
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping for the trace."""
        return {
            "status": self.status,
            "culprit": self.culprit,
            "probability": round(self.probability, 4),
            "confidence": self.confidence,
            "flake_rate": self.flake_rate,
            "probes": [[sha, outcome] for sha, outcome in self.probes],
        }


def noisy_bisect(
    commits: Sequence[str],
    probe: Callable[[str], Outcome],
    *,
    flake_rate: float,
    confidence: float = 0.95,
    budget: int = 24,
    miss_rate: float = 0.0,
    prior_no_culprit: float = 0.0,
) -> NoisyBisectResult:
    """Find the first bad commit of ``commits`` (oldest first; the commit before the first is
    green, the last was seen red) with at most ``budget`` probes.

    ``flake_rate``: P(fail) of one run at a good commit; ``miss_rate``: P(pass) of one run at a bad
    commit; ``prior_no_culprit``: prior mass on "every commit is good" (0 trusts the red run).
    """
    if not 0.0 <= flake_rate < 1.0 or not 0.0 <= miss_rate < 1.0 or flake_rate + miss_rate >= 1.0:
        raise ValueError("need 0 <= flake_rate, miss_rate and flake_rate + miss_rate < 1")
    if not 0.0 < confidence <= 1.0 or not 0.0 <= prior_no_culprit < 1.0:
        raise ValueError("need 0 < confidence <= 1 and 0 <= prior_no_culprit < 1")
    n = len(commits)
    if n == 0:
        return NoisyBisectResult("empty", None, 0.0, confidence, flake_rate)
    post = [(1.0 - prior_no_culprit) / n] * n + [prior_no_culprit]  # index n: no culprit
    probes: list[tuple[str, Outcome]] = []
    untestable: set[int] = set()
    while True:
        best = max(range(n + 1), key=lambda k: (post[k], -k))
        if post[best] >= confidence:
            status: NoisyStatus = "no_culprit" if best == n else "found"
            return _result(status, commits, best, post, confidence, flake_rate, probes)
        if len(probes) >= budget:
            return _result("budget", commits, best, post, confidence, flake_rate, probes)
        i = _most_informative(post, flake_rate, miss_rate, untestable)
        if i is None:
            return _result("inconclusive", commits, best, post, confidence, flake_rate, probes)
        outcome = probe(commits[i])
        probes.append((commits[i], outcome))
        if outcome == "skip":
            untestable.add(i)
            continue
        # "flaky" (the probe saw both) is one pass and one fail
        for failed in {"fail": (True,), "pass": (False,), "flaky": (True, False)}[outcome]:
            post = _update(post, i, failed, flake_rate, miss_rate)


def _update(post: list[float], i: int, failed: bool, flake: float, miss: float) -> list[float]:
    """Bayes' rule for one run at index ``i``: it is bad under hypotheses ``k <= i``."""
    bad = (1.0 - miss) if failed else miss
    good = flake if failed else (1.0 - flake)
    new = [p * (bad if k <= i else good) for k, p in enumerate(post)]
    total = sum(new)
    if total <= 0.0:  # impossible under the model (e.g. a pass where misses are 0 everywhere): keep the prior
        return post
    return [p / total for p in new]


def _entropy(p: float) -> float:
    return 0.0 if p <= 0.0 or p >= 1.0 else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


def _most_informative(post: list[float], flake: float, miss: float, untestable: set[int]) -> int | None:
    """The testable index whose one run has the largest mutual information with the culprit
    (ties: the earliest), or None when no run can change the posterior."""
    n = len(post) - 1
    h_bad, h_good = _entropy(1.0 - miss), _entropy(flake)
    best, best_gain = None, 1e-12
    mass_bad = 0.0
    for i in range(n):
        mass_bad += post[i]  # P(commits[i] is bad) = P(k <= i)
        if i in untestable:
            continue
        p_fail = mass_bad * (1.0 - miss) + (1.0 - mass_bad) * flake
        gain = _entropy(p_fail) - (mass_bad * h_bad + (1.0 - mass_bad) * h_good)
        if gain > best_gain:
            best, best_gain = i, gain
    return best


def _result(
    status: NoisyStatus,
    commits: Sequence[str],
    best: int,
    post: list[float],
    confidence: float,
    flake_rate: float,
    probes: list[tuple[str, Outcome]],
) -> NoisyBisectResult:
    culprit = commits[best] if best < len(commits) else None
    return NoisyBisectResult(status, culprit, post[best], confidence, flake_rate, tuple(probes))


__all__ = ["NoisyBisectResult", "NoisyStatus", "noisy_bisect"]
