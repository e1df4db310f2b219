"""The tolerant trace reader's tool calls (#15) and change since the last green run (#14):
typed values from a real trace's shape, and nothing raised for old or malformed documents."""

from __future__ import annotations

import json
from typing import Any

from jobs.repair.bisect import BisectResult
from jobs.repair.report import Culprit
from jobs.repair.trace import RoundRecord, Trace, load_trace
from jobs.repair.trace_parts import ARGUMENTS_CHARS, MAX_TOOL_RESULT, ToolCallDoc, turn_totals
from jobs.repair.trace_read import TraceDoc

SHAS = [f"{i:x}" * 40 for i in range(1, 5)]


def tool_call(**over: Any) -> dict[str, Any]:
    """One entry of the tool session's log (jobs.repair.tools_session.ToolSession.call)."""
    call: dict[str, Any] = {
        "variant": "main",
        "turn": 1,
        "id": "toolu_01",
        "name": "open",
        "input": {"path": "calc/core.py", "start": 1, "end": 40},
        "ok": True,
        "refused": "",
        "result": "def is_adult(age):\n    return age > 18\n",
        "result_chars": 40,
        "executions": 0,
        "turn_tokens": 1200,
        "turn_usd": 0.0036,
    }
    return {**call, **over}


def changes_record() -> dict[str, Any]:
    """``trace.repo["changes"]`` as jobs.culprit.after_loop writes it (bisected, reverted)."""
    culprit = Culprit(SHAS[2], "rules: adults are older", "Ada", "bisect", 2)
    found = BisectResult("found", SHAS[2], (SHAS[2],), ((SHAS[1], "pass"), (SHAS[2], "fail")))
    return {
        "base": SHAS[0],
        "head": SHAS[3],
        "commits": [
            {"sha": SHAS[1], "title": "docs: a note", "author": "Ada"},
            {"sha": SHAS[2], "title": culprit.title, "author": "Ada"},
            {"sha": SHAS[3], "title": "docs: another note", "author": "Bob"},
        ],
        "files": ["notes.md", "rules.py"],
        "truncated": False,
        "source": "since the last green run 9001 on main",
        "bisect": found.to_json(),
        "culprit": culprit.to_json(),
        "revert": {"sha": SHAS[2], "passed": True},
    }


def a_trace(tool_calls: list[Any] | None = None, changes: object = None) -> dict[str, Any]:
    """A real ``Trace.to_json`` document with one round."""
    trace = Trace(model="m", proposer="p")
    trace.rounds.append(RoundRecord(index=0, tier="large", tool_calls=list(tool_calls or [])))
    data = trace.to_json()
    if changes is not None:
        data["repo"] = {**data.get("repo", {}), "changes": changes}
    return data


def test_a_rounds_tool_calls_are_typed() -> None:
    refused = tool_call(
        id="toolu_02", turn=2, name="run_tests", input={"select": ["t"]}, ok=False, refused="executions"
    )
    ran = tool_call(id="toolu_03", turn=2, name="run_tests", executions=1, result="1 passed", result_chars=8)
    data = a_trace([tool_call(), refused, ran])
    assert load_trace(json.dumps(data)).rounds[0].tool_calls  # the strict reader keeps them too
    calls = TraceDoc.read(data).rounds[0].tool_calls
    assert [c.name for c in calls] == ["open", "run_tests", "run_tests"]
    first = calls[0]
    assert first.arguments == '{"end": 40, "path": "calc/core.py", "start": 1}'
    assert (first.ok, first.refused, first.status, first.result_chars) == (True, "", "ok", 40)
    assert (first.variant, first.turn, first.id, first.turn_tokens) == ("main", 1, "toolu_01", 1200)
    assert calls[1].status == "refused (executions)" and not calls[1].ok
    assert calls[2].executions == 1 and calls[2].result == "1 passed"
    # Turn 2 asked for two calls: its tokens count once.
    assert turn_totals(calls) == (2400, 0.0072)


def test_old_and_malformed_tool_calls_never_raise() -> None:
    assert TraceDoc.read(a_trace()).rounds[0].tool_calls == ()  # a trace from before #15
    data = a_trace()
    data["rounds"][0]["tool_calls"] = "not a list"
    assert TraceDoc.read(data).rounds[0].tool_calls == ()
    huge = "x" * (MAX_TOOL_RESULT + 500)
    data["rounds"][0]["tool_calls"] = [
        None,
        "open",
        42,
        {
            "name": ["not", "text"],
            "turn": "two",
            "executions": -3,
            "turn_usd": "cheap",
            "input": {1: "a", "b": 2},
        },
        {"name": "search", "input": "q" * 1_000, "result": huge},
        {},
    ]
    calls = TraceDoc.read(data).rounds[0].tool_calls
    assert len(calls) == 3  # the entries that are not mappings are skipped
    odd, long, empty = calls
    assert odd.turn is None and odd.executions == 0 and odd.turn_usd == 0.0 and odd.name == "['not', 'text']"
    assert long.result_chars == len(huge) and len(long.result) < len(huge)  # cut, with the size kept
    assert len(long.arguments) == ARGUMENTS_CHARS and long.arguments.endswith("…")
    assert empty == ToolCallDoc(name="", input="")


def test_the_change_since_green_is_typed() -> None:
    doc = TraceDoc.read(a_trace(changes=changes_record())).changes
    assert doc is not None
    assert doc.line == f"{SHAS[0][:7]}..{SHAS[3][:7]}, 3 commits, 2 files"
    assert [c.short for c in doc.commits] == [s[:7] for s in SHAS[1:]]
    assert doc.source == "since the last green run 9001 on main"
    assert doc.culprit is not None and doc.culprit.short == SHAS[2][:7]
    assert (doc.culprit.title, doc.culprit.author, doc.culprit.found_by, doc.culprit.runs) == (
        "rules: adults are older",
        "Ada",
        "bisect",
        2,
    )
    assert doc.bisect is not None and doc.bisect.status == "found"
    assert doc.bisect.probes == ((SHAS[1], "pass"), (SHAS[2], "fail"))
    assert doc.revert is not None and doc.revert.sha == SHAS[2] and doc.revert.passed


def test_old_and_malformed_changes_never_raise() -> None:
    assert TraceDoc.read(a_trace()).changes is None  # a trace from before #14
    assert TraceDoc.read({"repo": "oops"}).changes is None
    assert TraceDoc.read(a_trace(changes=["x"])).changes is None
    assert TraceDoc.read(a_trace(changes={"source": "only words"})).changes is None
    bad = {
        "base": SHAS[0],
        "head": 7,
        "commits": [{"sha": SHAS[1], "title": {"t": 1}}, {"title": "no sha"}, "x", None],
        "files": "notes.md",
        "bisect": {
            "status": "budget",
            "probes": [[SHAS[1]], "x", {"sha": SHAS[2], "outcome": "skip"}, [SHAS[3], "fail"]],
        },
        "culprit": {"sha": "  ", "title": "no sha"},
        "revert": {"passed": True},
    }
    doc = TraceDoc.read(a_trace(changes=bad)).changes
    assert doc is not None and doc.head == "7" and doc.files == ()
    assert [c.sha for c in doc.commits] == [SHAS[1]]
    assert doc.bisect is not None and doc.bisect.probes == ((SHAS[2], "skip"), (SHAS[3], "fail"))
    assert doc.culprit is None and doc.revert is None
