"""The context bench (issue #15): target lines, evidence parsing, the oracle model, call distance."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bench.context.build import enclosing_function
from bench.context.distance import call_distance
from bench.context.oracle_server import WRONG_OLD, OracleModel, request_text
from bench.context.report import render, summarize
from bench.context.run import _round_of, failure_text
from bench.context.visibility import (
    TargetLine,
    evidence_blocks,
    rank_of_file,
    shown,
    target_lines,
    visibility,
)

BROKEN = "import os\n\n\ndef f(a, b):\n    if a < b:\n        return a\n    return b\n"


def _evidence(path: str, start: int, end: int, body: str) -> str:
    return f"### {path}:{start}-{end} [retrieved f]\n```\n{body}\n```"


def test_target_lines_are_the_changed_old_lines() -> None:
    edits = [
        {"path": "m.py", "old": "    if a < b:\n        return a", "new": "    if a > b:\n        return a"}
    ]
    assert target_lines({"m.py": BROKEN}, edits) == [TargetLine("m.py", 5, "    if a < b:")]


def test_a_pure_insertion_targets_one_anchor_line() -> None:
    after_import = [{"path": "m.py", "old": "import os\n", "new": "import os\nimport re\n"}]
    got = target_lines({"m.py": BROKEN}, after_import)
    assert [(t.line, t.text) for t in got] == [(1, "import os")]  # the line after is blank
    before_def = [{"path": "m.py", "old": "def f(a, b):\n", "new": "X = 1\n\n\ndef f(a, b):\n"}]
    assert [t.line for t in target_lines({"m.py": BROKEN}, before_def)] == [4]


def test_an_ambiguous_old_text_is_an_error() -> None:
    with pytest.raises(ValueError, match="2 times"):
        target_lines({"m.py": "x\nx\n"}, [{"path": "m.py", "old": "x", "new": "y"}])


def test_evidence_blocks_parse_headers_and_fences() -> None:
    text = (
        "# Task\nstuff\n"
        + _evidence("pkg/m.py", 4, 7, BROKEN.split("\n", 3)[3])
        + "\n\n"
        + _evidence("t.py", 1, 2, "a\nb")
    )
    blocks = evidence_blocks(text)
    assert [(b.path, b.start, b.end) for b in blocks] == [("pkg/m.py", 4, 7), ("t.py", 1, 2)]
    assert blocks[0].text.startswith("def f(a, b):")


def test_a_line_counts_only_when_a_block_of_its_file_covers_it() -> None:
    target = TargetLine("m.py", 5, "    if a < b:")
    body = "def f(a, b):\n    if a < b:\n        return a\n    return b"
    assert shown(target, evidence_blocks(_evidence("m.py", 4, 7, body)))
    assert not shown(target, evidence_blocks(_evidence("other.py", 4, 7, body)))
    assert not shown(target, evidence_blocks(_evidence("m.py", 6, 7, "        return a\n    return b")))
    clipped = "def f(a, b):\n[... 40 characters cut ...]"
    assert not shown(target, evidence_blocks(_evidence("m.py", 4, 7, clipped)))


def test_visibility_is_a_union_and_loose_counts_text_anywhere() -> None:
    targets = [TargetLine("m.py", 1, "import os"), TargetLine("m.py", 5, "    if a < b:")]
    one = _evidence("m.py", 4, 5, "def f(a, b):\n    if a < b:")
    two = _evidence("m.py", 1, 1, "import os")
    first = visibility(targets, [one])
    assert (first.shown, first.total, first.all_shown, first.share) == (1, 2, False, 0.5)
    assert visibility(targets, [one, two]).all_shown
    stack_only = visibility(targets, ["at m.py:5\n    if a < b:\nimport os"])
    assert (stack_only.shown, stack_only.loose, stack_only.file_shown) == (0, 2, False)


def _propose_body(text: str) -> dict[str, object]:
    return {
        "model": "m",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "You repair code."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        "tool_choice": {"type": "tool", "name": "propose_patch"},
    }


def test_the_oracle_fixes_only_what_it_was_shown() -> None:
    targets = [TargetLine("m.py", 5, "    if a < b:")]
    fix = [{"path": "m.py", "kind": "replace", "old": "    if a < b:", "new": "    if a > b:"}]
    oracle = OracleModel(targets, fix)
    body = "def f(a, b):\n    if a < b:\n        return a"
    shown_reply = oracle(_propose_body(_evidence("m.py", 4, 6, body)))
    hidden_reply = oracle(_propose_body(_evidence("m.py", 6, 6, "        return a")))
    task = "# Task\nObserved failures:\n- tests/t.py::test_order: AssertionError\n"
    plan_reply = oracle(
        {"messages": [{"role": "user", "content": task}], "tool_choice": {"name": "submit_plan"}}
    )
    assert shown_reply.tool_uses[0].input["edits"] == fix  # type: ignore[union-attr,index]
    assert hidden_reply.tool_uses[0].input["edits"][0]["old"] == WRONG_OLD  # type: ignore[union-attr,index]
    plan = plan_reply.tool_uses[0].input  # type: ignore[union-attr]
    assert plan["subgoals"] == ["The code under test in tests/t.py::test_order"]  # type: ignore[index]
    assert "if a < b" not in json.dumps(plan)
    assert [r.answer for r in oracle.log] == ["fix", "wrong", "plan"]
    assert [r.answer for r in oracle.proposals] == ["fix", "wrong"]
    assert oracle.proposals[0].chars == len(request_text(_propose_body(_evidence("m.py", 4, 6, body))))
    # The wrong edit must not name the fix's file (later rounds query with edit errors).
    other = oracle(_propose_body(_evidence("other.py", 1, 2, "x = 1\ny = 2")))
    assert other.tool_uses[0].input["edits"][0]["path"] == "other.py"  # type: ignore[union-attr,index]


def test_requests_map_to_the_round_whose_context_they_carry() -> None:
    prompts = ["ctx round one", "ctx round two"]
    assert _round_of("system\nctx round two\nvariant", prompts, fallback=7) == 1
    assert _round_of("nothing known", prompts, fallback=7) == 7


def test_failure_text_and_file_rank() -> None:
    trace = {
        "reproduction": {
            "baseline": {
                "failures": [
                    {
                        "test_id": "t.py::test_a",
                        "type": "AssertionError",
                        "message": "1 != 2",
                        "path": "t.py",
                        "line": 3,
                        "frames": [["t.py", 3, "test_a"], ["m.py", 5, "f"]],
                    }
                ]
            }
        }
    }
    text = failure_text(trace)
    assert "FAILED t.py::test_a - AssertionError: 1 != 2" in text and "m.py:5 in f" in text
    assert rank_of_file(["t.py", "t.py", "a.py", "m.py"], {"m.py"}) == 3
    assert rank_of_file(["t.py"], {"m.py"}) is None


def test_summary_and_markdown_split_tuned_and_held_out() -> None:
    records = [
        {
            "id": "a",
            "split": "tuned",
            "project": "ours",
            "round1_all": True,
            "round1_share": 1.0,
            "last_all": True,
            "last_share": 1.0,
            "fixed": True,
            "requests": [{"chars": 100}],
            "search": {"rank": 1},
        },
        {
            "id": "b",
            "split": "held_out",
            "project": "pkg",
            "round1_all": False,
            "round1_share": 0.0,
            "last_all": False,
            "last_share": 0.5,
            "requests": [{"chars": 300}],
            "search": {"rank": 7},
            "shape": {"distance": 3},
        },
    ]
    s = summarize(records)
    assert (s["round1_all"], s["last_all"], s["search_top5"], s["chars_median"]) == (1, 1, 1, 200)
    md = render({"before": {"date": "d", "records": records}})
    assert "| tuned | before | 1 | 1/1 (100%)" in md
    assert "| held_out | before | 1 | 0/1 (0%)" in md
    assert "| 3+ | before |" in md


def rec(case_id: str, project: str, **extra: object) -> dict[str, object]:
    """A held-out record of the report tests (not shown, distance 5; ``extra`` overrides)."""
    return {
        "id": case_id,
        "split": "held_out",
        "project": project,
        "last_all": False,
        "requests": [{"chars": 10}],
        "search": {"rank": 1},
        "shape": {"distance": 5},
    } | extra


def test_the_session_6_batch_is_its_own_group_and_unnamed_before() -> None:
    records = [rec("bottle-x-L1-boolswap", "bottle"), rec("pyflakes-y-L2-arithswap", "pyflakes")]
    md = render({"before": {"date": "d", "records": records}})
    assert "| held_out: new packages (session 6) | before | 1 |" in md
    assert "| held_out: new packages (session 5) | before | 1 |" in md
    # blind while the after run lacks them: its own row only, counted but never named
    assert "bottle" not in md.replace("held_out: new packages (session 6)", "")
    assert "| held_out | before | 1 |" in md and "| 3+ | before | 1 |" in md
    assert "pyflakes-y-L2-arithswap" in md
    assert "1 of held_out: new packages (session 6) not named" in md
    both = render({"before": {"date": "d", "records": records}, "after": {"date": "d", "records": records}})
    assert "bottle-x-L1-boolswap" in both and "| held_out | before | 2 |" in both


def test_every_blind_batch_has_its_group_and_is_counted_per_group_never_named() -> None:
    records = [
        rec("bottle-x-L1-boolswap", "bottle"),
        rec("lark-loadgrammar-L9-negatecond", "lark"),
        rec("parso-errors-L3-arithswap", "parso"),
        rec("pyflakes-y-L2-arithswap", "pyflakes"),
    ]
    md = render({"before": {"date": "d", "records": records}})
    assert "| held_out: new packages (session 6b) | before | 2 |" in md
    assert "| held_out: new packages (session 6) | before | 1 |" in md
    for name in ("bottle", "lark", "parso"):
        assert name not in md
    assert "| held_out | before | 1 |" in md and "| 3+ | before | 1 |" in md
    assert "1 of held_out: new packages (session 6) not named" in md
    assert "2 of held_out: new packages (session 6b) not named" in md
    # a tool run holding blind cases names none of them either
    tools = [rec(str(r["id"]), str(r["project"]), last_all=True, context_last_all=False) for r in records]
    md = render({"before": {"date": "d", "records": records}, "explorer": {"date": "d", "records": tools}})
    assert "| held_out: new packages (session 6b) | explorer | 2 |" in md
    assert "lark" not in md and "pyflakes-y-L2-arithswap" in md
    both = render({"before": {"date": "d", "records": records}, "after": {"date": "d", "records": records}})
    assert "lark-loadgrammar-L9-negatecond" in both and "| held_out | before | 4 |" in both


def test_enclosing_function_is_the_innermost() -> None:
    src = "def outer():\n    def inner():\n        return 1\n    return inner\n"
    assert enclosing_function(src, 3) == ("inner", 2)
    assert enclosing_function(src, 4) == ("outer", 4)
    assert enclosing_function(src, 9) == ("", 0)


def test_call_distance_counts_repository_frames_from_the_failing_test(tmp_path: Path) -> None:
    (tmp_path / "lib.py").write_text(
        "def inner(x):\n    return x + 2\n\n\ndef outer(x):\n    return inner(x)\n"
    )
    (tmp_path / "test_lib.py").write_text(
        "from lib import inner, outer\n\n\ndef test_outer():\n    assert outer(1) == 0\n\n\n"
        "def test_inner():\n    assert inner(1) == 3\n"
    )
    got = call_distance(
        tmp_path, f"{sys.executable} -m pytest -q -p no:randomly -p no:cacheprovider test_lib.py", "lib.py", 2
    )
    # Only test_outer fails, through outer(): distance 2 (test_inner calls inner() directly but passes).
    assert (got["distance"], got["failed"]) == (2, ["test_lib.py::test_outer"])


def test_seen_and_fresh_held_out_rows_the_session5_label_and_the_undetected_mutants() -> None:
    seen = [
        rec("pyflakes-y-L2-arithswap", "pyflakes", last_all=True),
        rec("markdown-inlinepatterns-L733-arithswap", "markdown"),
    ]
    fresh = [rec("lark-loadgrammar-L9-negatecond", "lark", last_all=True)]
    md = render(
        {
            "before": {"date": "d", "records": fresh},
            "session5": {"date": "d", "records": seen},
            "after": {"date": "d", "records": seen + fresh},
        }
    )
    assert "| held_out: seen (sessions 4-5; read while designing session 6) | session5 | 2 |" in md
    assert "| held_out: seen, valid (without the 2 undetected mutants) | after | 1 |" in md
    assert "| held_out: fresh (sessions 6 and 6b; never read before the after run) | before | 1 |" in md
    assert "| held_out: fresh (sessions 6 and 6b; never read before the after run) | after | 1 |" in md
    assert "- **session5**:" in md
