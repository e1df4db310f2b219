"""RepairReport's change signal (#14): ``changes``, ``culprit`` and ``revert`` round-trip through the
stored JSON, and the shapes stored before they existed (v1 fixtures, v2 without the keys) read as
"no signal"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.repair.report import Culprit, RepairReport, RevertResult
from jobs.repair.trace_read import Verification

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "report"
SHA = "b" * 40


def report() -> RepairReport:
    return RepairReport(
        verdict="no_fix",
        changes="aaaaaaa..ccccccc, 3 commits, 4 files",
        culprit=Culprit(sha=SHA, title="rules: off by one", author="Ada", found_by="bisect", runs=2),
        revert=RevertResult(
            sha=SHA,
            patch="--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-b\n+a\n",
            files={"x.py": "a\n", "gone.py": None},
            verification=Verification("pytest -x", 0, 1.0, 3, 0, passed_verification=True),
        ),
    )


def test_round_trip_keeps_the_change_signal() -> None:
    original = report()
    data = json.loads(json.dumps(original.to_json()))
    assert data["culprit"]["sha"] == SHA and data["changes"].startswith("aaaaaaa..")
    assert RepairReport.from_json(data) == original
    # The store drops the forward fix's files, never the revert's (the publisher pushes them).
    without = RepairReport.from_json(original.to_json(with_files=False))
    assert without.revert is not None and without.revert.files == {"x.py": "a\n", "gone.py": None}


@pytest.mark.parametrize("name", ["fixed", "not_reproducible"])
def test_old_stored_shapes_have_no_signal(name: str) -> None:
    data = json.loads((FIXTURES / f"attempt_trace_v1_{name}.json").read_text(encoding="utf-8"))
    old = RepairReport.from_json(data["trace"])
    assert (old.changes, old.culprit, old.revert) == ("", None, None)
    v2 = {k: v for k, v in report().to_json().items() if k not in ("changes", "culprit", "revert")}
    assert RepairReport.from_json(v2).culprit is None


@pytest.mark.parametrize(
    "culprit",
    [None, "abc", [], {"sha": ""}, {"title": "no sha"}, {"sha": 5, "runs": "x"}],
)
def test_garbage_culprit_reads_tolerantly(culprit: Any) -> None:
    r = RepairReport.from_json({"v": 2, "verdict": "fixed", "culprit": culprit, "revert": culprit})
    if isinstance(culprit, dict) and culprit.get("sha") == 5:
        assert r.culprit == Culprit(sha="5") and r.revert is not None and r.revert.patch == ""
    else:
        assert r.culprit is None and r.revert is None


def test_unknown_found_by_reads_as_single_commit() -> None:
    c = Culprit.read({"sha": SHA, "found_by": "magic", "runs": -3})
    assert c is not None and (c.found_by, c.runs, c.short) == ("single_commit", 0, SHA[:7])
