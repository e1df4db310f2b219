"""The attempt page's "Tool calls" (#15) and "Change since last green" (#14) sections, the culprit
in the attempts list, and reverts in the numbers: a ``no_fix`` attempt that opened a revert pull
request counts as ``reverted`` apart, and the repair rate keeps its meaning (SQLite and PostgreSQL).

Commit titles, authors, tool inputs and tool results are untrusted: they carry ``<script>`` here
and must reach the page escaped (Jinja2's autoescape, like every other text of the dashboard).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from bot.dashboard import queries
from bot.dashboard.changeview import change_view
from jobs.repair.bisect import BisectResult
from jobs.repair.report import Culprit, RepairReport, RevertResult
from jobs.repair.trace_read import TraceDoc, Verification
from tests.bot.dashboard.conftest import ALICE, NOW, Client, Seeded, make_client
from tests.bot.dashboard.seed import OCTO, OCTO_REPOS, OTHER_REPOS, make_trace
from tests.bot.dashboard.test_metrics import client_for, one, scrape

REPO = OCTO_REPOS[0]
SHAS = [f"{i:x}" * 40 for i in range(1, 5)]
CULPRIT = SHAS[2]
EVIL_TITLE = "<script>alert('title')</script> rules: adults are older"
EVIL_AUTHOR = "<img src=x onerror=alert(1)>"
EVIL_INPUT = "<script>alert('input')</script>"
EVIL_RESULT = "<script>alert('result')</script>"


def changes_record() -> dict[str, Any]:
    """``trace.repo["changes"]`` as jobs.culprit.after_loop writes it."""
    culprit = Culprit(CULPRIT, EVIL_TITLE, EVIL_AUTHOR, "bisect", 2)
    found = BisectResult("found", CULPRIT, (CULPRIT,), ((SHAS[1], "pass"), (CULPRIT, "fail")))
    return {
        "base": SHAS[0],
        "head": SHAS[3],
        "commits": [
            {"sha": SHAS[1], "title": "docs: a note", "author": "Ada"},
            {"sha": CULPRIT, "title": EVIL_TITLE, "author": EVIL_AUTHOR},
            {"sha": SHAS[3], "title": "docs: another note", "author": "Bob"},
        ],
        "files": ["calc/core.py", "notes.md"],
        "truncated": False,
        "source": "since the last green run on main",
        "bisect": found.to_json(),
        "culprit": culprit.to_json(),
        "revert": {"sha": CULPRIT, "passed": True},
    }


def tool_calls() -> list[dict[str, Any]]:
    """A round's ``tool_calls`` in the tool session's log shape."""
    base = {"variant": "main", "ok": True, "refused": "", "executions": 0}
    return [
        {
            **base,
            "turn": 1,
            "id": "toolu_01",
            "name": "search",
            "input": {"query": EVIL_INPUT},
            "result": EVIL_RESULT,
            "result_chars": len(EVIL_RESULT),
            "turn_tokens": 1500,
            "turn_usd": 0.0045,
        },
        {
            **base,
            "turn": 2,
            "id": "toolu_02",
            "name": "run_tests",
            "input": {"select": ["tests/test_core.py::test_adult"]},
            "ok": False,
            "refused": "executions",
            "result": "no test execution left in the budget",
            "result_chars": 37,
            "turn_tokens": 900,
            "turn_usd": 0.0027,
        },
    ]


def report_json(*, reverted: bool) -> dict[str, Any]:
    """The result stored with a ``no_fix`` attempt under ``on_no_fix: revert``."""
    verification = Verification(
        command="pytest -q", exit_code=0, duration_s=1.5, passed=4, passed_verification=True
    )
    report = RepairReport(
        verdict="budget_exhausted",
        reason="no candidate passed",
        changes=f"{SHAS[0][:7]}..{SHAS[3][:7]}, 3 commits, 2 files",
        culprit=Culprit(CULPRIT, EVIL_TITLE, EVIL_AUTHOR, "bisect", 2),
        revert=RevertResult(CULPRIT, "diff", {"calc/core.py": "x"}, verification) if reverted else None,
        on_no_fix="revert",
        revert_skipped="" if reverted else "the revert did not pass `pytest -q` (exit 1)",
    )
    return report.to_json()


def flat(html: str) -> str:
    """``html`` with every run of whitespace as one space."""
    return " ".join(html.split())


@dataclass
class Reverts:
    """The seed plus two ``no_fix`` attempts with a culprit: one opened a revert PR, one did not."""

    seeded: Seeded
    reverted_id: int
    skipped_id: int
    before: queries.Stats
    classes_before: tuple[queries.ClassOutcomes, ...]


@pytest.fixture(scope="module")
def reverts(seeded: Seeded) -> Iterator[Reverts]:
    store = seeded.store
    since = queries.window_start(NOW, 12)
    created = NOW - dt.timedelta(days=1)
    fields: dict[str, Any] = {
        "repo": REPO,
        "trigger": "ci",
        "status": "no_fix",
        "failure_class": "test",
        "created_at": created,
        "started_at": created,
        "finished_at": created + dt.timedelta(minutes=5),
        "installation_id": 1,
        "run_id": 777,
        "head_branch": "main",
        "head_sha": SHAS[3],
        "verdict": "budget_exhausted",
        "title": "CI failed on main (test)",
    }
    trace = make_trace(NOW)
    trace["id"] = "revert-trace"
    trace["repo"] = {**trace["repo"], "changes": changes_record()}
    trace["rounds"][0]["tool_calls"] = tool_calls()
    path = seeded.settings.traces_dir / "revert-trace.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(trace), encoding="utf-8")
    reverted, _ = store.claim_attempt("h8-reverted", **fields)
    skipped, _ = store.claim_attempt("h8-skipped", **{**fields, "run_id": 778})
    store.update_attempt(skipped.id, trace=report_json(reverted=False))
    before = queries.stats(store, {REPO.lower()}, since=since)
    classes_before = queries.failure_classes(store, {REPO.lower()}, since=since)
    # What jobs.publish does for a verified revert: the PR on arcs/revert/<sha7>, the attempt's row.
    store.update_attempt(reverted.id, trace=report_json(reverted=True), trace_path=str(path))
    store.record_pr(
        repo=REPO,
        number=901,
        url=f"https://github.com/{REPO}/pull/901",
        branch=f"arcs/revert/{CULPRIT[:7]}",
        attempt_id=reverted.id,
        head_sha=SHAS[3],
    )
    yield Reverts(seeded, reverted.id, skipped.id, before, classes_before)


@pytest.fixture
def web(reverts: Reverts) -> Client:
    return make_client(reverts.seeded, ALICE)


def test_the_attempt_page_shows_the_tool_calls_escaped(reverts: Reverts, web: Client) -> None:
    page = web.http.get(f"/attempts/{reverts.reverted_id}")
    assert page.status_code == 200
    html = page.text
    assert "<h4>Tool calls</h4>" in html
    assert "2 calls (1 refused), 0 test runs" in flat(html)
    assert "<code>search</code>" in html and "<code>run_tests</code>" in html
    assert "refused</span> executions" in html  # the badge and why
    assert "asked: 2,400 tokens, $0.0072" in flat(html)  # the two turns, each once
    # Untrusted text: escaped, never markup.
    assert "&lt;script&gt;alert(&#39;input&#39;)&lt;/script&gt;" in html
    assert "&lt;script&gt;alert(&#39;result&#39;)&lt;/script&gt;" in html
    assert "<script" not in html and "<img" not in html


def test_the_attempt_page_shows_the_change_culprit_and_revert_pr(reverts: Reverts, web: Client) -> None:
    html = flat(web.http.get(f"/attempts/{reverts.reverted_id}").text)
    assert "Change since last green" in html
    assert f"<code>{SHAS[0][:7]}..{SHAS[3][:7]}, 3 commits, 2 files</code>" in html
    assert f"<code>{CULPRIT[:7]}</code> &lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt; rules" in html
    assert "by &lt;img src=x onerror=alert(1)&gt;" in html
    assert "bisected in 2 test runs" in html
    assert f"<code>{SHAS[1][:7]}</code> pass, <code>{CULPRIT[:7]}</code> fail" in html
    assert '<tr class="culprit">' in html
    assert f'<a href="https://github.com/{REPO}/pull/901">Revert pull request #901</a>' in html
    assert f"arcs/revert/{CULPRIT[:7]}" in html and "(on_no_fix: revert)" in html
    assert "<script" not in html and "<img" not in html
    # An attempt with neither (the seed's traced fix, from before #14/#15) has no such sections.
    plain = web.http.get(f"/attempts/{reverts.seeded.info.traced_attempt_id}").text
    assert "Change since last green" not in plain and "<h4>Tool calls</h4>" not in plain
    assert change_view(TraceDoc.read(make_trace(NOW)).changes, None, None) is None


def test_a_revert_not_offered_says_why_from_the_summary_alone(reverts: Reverts, web: Client) -> None:
    html = flat(web.http.get(f"/attempts/{reverts.skipped_id}").text)  # no full trace: the stored report
    assert "Change since last green" in html and "bisected in 2 test runs" in html
    assert "not offered: the revert did not pass `pytest -q` (exit 1)" in html
    assert "Revert pull request" not in html and "<script" not in html


def test_the_attempts_list_shows_the_culprit(reverts: Reverts, web: Client) -> None:
    html = web.http.get(f"/orgs/{OCTO}/repos/{REPO.split('/')[1]}").text
    short = CULPRIT[:7]
    assert html.count(f"<code>{short}</code>") == 2  # both attempts named it
    assert f'<a href="/attempts/{reverts.reverted_id}#change"><code>{short}</code></a>' in html
    assert html.count('<span class="status status-reverted">reverted</span>') == 1
    rows = queries.repo_attempts(reverts.seeded.store, REPO).rows
    by_id = {r.id: r for r in rows}
    assert by_id[reverts.reverted_id].culprit_sha == CULPRIT and by_id[reverts.reverted_id].reverted
    assert by_id[reverts.skipped_id].culprit_short == CULPRIT[:7] and not by_id[reverts.skipped_id].reverted
    others = [r for r in rows if r.id not in (reverts.reverted_id, reverts.skipped_id)]
    assert others and all(r.culprit_sha is None and not r.reverted for r in others)
    api = web.http.get(f"/api/attempts/{reverts.reverted_id}").json()
    assert api["culprit_sha"] == CULPRIT and api["reverted"] is True


def test_a_revert_counts_apart_and_leaves_the_repair_rate(reverts: Reverts) -> None:
    store = reverts.seeded.store
    since = queries.window_start(NOW, 12)
    after = queries.stats(store, {REPO.lower()}, since=since)
    before = reverts.before
    assert (before.reverted, after.reverted) == (0, 1)
    # Still a no_fix among the finished: the fix rate does not move.
    assert after.no_fix == before.no_fix and after.finished == before.finished
    assert after.fixed == before.fixed and after.repair_rate == before.repair_rate
    assert after.attempts == before.attempts and after.prs_opened == before.prs_opened + 1
    assert after.to_json()["reverted"] == 1
    overview = queries.org_overview(store, OCTO, {r.lower() for r in OCTO_REPOS}, now=NOW, weeks=12)
    assert overview.totals.reverted == 1 and sum(w.stats.reverted for w in overview.weeks) == 1
    assert {r.repo: r.stats.reverted for r in overview.repos}[REPO] == 1
    # The breakdown by failure class lists it as reverted instead of no_fix (same total).
    test_before = {c.failure_class: c for c in reverts.classes_before}["test"]
    test_after = {c.failure_class: c for c in queries.failure_classes(store, {REPO.lower()}, since=since)}[
        "test"
    ]
    assert test_after.count("reverted") == 1 and test_before.count("reverted") == 0
    assert test_after.count("no_fix") == test_before.count("no_fix") - 1
    assert test_after.total == test_before.total


def test_prometheus_counts_reverts_apart(reverts: Reverts) -> None:
    samples, _ = scrape(client_for(reverts.seeded.settings, reverts.seeded.store))
    assert one(samples, "arcs_attempts_reverted_total") == 1
    no_fix = queries.stats(reverts.seeded.store, {r.lower() for r in OCTO_REPOS + OTHER_REPOS}).no_fix
    assert one(samples, "arcs_attempts_total", status="no_fix") == no_fix  # still among the no_fix


def test_the_org_page_shows_reverts(reverts: Reverts, web: Client) -> None:
    html = web.http.get(f"/orgs/{OCTO}").text
    assert 'data-kpi="reverted"><dt>Reverted</dt><dd title=' in html
    assert '<span class="status status-reverted">reverted</span> 1' in html
