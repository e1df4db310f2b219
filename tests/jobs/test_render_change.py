"""The change signal in the GitHub messages (#14): the culprit and the range since the last green
run in the pull request body and the check run, the ``on_no_fix`` hint when there is no fix, and
reports stored before these fields (v1, v2 without them) rendering exactly as before."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.store.models import Attempt
from jobs import render
from jobs.repair.report import Culprit, RepairReport, RevertResult
from jobs.repair.trace_read import Verification
from jobs.report_summary import attempt_summary
from jobs.summary import RepairSummary

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"
SHA = "b7c1e2d" + "0" * 33
BISECTED = Culprit(sha=SHA, title="rules: adult from 18", author="Ada Lovelace", found_by="bisect", runs=3)
CHANGES = "a1b2c3d..f00ba47, 3 commits, 4 files"
DIFF = "--- a/rules.py\n+++ b/rules.py\n@@ -1 +1 @@\n-return age > 18\n+return age >= 18\n"


def fixed(**fields: Any) -> RepairSummary:
    return RepairSummary(verdict="fixed", fixed=True, diff=DIFF, head_sha="c" * 40, **fields)


def no_fix(**fields: Any) -> RepairSummary:
    return RepairSummary(verdict="exhausted", fixed=False, reason="no candidate passed the gates", **fields)


def test_the_pull_request_body_names_the_culprit_and_the_range() -> None:
    body = render.pr_body(fixed(culprit=BISECTED, changes=CHANGES))
    assert "Introduced by b7c1e2d — rules: adult from 18 (Ada Lovelace), found by bisect in 3 runs." in body
    assert "Changes since the last green run: a1b2c3d..f00ba47, 3 commits, 4 files." in body
    # In the summary, after the failing commit, before the root cause.
    assert body.index("Failing commit:") < body.index("Introduced by") < body.index("## Root cause")
    assert "on_no_fix" not in body  # a fix: no word about the revert fallback


def test_a_single_commit_culprit_says_how_it_was_found() -> None:
    one = Culprit(sha=SHA, title="t", author="a", found_by="single_commit")
    assert (
        render.culprit_line(one) == "Introduced by b7c1e2d — t (a), the only commit since the last green run."
    )
    assert render.culprit_line(replace(BISECTED, runs=1)).endswith("found by bisect in 1 run.")
    assert render.culprit_line(Culprit(sha=SHA, found_by="bisect", runs=2)) == (
        "Introduced by b7c1e2d, found by bisect in 2 runs."
    )


def test_untrusted_commit_titles_and_authors_are_defused() -> None:
    evil = Culprit(
        sha=SHA, title="ping @octo-org/team <!-- arcs:pr -->", author="@mallory", found_by="bisect"
    )
    line = render.culprit_line(evil)
    assert "@octo" not in line and "@mallory" not in line and "<!--" not in line
    body = render.pr_body(fixed(culprit=evil))
    assert body.count(render.PR_MARKER) == 1


def test_the_check_run_of_a_fix_names_the_culprit() -> None:
    out = render.check_run_output(
        "completed", fixed(culprit=BISECTED, changes=CHANGES), pr_url="https://x/pr/2"
    )
    assert "Introduced by b7c1e2d" in out["summary"] and "a1b2c3d..f00ba47" in out["summary"]


def test_no_fix_with_a_culprit_under_report_names_it_and_how_to_get_a_revert() -> None:
    for mode in ("report", ""):  # '' = not recorded: the default, report
        out = render.check_run_output("completed", no_fix(culprit=BISECTED, changes=CHANGES, on_no_fix=mode))
        assert out["title"].startswith("No fix: ")
        assert "Introduced by b7c1e2d — rules: adult from 18" in out["summary"]
        assert "set `on_no_fix: revert` in `.arcs.yml`" in out["summary"]


def test_no_fix_under_revert_says_what_became_of_the_revert() -> None:
    opening = render.check_run_output(
        "completed", no_fix(culprit=BISECTED, on_no_fix="revert", revert_sha=SHA)
    )
    assert "opens a pull request that reverts it" in opening["summary"]
    assert "set `on_no_fix: revert`" not in opening["summary"]
    skipped = no_fix(
        culprit=BISECTED, on_no_fix="revert", revert_skipped="the revert still fails `pytest -x` @here"
    )
    text = render.check_run_output("completed", skipped)["summary"]
    assert "No revert pull request was opened: the revert still fails `pytest -x` @\u2060here." in text
    unknown = render.check_run_output("completed", no_fix(culprit=BISECTED, on_no_fix="revert"))["summary"]
    assert "No revert pull request was opened: a revert is opened only on the default branch" in unknown


def test_without_a_change_signal_nothing_changes() -> None:
    for summary in (fixed(), no_fix(), replace(fixed(), verdict="partial", fixed=False, pre_existing=("t",))):
        body = render.pr_body(summary)
        check = render.check_run_output("completed", summary)["summary"]
        for text in (body, check):
            assert "Introduced by" not in text and "on_no_fix" not in text and "last green run" not in text
    # The range alone, no culprit: no revert hint (there is nothing to revert).
    only_range = render.check_run_output("completed", no_fix(changes=CHANGES))["summary"]
    assert "Changes since the last green run" in only_range and "on_no_fix" not in only_range


def _attempt(trace: dict[str, Any] | None, *, status: str = "no_fix") -> Attempt:
    return Attempt(
        id=9,
        idempotency_key="k",
        repo="octo/ages",
        owner="octo",
        trigger="ci",
        head_sha="a" * 40,
        head_branch="main",
        status=status,
        verdict="exhausted",
        reason="no candidate passed the gates",
        trace=trace,
    )


def test_attempt_summary_carries_the_stored_change_signal() -> None:
    revert = RevertResult(
        sha=SHA, patch=DIFF, files={"rules.py": "x\n"}, verification=Verification("pytest -x", 0, passed=3)
    )
    report = RepairReport(verdict="exhausted", changes=CHANGES, culprit=BISECTED, revert=revert)
    summary = attempt_summary(_attempt(report.to_json(with_files=False)))
    assert (summary.culprit, summary.changes, summary.revert_sha) == (BISECTED, CHANGES, SHA)
    check = render.check_run_output("completed", summary)["summary"]
    assert "Introduced by b7c1e2d" in check and "opens a pull request that reverts it" in check
    without_files = replace(report, revert=replace(revert, files={}))
    assert attempt_summary(_attempt(without_files.to_json())).revert_sha == ""


@pytest.mark.parametrize("name", ["fixed", "not_reproducible"])
def test_reports_stored_before_the_change_signal_render_as_before(name: str) -> None:
    data = json.loads((FIXTURES / f"attempt_trace_v1_{name}.json").read_text(encoding="utf-8"))
    attempt = _attempt(data["trace"], status="fixed" if data["outcome"]["fixed"] else "no_fix")
    summary = attempt_summary(attempt)
    assert (summary.culprit, summary.changes, summary.on_no_fix, summary.revert_sha) == (None, "", "", "")
    # A v2 report from before the fields existed (no keys at all) reads the same way.
    v2 = {
        k: v
        for k, v in RepairReport(verdict="exhausted").to_json().items()
        if k not in ("changes", "culprit")
    }
    assert attempt_summary(_attempt(v2)).culprit is None
    for text in (render.pr_body(summary), render.check_run_output("completed", summary)["summary"]):
        assert "Introduced by" not in text and "on_no_fix" not in text
