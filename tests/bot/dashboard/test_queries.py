"""Dashboard aggregation on SQLite and on the real PostgreSQL, against the seed's own arithmetic."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from pathlib import Path

import pytest
from sqlalchemy import literal, select

from bot.dashboard import queries
from bot.dashboard.queries import Stats
from bot.store.models import UTCDateTime
from tests.bot.dashboard.conftest import NOW, Seeded
from tests.bot.dashboard.seed import EMPTY_WEEK, OCTO, OCTO_REPOS, OTHER, OTHER_REPOS, Expected

ALL_REPOS = frozenset((*OCTO_REPOS, *OTHER_REPOS))


def assert_stats(got: Stats, want: Expected) -> None:
    """Every count, rate and cost as the seed computed them."""
    assert (
        got.attempts,
        got.fixed,
        got.no_fix,
        got.refused,
        got.errors,
        got.skipped,
        got.in_progress,
        got.finished,
        got.prs_opened,
        got.prs_merged,
        got.prs_closed,
    ) == (
        want.attempts,
        want.fixed,
        want.no_fix,
        want.refused,
        want.errors,
        want.skipped,
        want.in_progress,
        want.finished,
        want.prs_opened,
        want.prs_merged,
        want.prs_closed,
    )
    assert got.total_usd == pytest.approx(want.total_usd)
    for name in ("repair_rate", "accepted_fix_rate", "usd_per_fix", "median_time_to_pr_s"):
        value, expected = getattr(got, name), getattr(want, name)
        assert (value is None) == (expected is None), name
        if expected is not None:
            assert value == pytest.approx(expected), name


def test_org_totals_match_the_seed(seeded: Seeded) -> None:
    info = seeded.info
    got = queries.stats(seeded.store, frozenset(OCTO_REPOS))
    assert_stats(got, info.org[OCTO])
    # the seed is not trivial: every rate is strictly between 0 and 1
    assert 0 < (got.repair_rate or 0) < 1 and 0 < (got.accepted_fix_rate or 0) < 1
    assert (
        got.prs_open == info.org[OCTO].prs_opened - info.org[OCTO].prs_merged - info.org[OCTO].prs_closed > 0
    )


def test_scope_is_the_visible_repositories_only(seeded: Seeded) -> None:
    store, info = seeded.store, seeded.info
    assert_stats(queries.stats(store, frozenset(OTHER_REPOS)), info.org[OTHER])
    # case-insensitive repository names, and nothing for an empty or unknown scope
    assert_stats(queries.stats(store, frozenset(r.upper() for r in OCTO_REPOS)), info.org[OCTO])
    assert queries.stats(store, frozenset()) == Stats()
    assert queries.stats(store, frozenset({"octo-org/nope"})) == Stats()
    assert queries.per_repo(store, frozenset()) == ()
    assert queries.failure_classes(store, frozenset()) == ()
    assert queries.problems(store, frozenset()) == ()


def test_per_repo_rows_match_the_seed(seeded: Seeded) -> None:
    rows = queries.per_repo(seeded.store, ALL_REPOS)
    assert [r.repo for r in rows] == sorted(ALL_REPOS)
    for row in rows:
        assert_stats(row.stats, seeded.info.repo[row.repo])
    assert {r.name for r in rows} == {"api", "web", "cli", "secret-repo"}


def test_weekly_series_has_every_week_and_matches_the_seed(seeded: Seeded) -> None:
    info = seeded.info
    weeks = queries.weekly(seeded.store, frozenset(OCTO_REPOS), now=NOW, weeks=12)
    assert len(weeks) == 12
    assert weeks[-1].start == queries.monday(NOW) == dt.date(2025, 3, 10)
    assert all(b.start - a.start == dt.timedelta(weeks=1) for a, b in itertools.pairwise(weeks))
    assert all(w.start.weekday() == 0 for w in weeks)
    assert weeks[-1].label == "2025-W11"
    for w in weeks:
        assert_stats(w.stats, info.week_expected(OCTO, w.start))
    # the empty week and the weeks before the data are present, as zeros
    empty = weeks[-1 - EMPTY_WEEK]
    assert empty.stats == Stats() and info.week_expected(OCTO, empty.start).attempts == 0
    assert weeks[0].stats == Stats()
    # the weeks add up to the window's totals
    total = queries.stats(seeded.store, frozenset(OCTO_REPOS), since=queries.window_start(NOW, 12))
    assert sum(w.stats.attempts for w in weeks) == total.attempts == info.org[OCTO].attempts
    assert sum(w.stats.prs_opened for w in weeks) == total.prs_opened
    assert sum(w.stats.total_usd for w in weeks) == pytest.approx(total.total_usd)


def test_window_start_and_a_short_window(seeded: Seeded) -> None:
    assert queries.window_start(NOW, 1) == dt.datetime(2025, 3, 10, tzinfo=dt.UTC)
    assert queries.window_start(NOW, 3) == dt.datetime(2025, 2, 24, tzinfo=dt.UTC)
    since = queries.window_start(NOW, 2)
    got = queries.stats(seeded.store, frozenset(OCTO_REPOS), since=since)
    recent = [s for s in seeded.info.specs_of(OCTO) if s.created_at >= since]
    assert got.attempts == len(recent) > 0
    assert got.attempts < seeded.info.org[OCTO].attempts


def test_failure_classes_match_the_seed(seeded: Seeded) -> None:
    classes = queries.failure_classes(seeded.store, frozenset(OCTO_REPOS))
    assert {c.failure_class: dict(c.counts) for c in classes} == seeded.info.classes[OCTO]
    assert [c.total for c in classes] == sorted((c.total for c in classes), reverse=True)
    names = {c.failure_class for c in classes}
    assert {"issue", "unknown", "test", "build"} <= names
    first = classes[0]
    assert [s for s, _ in first.counts] == [s for s in queries.STATUS_ORDER if first.count(s)]


def test_org_overview_bundles_everything(seeded: Seeded) -> None:
    ov = queries.org_overview(seeded.store, OCTO, frozenset(OCTO_REPOS), now=NOW, weeks=8)
    assert ov.since == queries.window_start(NOW, 8)
    assert len(ov.weeks) == 8 and len(ov.repos) == 3
    assert_stats(ov.totals, seeded.info.org[OCTO])  # the seed spans 8 weeks
    doc = json.loads(json.dumps(ov.to_json()))
    assert doc["totals"]["attempts"] == seeded.info.org[OCTO].attempts
    assert len(doc["weeks"]) == 8 and doc["weeks"][-1]["week"] == "2025-W11"


def test_owners_with_data(seeded: Seeded) -> None:
    owners = queries.owners_with_data(seeded.store, ALL_REPOS)
    assert [o.owner for o in owners] == [OCTO, OTHER]
    assert [o.repos for o in owners] == [3, 1]
    assert_stats(owners[0].stats, seeded.info.org[OCTO])
    assert owners[0].last_attempt_at == max(s.created_at for s in seeded.info.specs_of(OCTO))
    only = queries.owners_with_data(seeded.store, frozenset(OCTO_REPOS[:1]))
    assert [(o.owner, o.repos) for o in only] == [(OCTO, 1)]
    assert queries.owner_name(seeded.store, "OCTO-ORG") == OCTO
    assert queries.owner_name(seeded.store, "nobody") == "nobody"
    assert queries.repo_name(seeded.store, "Octo-Org/API") == "octo-org/api"


def test_problems_newest_first_without_duplicates(seeded: Seeded) -> None:
    info = seeded.info
    found = queries.problems(seeded.store, frozenset(OCTO_REPOS))
    assert len(found) == info.problems[OCTO]
    assert sorted(p.message for p in found) == sorted(info.problem_messages[OCTO])
    assert [p.created_at for p in found] == sorted((p.created_at for p in found), reverse=True)
    assert {p.source for p in found} == {"event", "attempt"}
    assert all(p.kind != "notice" for p in found)
    assert not any("other-org" in p.message for p in found)
    # paging
    first, rest = (
        queries.problems(seeded.store, frozenset(OCTO_REPOS), limit=3),
        queries.problems(seeded.store, frozenset(OCTO_REPOS), limit=100, offset=3),
    )
    assert list(first + rest) == list(found)


def test_repo_attempts_pages_newest_first(seeded: Seeded) -> None:
    repo = OCTO_REPOS[0]
    ids = seeded.info.attempt_ids[repo]
    page1 = queries.repo_attempts(seeded.store, repo, page=1, per_page=4)
    page2 = queries.repo_attempts(seeded.store, repo, page=2, per_page=4)
    assert page1.total == len(ids) and page1.pages == -(-len(ids) // 4)
    assert page1.has_next and not page1.has_prev and page2.has_prev
    rows = page1.rows + page2.rows
    assert [r.created_at for r in rows] == sorted((r.created_at for r in rows), reverse=True)
    assert {r.repo for r in rows} == {repo}
    beyond = queries.repo_attempts(seeded.store, repo, page=99, per_page=4)
    assert beyond.rows == () and beyond.total == len(ids)


def test_attempt_detail_is_scoped_and_never_carries_files(seeded: Seeded) -> None:
    info = seeded.info
    detail = queries.attempt_detail(seeded.store, info.traced_attempt_id, frozenset(OCTO_REPOS))
    assert detail is not None
    assert detail.row.status == "fixed" and detail.pr is not None and detail.pr.state == "merged"
    assert detail.trace_summary is not None and detail.trace_summary["trace_id"] == "seed-trace-0001"
    assert [e.kind for e in detail.events] == ["notice"]
    doc = json.dumps(detail.to_json())
    assert "SECRET FILE CONTENTS" not in doc and '"files"' not in doc and "markdown" not in doc
    other = info.attempt_ids[OTHER_REPOS[0]][0]
    assert queries.attempt_detail(seeded.store, other, frozenset(OCTO_REPOS)) is None
    assert queries.attempt_detail(seeded.store, 999_999, frozenset(OCTO_REPOS)) is None
    assert queries.attempt_detail(seeded.store, other, ALL_REPOS) is not None


def test_policies_show_the_owner_row_and_visible_repo_rows(seeded: Seeded) -> None:
    rows = queries.policies(seeded.store, OCTO, frozenset(OCTO_REPOS))
    assert [(p.repo, p.monthly_usd, p.timezone) for p in rows] == [("", 100.0, "Europe/Berlin")]
    assert [p.repo for p in queries.policies(seeded.store, OTHER, frozenset())] == []
    assert [p.repo for p in queries.policies(seeded.store, OTHER, frozenset(OTHER_REPOS))] == [OTHER_REPOS[0]]


@pytest.mark.parametrize(
    "when",
    [
        dt.datetime(2025, 3, 9, 23, 59, 59, 999_999, tzinfo=dt.UTC),  # Sunday, last microsecond
        dt.datetime(2025, 3, 10, 0, 0, tzinfo=dt.UTC),  # Monday midnight
        dt.datetime(2025, 3, 10, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),  # Sunday in UTC
        dt.datetime(2024, 12, 30, 12, 0, tzinfo=dt.UTC),  # ISO week 1 of 2025
        dt.datetime(2021, 1, 3, 12, 0, tzinfo=dt.UTC),  # ISO week 53 of 2020
    ],
)
def test_week_start_in_sql_agrees_with_python(seeded: Seeded, when: dt.datetime) -> None:
    dialect = seeded.store.engine.dialect.name
    expr = queries.week_start(literal(when, UTCDateTime()), dialect)
    with seeded.store.engine.connect() as conn:
        got = conn.execute(select(expr)).scalar_one()
        assert dt.date.fromisoformat(str(got)[:10]) == queries.monday(when)
        if dialect == "postgresql":
            # The bucket is UTC whatever the session's time zone (UTC+14 here).
            conn.exec_driver_sql("SET TIME ZONE 'Pacific/Kiritimati'")
            got = conn.execute(select(expr)).scalar_one()
            conn.rollback()
            assert dt.date.fromisoformat(str(got)[:10]) == queries.monday(when)


def test_week_buckets_at_the_edges(seeded: Seeded) -> None:
    repo = "Edge-Org/Mixed"
    sunday = dt.datetime(2025, 3, 9, 23, 59, 59, tzinfo=dt.UTC)
    monday = dt.datetime(2025, 3, 10, 0, 0, 0, tzinfo=dt.UTC)
    for i, when in enumerate((sunday, monday, monday + dt.timedelta(hours=1))):
        seeded.store.claim_attempt(
            f"edge-{i}", repo=repo, trigger="ci", status="fixed", created_at=when, cost_usd=1.0
        )
    weeks = queries.weekly(seeded.store, frozenset({"edge-org/mixed"}), now=NOW, weeks=2)
    assert [(w.start, w.stats.attempts, w.stats.fixed) for w in weeks] == [
        (dt.date(2025, 3, 3), 1, 1),
        (dt.date(2025, 3, 10), 2, 2),
    ]
    assert [r.repo for r in queries.per_repo(seeded.store, frozenset({"edge-org/mixed"}))] == [repo]


def test_read_trace_only_inside_the_traces_dir(seeded: Seeded, tmp_path: Path) -> None:
    traces = seeded.settings.traces_dir
    data = queries.read_trace(str(seeded.info.trace_path), traces)
    assert data is not None and data["id"] == "seed-trace-0001" and len(data["rounds"]) == 2
    # relative to the folder
    assert queries.read_trace(seeded.info.trace_path.name, traces) is not None
    outside = tmp_path / "outside.json"
    outside.write_text(seeded.info.trace_path.read_text(encoding="utf-8"), encoding="utf-8")
    assert queries.read_trace(str(outside), traces) is None
    assert queries.read_trace(str(traces / ".." / "outside.json"), traces) is None
    link = traces / "link.json"
    if not link.exists():
        link.symlink_to(outside)
    assert queries.read_trace(str(link), traces) is None
    not_a_trace = traces / "other.json"
    not_a_trace.write_text('{"format": "something-else"}', encoding="utf-8")
    garbage = traces / "garbage.json"
    garbage.write_text("{not json", encoding="utf-8")
    for path in (not_a_trace, garbage, traces / "missing.json", traces):
        assert queries.read_trace(str(path), traces) is None
    assert queries.read_trace(None, traces) is None and queries.read_trace("", traces) is None
    assert queries.read_trace(str(seeded.info.trace_path), traces, max_bytes=10) is None
