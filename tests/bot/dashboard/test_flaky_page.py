"""The flaky-tests page of a repository (issue #26 item 1): the test history through the
classifier, scoped like the repository page, its test ids escaped (untrusted text)."""

from __future__ import annotations

import datetime as dt
import re
from urllib.parse import parse_qs, urlsplit

from bot.store.store import Store
from jobs.repair.flaky import SANDBOX_ENV, TestRun
from tests.bot.dashboard.conftest import NOW, Client

REPO = "octo-org/api"
PAGE = "/orgs/octo-org/repos/api/flaky"
SHA = "a1b2c3d4e5f6a7b8"
FLAKY = "tests/test_io.py::test_read"
BROKEN = "tests/test_io.py::test_write"


def mixed(store: Store, repo: str, test: str, *, at: dt.datetime, fails: int = 1, passes: int = 3) -> None:
    """``test`` failed ``fails`` times and passed ``passes`` times at one commit in the sandbox."""
    outcomes = [True] * fails + [False] * passes
    store.record_test_runs(
        repo,
        [
            TestRun(
                test, SHA, SANDBOX_ENV, "reproduction", failed, at=at, run_key=f"attempt:1:reproduction:{n}"
            )
            for n, failed in enumerate(outcomes)
        ],
    )


def cells(html: str, test_id_html: str) -> list[str]:
    row = re.search(rf"<tr>\s*<td><code>{re.escape(test_id_html)}</code></td>(.*?)</tr>", html, re.S)
    assert row is not None, test_id_html
    return [c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]


def test_the_page_lists_known_flaky_tests_with_their_numbers_and_evidence(fresh_client: Client) -> None:
    store = fresh_client.seeded.store
    mixed(store, REPO, FLAKY, at=NOW - dt.timedelta(days=2))
    store.record_test_runs(
        REPO, [TestRun(FLAKY, SHA, "ci:CI", "ci", True, at=NOW - dt.timedelta(hours=3), run_key="ci:9:1")]
    )
    always = [
        TestRun(BROKEN, SHA, SANDBOX_ENV, "reproduction", True, at=NOW, run_key=f"a:2:r:{n}")
        for n in range(3)
    ]
    store.record_test_runs(REPO, always)
    mixed(store, "octo-org/web", "tests/test_web.py::test_other", at=NOW)
    mixed(store, REPO, "tests/test_old.py::test_long_ago", at=NOW - dt.timedelta(days=60))

    response = fresh_client.http.get(PAGE)
    assert response.status_code == 200
    html = response.text
    rate, runs, failed, last, known, evidence = cells(html, FLAKY)
    assert (rate, runs, failed, last) == ("25%", "5", "2", "2025-03-13 09:00 UTC")
    assert known == "failed and passed at one commit"
    assert evidence.startswith(
        f"`{FLAKY}` failed 2 of 5 runs at a1b2c3d, passed here 3 of 4 in ARCS&#39; sandbox, "
        "first seen failing 2025-03-11"
    )
    assert BROKEN not in html  # failing every run is a break, not a flake
    assert "test_other" not in html  # another repository's
    assert "test_long_ago" not in html  # not seen failing within the window
    assert "<script" not in html


def test_the_repository_page_links_to_it(client: Client) -> None:
    html = client.http.get("/orgs/octo-org/repos/api").text
    assert f'<a href="{PAGE}">Flaky tests</a>' in html
    assert 'href="/orgs/octo-org/repos/api"' in client.http.get(PAGE).text  # and back


def test_without_history_the_page_says_none_is_known(client: Client) -> None:
    html = client.http.get(PAGE).text
    assert "No known flaky test." in html and "<table" not in html


def test_test_ids_and_evidence_are_escaped(fresh_client: Client) -> None:
    hostile = 'tests/t.py::test_x[<script>alert(1)</script>"><img src=x onerror=alert(2)>]'
    mixed(fresh_client.seeded.store, REPO, hostile, at=NOW)
    html = fresh_client.http.get(PAGE).text
    assert "<script" not in html and "<img" not in html
    escaped = (
        "tests/t.py::test_x[&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(2)&gt;]"
    )
    assert cells(html, escaped)[0] == "25%"  # found by its escaped id: the row is there (1 of 4)
    assert html.count("&lt;script&gt;alert(1)") == 2  # the id and the evidence sentence naming it


def test_it_is_scoped_like_the_repository_page(client: Client) -> None:
    missing = client.http.get("/orgs/no-such-org")
    for path in ("/orgs/other-org/repos/secret-repo/flaky", "/orgs/octo-org/repos/secret-repo/flaky"):
        response = client.http.get(path)
        assert response.status_code == 404 and response.text == missing.text, path
    response = client.as_(None).http.get(PAGE)
    assert response.status_code == 303
    location = urlsplit(response.headers["location"])
    assert location.path == "/login" and parse_qs(location.query)["next"] == [PAGE]
