"""The dashboard issue's text (:mod:`jobs.render_dashboard`), pure."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

from jobs.render_dashboard import (
    DASHBOARD_MARKER_RE,
    DASHBOARD_TITLE,
    MAX_ROWS,
    BudgetLine,
    DashboardData,
    FlakyTest,
    OpenAttempt,
    OpenPr,
    dashboard_marker,
    render_dashboard,
    rendered_at,
)

NOW = dt.datetime(2026, 11, 28, 15, 4, 5, 123, tzinfo=dt.UTC)


def data(**changes: Any) -> DashboardData:
    return replace(DashboardData(repo="acme/widgets", now=NOW, month="2026-11"), **changes)


def test_the_marker_records_when_it_was_rendered() -> None:
    assert dashboard_marker(NOW) == "<!-- arcs:dashboard-issue rendered=2026-11-28T15:04:05.000123Z -->"
    assert rendered_at(f"text\n{dashboard_marker(NOW)}") == NOW
    assert rendered_at(dashboard_marker(NOW.replace(microsecond=0))) == NOW.replace(microsecond=0)
    assert rendered_at("<!-- arcs:dashboard-issue -->") is None  # a dashboard, no time
    assert DASHBOARD_MARKER_RE.search("<!-- arcs:dashboard-issue -->")
    assert rendered_at("no marker") is None and rendered_at(None) is None


def test_an_empty_repository_says_so_in_every_section() -> None:
    title, body = render_dashboard(data())
    assert title == DASHBOARD_TITLE
    assert body.startswith(dashboard_marker(NOW))
    for line in (
        "No attempt is queued or running.",
        "No ARCS pull request is open.",
        "Nothing is paused.",
        "None known.",
        "Nothing spent in 2026-11.",
        "_Updated 2026-11-28 15:04 UTC._",
    ):
        assert line in body, line
    assert "closing it does not stop the updates" in body


def test_every_section_lists_its_rows() -> None:
    _, body = render_dashboard(
        data(
            attempts=(
                OpenAttempt(7, "running", "CI on `main`", NOW),
                OpenAttempt(8, "queued", "issue #3", NOW, waiting=True),
            ),
            pulls=(OpenPr(12, 7, "arcs/fix/main"),),
            paused=("Attempt #8 waits for the quiet hours to end.",),
            flaky=(
                FlakyTest(
                    "tests/test_a.py::test_b",
                    0.25,
                    12,
                    3,
                    NOW,
                    "`tests/test_a.py::test_b` failed 3 of 12 runs at a1b2c3d, passed here 5 of 6 in ARCS' sandbox",
                ),
            ),
            budget=(BudgetLine("acme", 2.5, 10.0), BudgetLine("acme/widgets", 1.25)),
            dashboard_url="https://arcs.example/orgs/acme/repos/widgets",
        )
    )
    assert "| #7 | CI on `main` | running | 2026-11-28 15:04 UTC |" in body
    assert "| #8 | issue #3 | waiting for the quiet hours to end |" in body
    assert "- #12 (attempt #7, `arcs/fix/main`)" in body
    assert "- Attempt #8 waits for the quiet hours to end." in body
    assert (
        "| `tests/test_a.py::test_b` | 25% | 12 (3 failed) | 2026-11-28 15:04 UTC "
        "| failed 3 of 12 runs at a1b2c3d, passed here 5 of 6 in ARCS' sandbox |"
    ) in body
    assert "- `acme`: $2.50 of $10.00 (25%) in 2026-11." in body
    assert "- `acme/widgets`: $1.25 spent or reserved in 2026-11 (no monthly cap)." in body
    assert "([web dashboard](https://arcs.example/orgs/acme/repos/widgets))" in body


def test_repository_text_cannot_ping_forge_the_marker_or_break_the_table() -> None:
    evil = "@maintainers <!-- arcs:dashboard-issue rendered=2099-01-01T00:00:00Z --> a|b`c"
    _, body = render_dashboard(
        data(
            flaky=(FlakyTest(evil, 0.5, 2, 1, None, f"`{evil}` flipped | @team-b <!-- y -->"),),
            pulls=(OpenPr(3, 1, "@team <!-- x -->"),),
        )
    )
    assert body.count("<!--") == 1 and rendered_at(body) == NOW
    assert "@maintainers" not in body and "@team" not in body
    assert "a\\|b'c" in body and "flipped \\| @" in body
    flaky_row = next(line for line in body.splitlines() if "| 50% | 2 (1 failed) |" in line)
    assert flaky_row.count(" | ") == 4  # five cells, whatever the test id holds


def test_long_sections_are_cut_and_counted() -> None:
    rows = tuple(OpenAttempt(i, "queued", f"issue #{i}", NOW) for i in range(MAX_ROWS + 7))
    _, body = render_dashboard(data(attempts=rows))
    assert f"| #{MAX_ROWS - 1} |" in body and f"| #{MAX_ROWS} |" not in body
    assert "…and 7 more." in body
