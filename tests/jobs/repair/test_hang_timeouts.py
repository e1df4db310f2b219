"""Hangs in the core: candidate timeouts after a baseline the hang probe stopped
(jobs.repair.testruns), and the ranking of a hung loop's lines (jobs.repair.tier0.localize)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from jobs.repair.budget import Budget
from jobs.repair.fakes import FakeClock, FakeWorkbench, ScriptedProposer, outcome, replace_proposal
from jobs.repair.loop import LoopConfig, RepairLoop
from jobs.repair.model import Failure, Frame
from jobs.repair.task import RepairTask
from jobs.repair.tier0.localize import localize
from jobs.repair.tier0.mutations import mutate
from jobs.repair.tier0.symbols import ParsedFile, SymbolTable, parse_file
from jobs.repair.workbench import TestOutcome

CORE = "src/search.py"
FILES = {CORE: "def find(xs, x):\n    lo = mid\n    return lo\n"}
HUNG = "tests/test_search.py::test_middle"
FIX = replace_proposal(CORE, "lo = mid\n", "lo = mid + 1\n")


def _loop(base: TestOutcome, config: LoopConfig) -> tuple[RepairLoop, FakeWorkbench]:
    clock = FakeClock()
    fixed = outcome([HUNG, "tests/test_search.py::test_empty"], [])
    bench = FakeWorkbench(FILES, base=base, judge=lambda files, select: fixed, clock=clock)
    return RepairLoop(None, ScriptedProposer([[FIX]]), bench, clock, config=config), bench


def test_after_a_probe_stopped_baseline_the_part_that_did_not_hang_sets_the_timeout() -> None:
    # The probe let the hung test run 10 s; the rest of the baseline (start-up, one test) took 0.5 s.
    base = replace(
        outcome(["tests/test_search.py::test_empty"], [HUNG], timed_out=True), duration_s=10.5, hang_s=10.0
    )
    config = LoopConfig(test_timeout_s=600, timeout_factor=4, timeout_floor_s=3, hang_probe_s=30)
    loop, bench = _loop(base, config)
    result = loop.run(RepairTask(kind="ci", test_command="pytest"), Budget(), "0")
    assert bench.calls[0].timeout_s == 600  # reproduction: the configured timeout
    assert {c.timeout_s for c in bench.calls[1:]} == {3.0}  # max(floor, 4 x 0.5 s), not the 30 s probe
    assert result.trace.reproduction.timings["candidate_timeout_s"] == 3.0
    recorded = result.trace.reproduction.baseline
    assert recorded is not None and recorded.hang_s == 10.0  # recorded, so a replay derives the same


def test_hang_s_survives_the_trace() -> None:
    run = TestOutcome(failed=(HUNG,), timed_out=True, duration_s=12.0, hang_s=10.0)
    assert TestOutcome.from_json(run.to_json()).hang_s == 10.0
    assert "hang_s" not in TestOutcome(duration_s=1.0).to_json()


class _Source:
    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(files)

    def read(self, path: str) -> str | None:
        return self._files.get(path)

    def files(self) -> Sequence[str]:
        return sorted(self._files)


SEARCH_PY = """def insertion_point(values, x):
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid] < x:
            lo = mid
        else:
            hi = mid
    return lo
"""
SEARCH_JS = """function insertionPoint(values, x) {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (values[mid] < x) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}
"""


@pytest.mark.parametrize(
    ("path", "source", "frame_line", "updates", "loop"),
    [
        ("sortedlist/search.py", SEARCH_PY, 3, {6, 8}, range(3, 9)),
        ("src/search.js", SEARCH_JS, 4, {7, 9}, range(4, 12)),
    ],
)
def test_a_hang_ranks_the_loops_updates_first(
    path: str, source: str, frame_line: int, updates: set[int], loop: range
) -> None:
    """Where the interruption caught a hung loop is chance: the assignments to the names of the
    loop's condition are the suspects, then the whole loop (the frame line is one of its lines)."""
    files = {path: source, "tests/test_search.py": "def test_middle():\n    pass\n"}
    table = SymbolTable.build(_Source(files))
    parsed: dict[str, ParsedFile | None] = {p: parse_file(p, t) for p, t in files.items()}
    failure = Failure(
        "tests/test_search.py::test_middle",
        "timeout",
        "timed out: the test ran longer than 10.0s; stopped as a hang",
        path=path,
        line=frame_line,
        frames=(Frame("tests/test_search.py", 2, "test_middle"), Frame(path, frame_line, "insertion_point")),
    )
    suspects = localize([failure], table, parse=parsed.get)
    assert {s.line for s in suspects[: len(updates)]} == updates
    assert all(s.reason == "hang" for s in suspects[: len(updates)])
    assert {s.line for s in suspects[: len(loop)]} == set(loop)
    # Any other failure type keeps the frame line first.
    plain = localize([replace(failure, type="AssertionError")], table, parse=parsed.get)
    assert plain[0].line == frame_line


@pytest.mark.parametrize(("path", "source", "line"), [("s.py", SEARCH_PY, 6), ("s.js", SEARCH_JS, 7)])
def test_a_loop_variable_that_does_not_move_gets_plus_minus_one(path: str, source: str, line: int) -> None:
    pf = parse_file(path, source)
    assert pf is not None
    got = {(m.operator, m.original, m.replacement) for m in mutate(pf, [line])}
    assert {("off_by_one", "mid", "mid + 1"), ("off_by_one", "mid", "mid - 1")} <= got
    # Only a variable of the loop's condition: other assignments are left alone.
    other = parse_file(
        "o.py", "def f(a, b):\n    c = a\n    while b:\n        d = a\n        b -= 1\n    return c + d\n"
    )
    assert other is not None
    assert not [m for m in mutate(other, [2, 4]) if m.note == "loop progress"]
