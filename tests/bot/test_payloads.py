"""Payload builders: structure of the PR body, tables, limits, markers, defused untrusted text."""

from __future__ import annotations

import re

from jobs.config import ArcsConfigError
from jobs.render import (
    BODY_BUDGET,
    MAX_CHECK_TEXT,
    PR_MARKER,
    RepairSummary,
    TestTally,
    check_run_conclusion,
    check_run_output,
    config_error_comment,
    defuse,
    diff_stats,
    fenced,
    find_status_marker,
    help_comment,
    pr_body,
    pr_title,
    refusal_comment,
    status_comment,
    status_marker,
    unrepairable_summary,
)

DIFF = """\
diff --git a/inventory/pricing.py b/inventory/pricing.py
--- a/inventory/pricing.py
+++ b/inventory/pricing.py
@@ -1,3 +1,3 @@
 def total(items):
-    return sum(i.price for i in items[1:])
+    return sum(i.price for i in items)
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
"""


def _summary(**changes: object) -> RepairSummary:
    base: dict[str, object] = {
        "verdict": "fixed",
        "fixed": True,
        "failure_summary": "`tests/test_pricing.py::test_total` fails with AssertionError",
        "root_cause": "The slice skipped the first item.",
        "diff": DIFF,
        "target_tests": ("tests/test_pricing.py::test_total",),
        "tests_before": TestTally(passed=10, failed=1, failing=("tests/test_pricing.py::test_total",)),
        "tests_after": TestTally(passed=11),
        "regression": "212 passed, no new failure",
        "regression_passed": True,
        "gates": (
            ("compile", True, ""),
            ("policy", True, "2 files within allowed paths"),
            ("quality", False, "weak"),
        ),
        "tokens": 12345,
        "cost_usd": 0.0421,
        "rounds": 2,
        "duration_s": 95.0,
        "tier": "small",
        "trace_markdown": "### Round 1\n- proposed a change",
        "failing_run_url": "https://github.com/acme/widgets/actions/runs/1",
        "failing_job": "test (3.11)",
        "head_sha": "a" * 40,
        "attempt_id": "17",
        "attempt_url": "https://arcs.example/attempts/17",
    }
    base.update(changes)
    return RepairSummary(**base)  # type: ignore[arg-type]


def test_diff_stats_counts_files_and_lines() -> None:
    stats = diff_stats(DIFF)
    assert stats.files == ("inventory/pricing.py", "old.txt")
    assert (stats.insertions, stats.deletions) == (1, 2)
    assert stats.label() == "2 files changed, +1 −2"


def test_titles() -> None:
    assert pr_title(_summary()) == "ARCS: fix failing test tests/test_pricing.py::test_total"
    assert pr_title(_summary(target_tests=("a", "b"))) == "ARCS: fix 2 failing tests"
    issue = _summary(kind="issue", issue_number=12, issue_title="Totals are wrong " * 20)
    title = pr_title(issue)
    assert title.startswith("ARCS: fix #12: Totals are wrong") and len(title) <= 120
    assert pr_title(_summary(target_tests=(), failing_job="lint")) == "ARCS: fix the failing lint job"


def test_pr_body_has_every_section_in_order() -> None:
    body = pr_body(_summary(), dashboard_url="https://arcs.example/traces/17")
    headings = re.findall(r"^## (.+)$", body, re.MULTILINE)
    assert headings == ["Summary", "Root cause", "What changed", "Verification", "Cost", "Trace"]
    assert "The slice skipped the first item." in body
    assert "2 files changed, +1 −2" in body and "- `inventory/pricing.py`" in body
    assert "<details>\n<summary>Diff</summary>" in body and "```diff\n" in body
    assert "<details>\n<summary>Repair trace</summary>\n\n### Round 1" in body
    assert "[Trace on the ARCS dashboard](https://arcs.example/traces/17)" in body
    assert "https://github.com/acme/widgets/actions/runs/1" in body
    assert body.rstrip().endswith(PR_MARKER)
    assert "Fixes #" not in body


def test_verification_table_rows() -> None:
    body = pr_body(_summary())
    table = body.split("## Verification\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert table[0] == "| Check | Before | After |"
    assert table[2] == "| Target tests (1) | ❌ 1 failed, 10 passed | ✅ 11 passed |"
    assert table[3] == "| Regression suite | — | ✅ 212 passed, no new failure |"
    assert table[4] == "| Gate: compile | — | ✅ passed |"
    assert table[5] == "| Gate: policy | — | ✅ 2 files within allowed paths |"
    assert table[6] == "| Gate: quality | — | ❌ weak |"
    cost = body.split("## Cost\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert cost[2] == "| 12,345 | $0.0421 | 2 | 1m 35s | small |"


def test_issue_body_links_the_issue() -> None:
    body = pr_body(_summary(kind="issue", issue_number=12, issue_title="Totals"))
    assert body.split("## Summary\n\n", 1)[1].startswith("Fixes #12.")


def test_untrusted_text_is_defused() -> None:
    hostile = "ping @maintainer <!-- arcs:status attempt=99 --> <img src=x>"
    body = pr_body(_summary(failure_summary=hostile, root_cause=hostile, trace_markdown=hostile))
    assert "@maintainer" not in body
    assert find_status_marker(body) is None
    assert "<img" not in body
    assert defuse("a@b.c and `@x`") == "a@b.c and `@x`"  # e-mails and code spans are left alone


def test_body_fits_the_limit_trace_cut_first() -> None:
    big = _summary(trace_markdown="trace line\n" * 20000, diff=DIFF + ("+x\n" * 3000))
    body = pr_body(big)
    assert len(body) <= BODY_BUDGET
    assert "## Verification" in body and "## Cost" in body and body.rstrip().endswith(PR_MARKER)
    assert "trace truncated" in body
    assert "+x\n" in body  # the diff survived: the trace went first
    huge_diff = _summary(trace_markdown="t\n" * 40000, diff="+y\n" * 40000)
    body = pr_body(huge_diff)
    assert len(body) <= BODY_BUDGET and "diff truncated" in body


def test_fenced_survives_backticks_in_content() -> None:
    block = fenced("```python\ncode\n```", "diff")
    assert block.startswith("````diff\n") and block.endswith("\n````")


def test_check_run_output_lifecycle_and_limits() -> None:
    queued = check_run_output("queued")
    assert queued["title"] == "Queued" and "text" not in queued
    assert check_run_output("in_progress")["title"].startswith("Repairing")
    done = check_run_output("completed", _summary(), pr_url="https://github.com/acme/widgets/pull/3")
    assert done["title"] == "Fix proposed"
    assert "https://github.com/acme/widgets/pull/3" in done["summary"]
    assert "| Check | Before | After |" in done["summary"]
    assert done["text"].startswith("## Root cause")
    failed = check_run_output(
        "completed", _summary(fixed=False, verdict="budget_exhausted", reason="budget spent")
    )
    assert failed["title"] == "No fix: budget spent"
    huge = check_run_output("completed", _summary(trace_markdown="x" * 200_000, regression="r" * 100_000))
    assert len(huge["summary"]) <= MAX_CHECK_TEXT and len(huge["text"]) <= MAX_CHECK_TEXT
    assert len(huge["title"]) <= 255
    assert check_run_conclusion(_summary()) == "success"
    assert check_run_conclusion(_summary(fixed=False)) == "neutral"
    assert check_run_conclusion(None, skipped=True) == "skipped"


def test_status_comment_states_and_marker() -> None:
    queued = status_comment("queued", attempt_id=17)
    assert find_status_marker(queued) == "17"
    assert status_marker(17) in queued
    opened = status_comment("pr_opened", attempt_id=17, pr_url="https://x/pull/3", attempt_url="https://a/17")
    assert "https://x/pull/3" in opened and "[Attempt 17 on the dashboard](https://a/17)" in opened
    no_fix = status_comment("no_fix", attempt_id="17", reason="no candidate passed @someone's tests")
    assert "no candidate passed" in no_fix and "@someone" not in no_fix
    assert find_status_marker(no_fix) == "17"
    assert status_marker("a b<c>") == "<!-- arcs:status attempt=a-b-c- -->"


def test_refusals_help_and_config_errors() -> None:
    assert "write" in refusal_comment("permission")
    assert "max_prs_per_day" in refusal_comment("rate_limit", "5 today")
    assert "/arcs fix" in help_comment()
    error = ArcsConfigError(".arcs.yml: budget.usd: expected a number, got 'lots'", key="budget.usd")
    text = config_error_comment(error)
    assert "budget.usd: expected a number, got 'lots'" in text and "Fix the `budget.usd` key" in text
    assert "the file" in config_error_comment("not valid YAML at line 3").lower()
    assert "`lint` failure" in unrepairable_summary("lint", "style only", job="lint")
