"""What made a fix, for ``auto_apply`` (:mod:`jobs.fix_kind`): the selected candidate's proposer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.config_model import FIX_KINDS
from jobs.fix_kind import FORMAT_TOOLS, LINT_TOOLS, kind_of, kind_of_trace, read_fix_kind
from jobs.repair.trace import CandidateRecord, Outcome, RoundRecord, Trace, dump_trace

TABLE = Path(__file__).parents[2] / "jobs" / "repair" / "tier0" / "formatters.json"


def trace(*candidates: tuple[str, str, str], chosen: str) -> Trace:
    """A trace whose one round made ``(id, proposer, variant)`` candidates and selected ``chosen``."""
    records = [CandidateRecord(id=i, round=1, proposer=p, variant=v) for i, p, v in candidates]
    return Trace(
        id="t-1",
        rounds=[RoundRecord(index=1, tier="0", candidates=records)],
        outcome=Outcome(verdict="fixed", fixed=bool(chosen), candidate=chosen),
    )


@pytest.mark.parametrize(
    ("proposer", "variant", "kind"),
    [
        ("autofix", "ruff-format", "format"),
        ("autofix", "black+isort", "format"),
        ("autofix", "ruff-format+ruff-check", "lint"),
        ("autofix", "eslint", "lint"),
        ("autofix", "some-new-tool", "lint"),  # not known to only lay code out
        ("tier0", "off_by_one", "template"),
        ("revert", "hunk 2", "revert"),
        ("anthropic", "", "llm"),
        ("tools", "v2", "llm"),
    ],
)
def test_each_proposer_is_one_kind(proposer: str, variant: str, kind: str) -> None:
    assert kind_of(proposer, variant) == kind and kind in FIX_KINDS


def test_every_tool_of_the_formatter_table_is_classified() -> None:
    names = {tool["name"] for tool in json.loads(TABLE.read_text(encoding="utf-8"))["tools"]}
    assert names == FORMAT_TOOLS | LINT_TOOLS and not FORMAT_TOOLS & LINT_TOOLS


def test_the_selected_candidate_decides_not_the_first() -> None:
    doc = trace(("c1", "anthropic", ""), ("c2", "autofix", "black"), chosen="c2")
    assert kind_of_trace(doc.to_json()) == "format"
    assert kind_of_trace(trace(("c1", "autofix", "black"), chosen="").to_json()) is None  # nothing selected
    assert kind_of_trace(trace(("c1", "autofix", "black"), chosen="c9").to_json()) is None
    assert kind_of_trace({"outcome": {"candidate": "c1"}}) is None  # not an ARCS trace


def test_the_trace_is_read_only_inside_the_traces_directory(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    inside = traces / "t-1.json"
    inside.write_text(dump_trace(trace(("c1", "revert", "h1"), chosen="c1")), encoding="utf-8")
    outside = tmp_path / "elsewhere.json"
    outside.write_text(inside.read_text(encoding="utf-8"), encoding="utf-8")
    assert read_fix_kind(str(inside), traces) == "revert"
    assert read_fix_kind(str(outside), traces) is None
    assert read_fix_kind(str(traces / ".." / "elsewhere.json"), traces) is None
    assert read_fix_kind(str(traces / "missing.json"), traces) is None
    assert read_fix_kind(None, traces) is None
    (traces / "bad.json").write_text("{not json", encoding="utf-8")
    assert read_fix_kind(str(traces / "bad.json"), traces) is None
