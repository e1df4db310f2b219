"""Why a test is flaky, from measured runs: the plan of varied orders and the cause classifier.

Pure (issue #26 item 4). :func:`plan` lays out N runs of one test in varied orders: the test
alone (with a fixed and with varied ``PYTHONHASHSEED``), its file shuffled with a seed, and the
test right after each neighbour in its file. :func:`classify` reads the outcomes back:

* **order dependence** is structural: the test fails only after a given neighbour (it names the
  polluting test), or fails alone and passes only after one (a missing setter);
* **hash-order randomness**: alone, one fixed hash seed always gives the same outcome while
  varied seeds do not;
* otherwise the failure types and messages are matched against :data:`SIGNALS` (resource,
  network, concurrency/timing, time, randomness), in that order;
* last, a weak hint from the test's own code (what it imports and calls); ``unknown`` when
  nothing fits.

Every verdict carries its evidence lines ("failed 6/6 right after tests/test_a.py::test_set,
0/5 alone").
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

OrderKind = Literal["file", "alone", "alone-seed", "shuffled", "after"]
Cause = Literal[
    "order-dependence", "randomness", "time", "concurrency", "resource", "network", "unknown", "not-flaky"
]

FIXED_HASH_SEED = "0"
"""``PYTHONHASHSEED`` of the fixed-seed arm (varied runs use their run number + 1)."""


@dataclass(frozen=True, slots=True)
class Order:
    """One planned run: which tests run, in which order, and under which hash seed."""

    kind: OrderKind
    tests: tuple[str, ...]
    hash_seed: str
    seed: int | None = None
    """The shuffle seed (``shuffled`` runs)."""
    after: str | None = None
    """The neighbour that runs first (``after`` runs)."""


@dataclass(frozen=True, slots=True)
class Observed:
    """The target test's outcome in one planned run."""

    order: Order
    outcome: str
    """``passed``, ``failed``, ``error``, ``skipped`` or ``absent`` (the run did not report it)."""
    type: str | None = None
    message: str = ""

    @property
    def failed(self) -> bool:
        """Failed or errored."""
        return self.outcome in ("failed", "error")


def plan(test_id: str, neighbours: Sequence[str], runs: int, *, seed: int = 0) -> list[Order]:
    """``runs`` orders cycling: alone (fixed hash seed), after the next neighbour, the file
    shuffled, alone (varied hash seed). The first run is the file in its own order."""
    file_tests = tuple(dict.fromkeys((*neighbours, test_id)))
    others = [n for n in file_tests if n != test_id]
    rng = random.Random(seed)
    out: list[Order] = [Order("file", file_tests, str(1))] if runs > 0 else []
    cycle: list[OrderKind] = (
        ["alone-seed", "after", "shuffled", "alone"] if others else ["alone-seed", "alone"]
    )
    i = 0
    while len(out) < runs:
        kind = cycle[i % len(cycle)]
        n = len(out)
        if kind == "alone-seed":
            out.append(Order(kind, (test_id,), FIXED_HASH_SEED))
        elif kind == "alone":
            out.append(Order(kind, (test_id,), str(n + 1)))
        elif kind == "after":
            before = others[(i // len(cycle)) % len(others)]
            out.append(Order(kind, (before, test_id), str(n + 1), after=before))
        else:
            s = rng.randrange(2**31)
            shuffled = list(file_tests)
            random.Random(s).shuffle(shuffled)
            out.append(Order(kind, tuple(shuffled), str(n + 1), seed=s))
        i += 1
    return out


@dataclass(frozen=True, slots=True)
class Signal:
    """One row of :data:`SIGNALS`: failure types and message words that point at a cause."""

    cause: Cause
    types: re.Pattern[str]
    message: re.Pattern[str]


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


SIGNALS: tuple[Signal, ...] = (
    Signal(
        "resource",
        _rx(r"MemoryError|ResourceWarning|BlockingIOError|OSError|PermissionError|FileExistsError"),
        _rx(r"too many open files|no space left|address already in use|cannot allocate|disk quota|resource"),
    ),
    Signal(
        "network",
        _rx(
            r"Connection\w*Error|gaierror|URLError|SSLError|HTTPError|socket\.|ProxyError|RemoteDisconnected"
        ),
        _rx(
            r"connection refused|name or service not known|name resolution|network is unreachable|getaddrinfo"
        ),
    ),
    Signal(
        "concurrency",
        _rx(r"TimeoutError|Timeout|Deadlock|BrokenBarrierError|CancelledError"),
        _rx(
            r"\bthread|\brace\b|deadlock|\block\b|concurren|timed? ?out|asyncio|\bworker|\bqueue|\bevent\.|\bsleep"
        ),
    ),
    Signal(
        "time",
        _rx(r"^$"),
        _rx(
            r"datetime|timestamp|time\.time|\bnow\(|\bhour|\bminute|\.second|\bweekday|timezone|\butc|\bclock|\bmonotonic|\bdate\b"
        ),
    ),
    Signal(
        "randomness",
        _rx(r"^$"),
        _rx(r"\brandom|\bseed|shuffle|uuid|\bsample\(|\bchoice\("),
    ),
)
"""Failure evidence per cause, checked in this order (the first that most failures match wins)."""


@dataclass(frozen=True)
class Diagnosis:
    """The cause of a flaky test, how sure, the rate, and the evidence lines."""

    test_id: str
    cause: Cause
    runs: int
    failures: int
    polluter: str | None = None
    evidence: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Failure rate over the runs that reported the test."""
        return self.failures / self.runs if self.runs else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The ``arcs deflake --json`` verdict."""
        return {
            "test": self.test_id,
            "cause": self.cause,
            "runs": self.runs,
            "failures": self.failures,
            "rate": round(self.rate, 4),
            "polluter": self.polluter,
            "evidence": list(self.evidence),
        }


def _count(rows: Sequence[Observed]) -> tuple[int, int]:
    return sum(r.failed for r in rows), len(rows)


def function_body(text: str, test_id: str) -> str:
    """The body of ``test_id``'s function in its file's ``text`` ("" when not found)."""
    name = test_id.rsplit("::", 1)[-1].split("[", 1)[0]
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(rf"^(\s*)(?:async\s+)?def\s+{re.escape(name)}\s*\(", line)
        if m is None:
            continue
        indent = len(m.group(1))
        end = next(
            (
                j
                for j in range(i + 1, len(lines))
                if lines[j].strip() and len(lines[j]) - len(lines[j].lstrip()) <= indent
            ),
            len(lines),
        )
        return "\n".join(lines[i:end])
    return ""


_SOURCE_HINTS: dict[Cause, re.Pattern[str]] = {
    "resource": _rx(r"\bresource\.|setrlimit|\bmmap\b|tempfile|\bopen\("),
    "network": _rx(r"\bsocket\b|create_connection|requests\.|urlopen|http\.client|aiohttp"),
    "concurrency": _rx(r"\bthreading\b|Thread\(|multiprocessing|asyncio|concurrent\.futures|\bsleep\("),
    "time": _rx(r"datetime|time\.time|\bnow\(|monotonic|perf_counter|\bdate\.today"),
    "randomness": _rx(r"\brandom\.|\buuid|shuffle|secrets\.|np\.random"),
}
"""Weak hints from the test's own code, read only when no failure message tells (table order wins)."""


def classify(test_id: str, observed: Sequence[Observed], source: str = "") -> Diagnosis:
    """The likely cause of ``test_id``'s flakiness from its outcomes in varied orders.

    ``source`` (the test function's code, :func:`function_body`) is the last resort: a weak hint
    when neither the order of the runs nor the failure messages tell."""
    seen = [o for o in observed if o.outcome != "absent"]
    fails, total = _count(seen)
    evidence = [f"failed {fails} of {total} runs in varied orders"]
    by_kind: dict[str, list[Observed]] = {}
    for o in seen:
        by_kind.setdefault("alone" if o.order.kind == "alone-seed" else o.order.kind, []).append(o)
    for kind in ("alone", "after", "shuffled", "file"):
        f, n = _count(by_kind.get(kind, []))
        if n:
            evidence.append(f"  {kind}: failed {f}/{n}")
    if total == 0:
        return Diagnosis(test_id, "unknown", 0, 0, None, [*evidence, "the runs never reported the test"])
    if fails == 0:
        return Diagnosis(test_id, "not-flaky", total, 0, None, [*evidence, "never failed: raise --runs"])
    alone_f, alone_n = _count(by_kind.get("alone", []))
    if fails == total:
        return Diagnosis(
            test_id,
            "not-flaky",
            total,
            fails,
            None,
            [*evidence, "failed every run: a real failure, not a flake"],
        )
    order = _order_dependence(test_id, seen, alone_f, alone_n)
    if order is not None:
        polluter, line = order
        return Diagnosis(test_id, "order-dependence", total, fails, polluter, [*evidence, line])
    fixed = [o for o in seen if o.order.kind == "alone-seed"]
    varied = [o for o in seen if o.order.kind == "alone"]
    if len(fixed) >= 2 and len(varied) >= 2:
        ff, fn = _count(fixed)
        vf, vn = _count(varied)
        p = vf / vn
        # Steady under the fixed seed, and unlikely to be by chance at the varied arm's rate.
        chance = (1 - p) ** fn if ff == 0 else p**fn
        if ff in (0, fn) and 0 < vf < vn and chance < 0.1:
            line = f"alone with PYTHONHASHSEED={FIXED_HASH_SEED}: failed {ff}/{fn} (steady); varied seeds: {vf}/{vn}"
            return Diagnosis(
                test_id, "randomness", total, fails, None, [*evidence, line, "hash-order dependence"]
            )
    failed = [o for o in seen if o.failed]
    best: tuple[int, Signal] | None = None
    for signal in SIGNALS:
        hits = sum(
            1
            for o in failed
            if (o.type and signal.types.search(o.type))
            or signal.message.search(f"{o.type or ''} {o.message}")
        )
        if hits and (best is None or hits > best[0]):
            best = (hits, signal)
    if best is not None:
        hits, signal = best
        sample = next(
            o
            for o in failed
            if signal.message.search(f"{o.type or ''} {o.message}")
            or (o.type and signal.types.search(o.type))
        )
        first = (sample.message.splitlines() or [""])[0][:160]
        line = f"{hits}/{len(failed)} failures point at {signal.cause}: {sample.type or 'failure'}: {first}"
        return Diagnosis(test_id, signal.cause, total, fails, None, [*evidence, line])
    for cause, pattern in _SOURCE_HINTS.items():
        hint = pattern.search(source)
        if hint is not None:
            line = (
                f"no telling failure message; the test's code uses `{hint.group(0)}` (a hint from the code)"
            )
            return Diagnosis(test_id, cause, total, fails, None, [*evidence, line])
    return Diagnosis(
        test_id, "unknown", total, fails, None, [*evidence, "no order effect and no telling failure message"]
    )


def _order_dependence(
    test_id: str, seen: Sequence[Observed], alone_f: int, alone_n: int
) -> tuple[str, str] | None:
    """(neighbour, evidence) when the outcome follows whether one neighbour ran first."""
    after: dict[str, list[Observed]] = {}
    for o in seen:
        if o.order.kind == "after" and o.order.after:
            after.setdefault(o.order.after, []).append(o)
    if alone_n < 2 or not after:
        return None
    rates = {n: _count(rows) for n, rows in after.items()}
    if alone_f == 0:
        # Fails only after a polluter: every run right after it failed, and in the multi-test
        # orders every failure had it earlier.
        for n, (f, k) in sorted(rates.items(), key=lambda kv: -kv[1][0] / kv[1][1]):
            if f == k and k >= 1 and _consistent(test_id, seen, n, fails_with=True):
                return n, f"failed {f}/{k} right after {n}, 0/{alone_n} alone: {n} leaves state behind"
    elif alone_f == alone_n:
        for n, (f, k) in rates.items():
            if f == 0 and k >= 1 and _consistent(test_id, seen, n, fails_with=False):
                return (
                    n,
                    f"failed {alone_n}/{alone_n} alone, passed {k}/{k} right after {n}: it relies on {n}'s state",
                )
    return None


def _consistent(test_id: str, seen: Sequence[Observed], neighbour: str, *, fails_with: bool) -> bool:
    """In the file and shuffled orders, the outcome agrees with 'neighbour ran earlier'."""
    for o in seen:
        if o.order.kind not in ("file", "shuffled") or test_id not in o.order.tests:
            continue
        earlier = neighbour in o.order.tests[: o.order.tests.index(test_id)]
        if (earlier == fails_with) != o.failed:
            return False
    return True


__all__ = [
    "FIXED_HASH_SEED",
    "SIGNALS",
    "Diagnosis",
    "Observed",
    "Order",
    "Signal",
    "classify",
    "function_body",
    "plan",
]
