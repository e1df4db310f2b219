"""Tier 0 stops after HANG_STREAK candidates in a row hung in the same test, with that as its
reason (jobs.repair.candidates, jobs.repair.verdicts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jobs.repair.budget import Budget
from jobs.repair.candidates import HANG_STREAK, hung_in
from jobs.repair.fakes import FakeClock, FakeWorkbench, ScriptedProposer, outcome, replace_proposal
from jobs.repair.loop import LoopConfig, RepairLoop
from jobs.repair.model import Failure, Proposal
from jobs.repair.task import RepairTask
from jobs.repair.workbench import TestOutcome

CORE = "src/search.py"
FILES = {
    CORE: "".join(f"v{i} = {i}\n" for i in range(12)),
    "tests/test_search.py": "def test_middle():\n    pass\n",
}
HUNG = "tests/test_search.py::test_middle"
OTHER = "tests/test_search.py::test_other"


def _hung(test: str = HUNG) -> TestOutcome:
    return TestOutcome(
        failed=(test,),
        failures=(Failure(test, type="timeout", message="stopped as a hang"),),
        exit_code=1,
        duration_s=3.5,
        timed_out=True,
        hang_s=3.0,
    )


def _run(judged: Sequence[TestOutcome]) -> tuple[object, FakeWorkbench]:
    """One tier-0 round of len(judged) candidates; candidate i's target run is judged[i]."""
    proposals: list[Proposal] = [
        replace_proposal(CORE, f"v{i} = {i}\n", f"v{i} = {i + 100}\n") for i in range(len(judged))
    ]
    by_value = {f"v{i} = {i + 100}": judged[i] for i in range(len(judged))}

    def judge(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
        return next(o for text, o in by_value.items() if text in files[CORE])

    base = _hung()  # the baseline hung in HUNG: the target
    clock = FakeClock()
    bench = FakeWorkbench(FILES, base=base, judge=judge, clock=clock)
    proposer = ScriptedProposer([proposals], cap_at_n=False)
    loop = RepairLoop(None, proposer, bench, clock, config=LoopConfig(pairs=0))
    return loop.run(RepairTask(kind="ci", test_command="pytest"), Budget(), "0"), bench


def test_the_search_stops_after_a_streak_of_hangs_in_the_same_test() -> None:
    result, bench = _run([_hung()] * (HANG_STREAK + 3))
    assert result.candidates == HANG_STREAK  # type: ignore[attr-defined]
    assert len(bench.calls) == 1 + HANG_STREAK  # the baseline and one target run per candidate
    assert result.verdict == "budget_exhausted"  # type: ignore[attr-defined]
    assert result.reason == (  # type: ignore[attr-defined]
        f"search stopped after {HANG_STREAK} candidates: {HANG_STREAK} candidates in a row hung in "
        f"`{HUNG}` (each stopped after 3.0 s)"  # no "best candidate passed 0 tests" (#23)
    )
    events = [e for r in result.trace.rounds for e in r.events]  # type: ignore[attr-defined]
    assert f"3 candidates not run: {HANG_STREAK} candidates in a row hung in `{HUNG}`" in events[0]


def test_a_candidate_that_does_not_hang_or_hangs_elsewhere_restarts_the_count() -> None:
    failing = outcome([], [HUNG])
    judged = [_hung()] * (HANG_STREAK - 1) + [failing] + [_hung()] * (HANG_STREAK - 1) + [_hung(OTHER)]
    result, _ = _run([*judged, failing])
    assert result.candidates == len(judged) + 1  # type: ignore[attr-defined]
    assert "hung" not in result.reason  # type: ignore[attr-defined]


def test_hung_in_names_the_test_or_the_whole_run() -> None:
    assert hung_in(_hung()) == (HUNG, 3.0)
    killed = outcome(errors=("<run>",), timed_out=True, duration_s=20.0)
    assert hung_in(killed) == ("<run>", 20.0)
    assert hung_in(outcome([], [HUNG])) == ("", 0.0)
