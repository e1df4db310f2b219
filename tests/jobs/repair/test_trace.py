"""The trace: versioned JSON, markdown and summary renderings, replay comparison and replay itself."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from indexing.model import Chunk, Query, SearchHit
from jobs.repair.budget import Budget
from jobs.repair.fakes import FakeClock, FakeRetriever, FakeWorkbench, ScriptedLLM, outcome
from jobs.repair.llm import scripted_response
from jobs.repair.loop import RepairLoop, RepairResult
from jobs.repair.model import Failure, Frame
from jobs.repair.proposers.anthropic import PROPOSE_TOOL, AnthropicProposer
from jobs.repair.proposers.replay import RecordingLLM, ReplayDivergence, ReplayLLM
from jobs.repair.task import RepairTask
from jobs.repair.trace import (
    TRACE_VERSION,
    RecordedRetriever,
    ReplayMismatch,
    Trace,
    compare_outcomes,
    dump_trace,
    load_trace,
    render_markdown,
    render_summary,
)
from jobs.repair.workbench import TestOutcome

CORE = "calc/core.py"
FILES = {
    CORE: "def is_adult(age):\n    return age > 18\n",
    "tests/test_core.py": "def test_adult():\n    pass\n",
}
T = "tests/test_core.py::test_adult"
FAILURE = Failure(
    T,
    "AssertionError",
    "assert False",
    "tests/test_core.py",
    2,
    (Frame("tests/test_core.py", 2, "test_adult"),),
)
BASE = outcome(["tests/test_core.py::test_child"], {T: FAILURE})


def judge(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
    if "age >= 18" in files[CORE]:
        return outcome([T, "tests/test_core.py::test_child"])
    return BASE


def propose(new: str, explanation: str) -> Any:
    return scripted_response(
        tool=(
            PROPOSE_TOOL.name,
            {
                "explanation": explanation,
                "edits": [{"path": CORE, "kind": "replace", "old": "return age > 18", "new": new}],
            },
        )
    )


SCRIPT = [
    propose("return age > 19", "off by one the other way"),
    propose("return age >= 18", "18-year-olds are adults: compare with >="),
]


def retriever() -> FakeRetriever:
    chunk = Chunk(CORE, "python", "function", "is_adult", "calc.core.is_adult", 1, 2, FILES[CORE])
    return FakeRetriever([SearchHit(chunk, 0.87, ("dense",))])


def run(llm: Any, retr: Any, task: RepairTask | None = None) -> RepairResult:
    wb = FakeWorkbench(FILES, base=BASE, judge=judge)
    loop = RepairLoop(retr, AnthropicProposer(llm), wb, FakeClock(tick=0.25), llm=llm)
    return loop.run(task or RepairTask(kind="ci", test_command="pytest"), Budget(), "large")


@pytest.fixture
def recorded() -> tuple[RepairResult, RecordingLLM]:
    recording = RecordingLLM(ScriptedLLM(SCRIPT))
    result = run(recording, retriever())
    result.trace.llm_calls = [r.to_json() for r in recording.records]
    result.trace.index_snapshot = "abc123:hash:2f3c"
    return result, recording


def test_json_round_trip_is_exact(recorded: tuple[RepairResult, RecordingLLM]) -> None:
    result, _ = recorded
    trace = result.trace
    text = dump_trace(trace)
    data = json.loads(text)
    assert data["format"] == "arcs-trace" and data["version"] == TRACE_VERSION
    assert data["bound_held"] is True and data["best_so_far"] == [2]
    again = load_trace(text)
    assert dump_trace(again) == text
    assert again.outcome.patch == result.patch and again.candidates[1].gate("regressions") is not None
    rnd = data["rounds"][0]
    assert rnd["evidence"][0]["id"].startswith("frame:") or rnd["evidence"][0]["id"] == f"{CORE}:1-2"
    assert rnd["retrieval"]["queries"][0]["hits"][0]["text"] == FILES[CORE]  # replayable without the index
    assert rnd["prompt"] and "Observed failures" in rnd["prompt"]
    assert len(data["llm_calls"]) == 2 and data["rounds"][0]["usage"]["calls"] == 2


def test_load_rejects_other_documents() -> None:
    with pytest.raises(ValueError, match="not JSON"):
        load_trace("{nope")
    with pytest.raises(ValueError, match="not an ARCS trace"):
        load_trace(json.dumps({"version": 1}))
    with pytest.raises(ValueError, match="unsupported trace version"):
        load_trace(json.dumps({"format": "arcs-trace", "version": TRACE_VERSION + 1}))


def test_markdown_is_collapsible_and_complete(recorded: tuple[RepairResult, RecordingLLM]) -> None:
    md = render_markdown(recorded[0].trace)
    assert md.startswith("## ARCS: FIXED")
    assert "```diff\n" in md and "+    return age >= 18" in md
    assert "- [x] regressions:" in md and "- [x] targets:" in md
    assert md.count("<details>") == md.count("</details>") >= 4
    assert "<summary>Round 1 (tier large): 2 candidates, best-so-far 2 tests</summary>" in md
    assert "| Tokens / cost |" in md and "Best-so-far tests passed per round: 2" in md
    assert "rejected by targets" in md  # the first candidate's story is told too


def test_summary_fits_one_screen(recorded: tuple[RepairResult, RecordingLLM]) -> None:
    text = render_summary(recorded[0].trace, trace_path="/tmp/t.json")
    lines = text.splitlines()
    assert len(lines) <= 12 and all(len(line) <= 160 for line in lines)
    assert lines[0].startswith("ARCS: FIXED — tier large, 1 round, 2 candidates")
    assert "before 1 passed, 1 failed  ->  after 2 passed, 0 failed" in text
    assert "calc/core.py (+1 -1)" in text and "trace:  /tmp/t.json" in text and "budget held" in text


def test_compare_outcomes_equality_and_divergence(recorded: tuple[RepairResult, RecordingLLM]) -> None:
    trace = recorded[0].trace
    same = load_trace(dump_trace(trace))
    same.timings = {"total_s": 999.0}
    same.rounds[0].timings = {"total_s": 123.0}
    same.id, same.created = "other", "2030-01-01"
    assert compare_outcomes(trace, same) is None  # timings, ids and dates do not count

    changed = load_trace(dump_trace(trace))
    changed.rounds[0].candidates[1].patch_key = "0" * 16
    d = compare_outcomes(trace, changed)
    assert d is not None and (d.where, d.field) == ("round 1 candidate r1c2", "patch")
    assert "diverged at round 1 candidate r1c2" in str(d)

    verdict = load_trace(dump_trace(trace))
    verdict.outcome.verdict = "budget_exhausted"
    d = compare_outcomes(trace, verdict)
    assert d is not None and (d.where, d.field, d.expected, d.got) == (
        "outcome",
        "verdict",
        "fixed",
        "budget_exhausted",
    )

    fewer = copy.deepcopy(trace)
    fewer.rounds.append(copy.deepcopy(trace.rounds[0]))
    d = compare_outcomes(trace, fewer)
    assert d is not None and d.field == "rounds"


def test_replay_with_recorded_llm_and_retrieval_reproduces(
    recorded: tuple[RepairResult, RecordingLLM],
) -> None:
    result, recording = recorded
    trace = load_trace(dump_trace(result.trace))
    replay_llm = ReplayLLM(recording.records)
    replayed = run(replay_llm, RecordedRetriever(trace))
    assert compare_outcomes(trace, replayed.trace) is None
    assert replay_llm.exhausted and replayed.patch == result.patch


def test_replay_reports_where_it_diverges(recorded: tuple[RepairResult, RecordingLLM]) -> None:
    result, recording = recorded
    trace = load_trace(dump_trace(result.trace))
    other_task = RepairTask(kind="ci", test_command="python -m pytest -x")
    with pytest.raises(ReplayDivergence, match="call 0"):
        run(ReplayLLM(recording.records), retriever(), other_task)
    with pytest.raises(ReplayMismatch, match="retrieval query 1 differs"):
        run(ReplayLLM(recording.records), RecordedRetriever(trace), other_task)


def test_recorded_retriever_checks_the_queries(recorded: tuple[RepairResult, RecordingLLM]) -> None:
    trace: Trace = recorded[0].trace
    r = RecordedRetriever(trace)
    first = trace.rounds[0].retrieval["queries"][0]
    hits = r.search(Query(text=first["text"]))
    assert [h.chunk.path for h in hits] == [CORE] and hits[0].score == pytest.approx(0.87)
    with pytest.raises(ReplayMismatch, match="differs"):
        RecordedRetriever(trace).search(Query(text="something else"))
    r.position = len(r.entries)
    with pytest.raises(ReplayMismatch, match="not recorded"):
        r.search(Query(text="x"))


def test_trace_of_a_reproduction_verdict() -> None:
    wb = FakeWorkbench(FILES, base=outcome([T]))
    loop = RepairLoop(None, AnthropicProposer(ScriptedLLM([])), wb, FakeClock())
    result = loop.run(RepairTask(kind="ci", test_command="pytest"), Budget(), "0")
    text = render_summary(result.trace)
    assert (
        text.startswith("ARCS: NOT REPRODUCIBLE — tier 0 (not started), 0 rounds")
        and "the test command passes" in text
    )
    md = render_markdown(result.trace)
    assert "**not_reproducible**" in md and "### Patch" not in md
    assert replace(result.trace.outcome).fixed is False
