"""The dashboard pages behind a test viewer: scope, 404s, the trace viewer, escaping, the policy form."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from urllib.parse import parse_qs, urlsplit

import pytest

from bot.dashboard.pages import parse_policy_form
from bot.dashboard.viewer import Viewer
from tests.bot.dashboard.conftest import ALICE, BOB, Client, _settings, make_client
from tests.bot.dashboard.seed import OCTO, OTHER, OTHER_REPOS

OTHER_SECRETS = ("other-org secret", "secret-repo")


def kpi(html: str, name: str) -> str:
    """The value of a KPI tile."""
    found = re.search(rf"<dt>{re.escape(name)}</dt><dd[^>]*>([^<]*)</dd>", html)
    assert found, name
    return found.group(1)


def svgs(html: str) -> list[ET.Element]:
    return [ET.fromstring(m) for m in re.findall(r"<svg.*?</svg>", html, re.S)]


# --- authentication and scope ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/", "/orgs/octo-org", "/orgs/octo-org/repos/api", "/orgs/octo-org/events", "/attempts/1"]
)
def test_pages_redirect_to_login_without_a_viewer(client: Client, path: str) -> None:
    response = client.as_(None).http.get(path + "?weeks=4")
    assert response.status_code == 303
    location = urlsplit(response.headers["location"])
    assert location.path == "/login" and parse_qs(location.query)["next"] == [path + "?weeks=4"]


def test_policy_post_without_a_viewer_redirects_to_login(client: Client) -> None:
    response = client.as_(None).http.post("/orgs/octo-org/policy", data={"csrf": "x"})
    assert response.status_code == 303 and response.headers["location"].startswith("/login?next=")


def test_invisible_things_answer_the_same_404_as_missing_ones(client: Client) -> None:
    other_attempt = client.seeded.info.attempt_ids[OTHER_REPOS[0]][0]
    missing = client.http.get("/orgs/no-such-org")
    assert missing.status_code == 404
    for path in (
        "/orgs/other-org",
        "/orgs/OTHER-ORG",
        "/orgs/other-org/events",
        "/orgs/other-org/repos/secret-repo",
        "/orgs/octo-org/repos/secret-repo",
        "/orgs/octo-org/repos/no-such-repo",
        f"/attempts/{other_attempt}",
        "/attempts/999999",
    ):
        response = client.http.get(path)
        assert response.status_code == 404, path
        assert response.text == missing.text, path
        assert not any(s in response.text for s in OTHER_SECRETS)


def test_index_lists_only_the_viewers_owners(client: Client) -> None:
    html = client.http.get("/").text
    assert '<a href="/orgs/octo-org">octo-org</a>' in html
    assert "other-org" not in html
    row = re.search(r'<tr class="owner-row">.*?</tr>', html, re.S)
    assert row is not None
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(0))
    expected = client.seeded.info.org[OCTO]
    assert cells[0] == str(expected.attempts) and cells[1] == str(expected.fixed)


def test_index_of_a_viewer_without_orgs(client: Client) -> None:
    html = client.as_(Viewer.of("carol")).http.get("/").text
    assert "cannot see any organization" in html


def test_nav_shows_the_login_and_a_logout_form_with_the_csrf_token(client: Client) -> None:
    html = client.http.get("/orgs/octo-org").text
    assert '<span class="login"' in html and ">alice</span>" in html
    form = re.search(r'<form class="inline" method="post" action="/logout">.*?</form>', html, re.S)
    assert form is not None and 'name="csrf" value="csrf-alice"' in form.group(0)
    assert '<link rel="stylesheet" href="/static/dashboard.css">' in html
    assert "<script" not in html  # no JavaScript anywhere
    css = client.http.get("/static/dashboard.css")
    assert css.status_code == 200 and "text/css" in css.headers["content-type"]


# --- the org page ----------------------------------------------------------------------------------


def test_org_page_shows_the_numbers_charts_tables_and_policy(client: Client) -> None:
    info = client.seeded.info
    expected = info.org[OCTO]
    html = client.http.get("/orgs/octo-org").text
    assert kpi(html, "Attempts") == str(expected.attempts)
    assert kpi(html, "Fixed") == str(expected.fixed)
    assert kpi(html, "PRs opened") == str(expected.prs_opened)
    assert kpi(html, "PRs merged") == str(expected.prs_merged)
    assert kpi(html, "Repair rate") == f"{expected.repair_rate * 100:.0f}%"  # type: ignore[operator]
    assert kpi(html, "Accepted-fix rate") == f"{expected.accepted_fix_rate * 100:.0f}%"  # type: ignore[operator]
    assert kpi(html, "Total cost") == f"${expected.total_usd:,.2f}"
    assert kpi(html, "Cost per fix") == f"${expected.usd_per_fix:,.2f}"
    charts = svgs(html)
    assert len(charts) == 3 and all(c.get("role") == "img" for c in charts)
    for name in ("api", "web", "cli"):
        assert f'<a href="/orgs/octo-org/repos/{name}">{name}</a>' in html
    assert '<a href="/orgs/octo-org/events">' in html
    weeks_table = re.search(r'<table class="weeks">.*?</table>', html, re.S)
    assert weeks_table is not None and weeks_table.group(0).count("<tr>") == 12 + 1
    # policy: current values, and the form for an admin
    assert "Europe/Berlin" in html and "$100.00" in html and "22:00–06:00" in html
    assert 'action="/orgs/octo-org/policy"' in html and 'name="csrf" value="csrf-alice"' in html
    assert not any(s in html for s in OTHER_SECRETS)


def test_org_page_window_and_non_admin_view(client: Client) -> None:
    html = client.as_(BOB).http.get("/orgs/octo-org?weeks=1").text
    weeks_table = re.search(r'<table class="weeks">.*?</table>', html, re.S)
    assert weeks_table is not None and weeks_table.group(0).count("<tr>") == 2
    assert "Europe/Berlin" in html  # everyone who sees the org sees the policy
    assert 'action="/orgs/octo-org/policy"' not in html and "Only admins of octo-org" in html


def test_a_visible_org_without_data_renders_empty_states(client: Client) -> None:
    viewer = replace(ALICE, owners=frozenset({"octo-org", "new-org"}))
    response = client.as_(viewer).http.get("/orgs/new-org")
    assert response.status_code == 200
    assert response.text.count(">no data yet</text>") == 3  # the three charts
    assert kpi(response.text, "Attempts") == "0" and kpi(response.text, "Repair rate") == "–"


# --- repo and events pages --------------------------------------------------------------------------


def test_repo_page_lists_attempts_newest_first_with_links(client: Client) -> None:
    info = client.seeded.info
    html = client.http.get("/orgs/octo-org/repos/api").text
    assert kpi(html, "Attempts") == str(info.repo["octo-org/api"].attempts)
    ids = [int(x) for x in re.findall(r'<td><a href="/attempts/(\d+)">', html)]
    by_time = sorted(zip(info.specs, info.spec_ids, strict=True), key=lambda x: x[0].created_at, reverse=True)
    assert ids == [i for s, i in by_time if s.repo == "octo-org/api"]  # newest first
    assert '<a href="https://github.com/octo-org/api/pull/41">#41</a>' in html
    assert len(svgs(html)) == 1


def test_events_page_lists_refusals_and_errors(client: Client) -> None:
    info = client.seeded.info
    html = client.http.get("/orgs/octo-org/events").text
    table = re.search(r'<table class="problems">.*?</table>', html, re.S)
    assert table is not None
    assert table.group(0).count("<tr>") == info.problems[OCTO] + 1
    for message in info.problem_messages[OCTO]:
        assert message.replace("'", "&#39;") in html
    assert not any(s in html for s in OTHER_SECRETS)


# --- the attempt page --------------------------------------------------------------------------------


def test_attempt_page_renders_the_full_trace(client: Client) -> None:
    info = client.seeded.info
    html = client.http.get(f"/attempts/{info.traced_attempt_id}").text
    assert '<a href="https://github.com/octo-org/api/actions/runs/9000">' in html
    assert '<a href="https://github.com/octo-org/api/pull/41">Pull request #41</a>' in html
    rounds = re.findall(r'<details class="round" id="round-(\d+)">', html)
    assert rounds == ["1", "2"]
    assert len(re.findall(r'<details class="candidate"', html)) == 3
    assert "0.910" in html and "0.470" in html  # evidence scores
    assert '<pre class="diff">diff --git a/calc/core.py b/calc/core.py' in html
    assert "return age &gt;= 18" in html  # diffs are escaped text
    assert "&lt;script&gt;alert(&#39;trace&#39;)&lt;/script&gt;" in html  # hostile explanation
    assert "<script" not in html
    assert "rejected by regressions" in html and "chosen" in html
    assert "2 passed, 1 failed" in html and "3 passed, 0 failed" in html  # tests before / after
    assert "1,200 / $0.01" in html  # tokens / USD of a candidate
    assert "SECRET FILE CONTENTS" not in html


def test_attempt_page_falls_back_to_the_summary_outside_the_traces_dir(client: Client) -> None:
    # Another ARCS_HOME: the recorded trace_path is outside its traces_dir, so it is not read.
    settings = _settings(client.seeded.settings.home.parent / "elsewhere")
    other = make_client(client.seeded, settings=settings)
    html = other.http.get(f"/attempts/{client.seeded.info.traced_attempt_id}").text
    assert "summary stored with the attempt" in html
    assert "seed-trace-0001" in html and "tests/test_core.py::test_adult" in html
    assert '<details class="round"' not in html


def test_attempt_page_without_any_trace(client: Client) -> None:
    html = client.http.get(f"/attempts/{client.seeded.info.first_id(OCTO, 'refused')}").text
    assert "No trace was recorded" in html and "monthly budget of $100.00 reached" in html


# --- escaping --------------------------------------------------------------------------------------


def test_hostile_strings_are_escaped_everywhere(fresh_client: Client) -> None:
    store = fresh_client.seeded.store
    hostile_repo = "octo-org/<script>evil"
    attempt, _ = store.claim_attempt(
        "hostile",
        repo=hostile_repo,
        trigger="issue",
        status="refused",
        reason="<script>alert('reason')</script>",
        title='"><img src=x onerror=alert(1)>',
        failure_class="<b>cls</b>",
        created_at=fresh_client.seeded.info.now,
        pr_url="javascript:alert(1)",
        pr_number=7,
    )
    store.record_event("error", "<script>alert('event')</script>", attempt_id=attempt.id, repo=hostile_repo)
    viewer = replace(ALICE, repos=ALICE.repos | {hostile_repo.lower()})
    fresh_client.as_(viewer)
    pages = [
        "/orgs/octo-org",
        "/orgs/octo-org/events",
        "/orgs/octo-org/repos/<script>evil",
        f"/attempts/{attempt.id}",
    ]
    for path in pages:
        response = fresh_client.http.get(path)
        assert response.status_code == 200, path
        html = response.text
        assert "<script" not in html, path
        assert "<img" not in html and "<b>cls" not in html, path
        assert 'href="javascript:' not in html, path
    attempt_html = fresh_client.http.get(f"/attempts/{attempt.id}").text
    assert "&lt;script&gt;alert(&#39;reason&#39;)&lt;/script&gt;" in attempt_html
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in attempt_html
    events_html = fresh_client.http.get("/orgs/octo-org/events").text
    assert "&lt;script&gt;alert(&#39;event&#39;)&lt;/script&gt;" in events_html
    for svg in svgs(fresh_client.http.get("/orgs/octo-org").text):
        assert svg.get("role") == "img"  # still well-formed with markup in the class names


# --- the policy form ----------------------------------------------------------------------------------

GOOD = {
    "csrf": "csrf-alice",
    "paused": "on",
    "monthly_usd": "250.5",
    "max_prs_per_day": "3",
    "quiet_start": "20",
    "quiet_end": "7",
    "timezone": "America/New_York",
}


def seeded_policy(client: Client) -> tuple[object, ...]:
    row = client.seeded.store.get_policy(OCTO)
    assert row is not None
    return (
        row.paused,
        row.monthly_usd,
        row.max_prs_per_day,
        row.quiet_start,
        row.quiet_end,
        row.timezone,
        row.updated_by,
    )


SEEDED = (False, 100.0, 5, 22, 6, "Europe/Berlin", "admin-user")


def test_admin_saves_the_policy_and_sees_it(fresh_client: Client) -> None:
    response = fresh_client.http.post("/orgs/octo-org/policy", data=GOOD)
    assert response.status_code == 303
    assert response.headers["location"] == "/orgs/octo-org?saved=1#policy"
    assert seeded_policy(fresh_client) == (True, 250.5, 3, 20, 7, "America/New_York", "alice")
    html = fresh_client.http.get("/orgs/octo-org?saved=1").text
    assert "Policy saved." in html and "ARCS is paused for octo-org" in html
    assert "America/New_York" in html and "$250.50" in html and "20:00–07:00" in html
    assert re.search(r'name="paused" value="on" checked', html)
    # unchecking the box resumes; empty fields clear the limits
    fresh_client.http.post(
        "/orgs/octo-org/policy", data={"csrf": "csrf-alice", "monthly_usd": "", "timezone": "UTC"}
    )
    assert seeded_policy(fresh_client) == (False, None, None, None, None, "UTC", "alice")
    assert "no limit" in fresh_client.http.get("/orgs/octo-org").text


def test_saving_keeps_one_row_whatever_the_spelling(fresh_client: Client) -> None:
    store = fresh_client.seeded.store
    store.set_policy("octo-org", "octo-org/API", updated_by="x", paused=True)
    fresh_client.http.post("/orgs/OCTO-ORG/policy", data={**GOOD, "timezone": "UTC"})
    fresh_client.http.post("/orgs/Octo-Org/policy", data={"csrf": "csrf-alice", "repo": "api", "paused": "0"})
    rows = store.policies("octo-org")
    assert [(p.owner, p.repo) for p in rows] == [("octo-org", ""), ("octo-org", "octo-org/API")]
    assert rows[0].timezone == "UTC" and rows[1].paused is False
    assert store.policies("OCTO-ORG") == [] and store.policies("Octo-Org") == []


def test_admin_sets_a_repository_override(fresh_client: Client) -> None:
    response = fresh_client.http.post(
        "/orgs/octo-org/policy", data={"csrf": "csrf-alice", "repo": "octo-org/api", "paused": "1"}
    )
    assert response.status_code == 303
    row = fresh_client.seeded.store.get_policy(OCTO, "octo-org/api")
    assert row is not None and row.paused is True and row.monthly_usd is None and row.updated_by == "alice"
    assert seeded_policy(fresh_client) == SEEDED  # the owner's row is untouched
    html = fresh_client.http.get("/orgs/octo-org").text
    table = re.search(r'<table class="repo-policies">.*?</table>', html, re.S)
    assert table is not None and "octo-org/api" in table.group(0) and "paused" in table.group(0)


@pytest.mark.parametrize(
    ("viewer", "data", "status"),
    [
        (BOB, {**GOOD, "csrf": "csrf-bob"}, 403),  # not an admin
        (ALICE, {**GOOD, "csrf": "csrf-bob"}, 403),  # someone else's token
        (ALICE, {k: v for k, v in GOOD.items() if k != "csrf"}, 403),  # no token
        (replace(ALICE, csrf=""), {**GOOD, "csrf": ""}, 403),  # a session without a token
    ],
)
def test_policy_post_is_refused(
    fresh_client: Client, viewer: Viewer, data: dict[str, str], status: int
) -> None:
    response = fresh_client.as_(viewer).http.post("/orgs/octo-org/policy", data=data)
    assert response.status_code == status
    assert seeded_policy(fresh_client) == SEEDED


def test_policy_post_to_an_invisible_org_is_404(fresh_client: Client) -> None:
    admin_everywhere = replace(ALICE, admin_of=frozenset({"octo-org", "other-org"}))
    response = fresh_client.as_(admin_everywhere).http.post("/orgs/other-org/policy", data=GOOD)
    assert response.status_code == 404
    assert response.text == fresh_client.http.get("/orgs/no-such-org").text
    row = fresh_client.seeded.store.get_policy(OTHER)
    assert row is None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("quiet_start", "25", "quiet hours start must be an hour from 0 to 23"),
        ("quiet_end", "-1", "quiet hours end must be an hour from 0 to 23"),
        ("quiet_end", "", "set both quiet hours"),
        ("timezone", "Mars/Olympus_Mons", "timezone must be an IANA time zone name"),
        ("timezone", "../../etc/passwd", "timezone must be an IANA time zone name"),
        ("monthly_usd", "-3", "monthly budget must be a number"),
        ("monthly_usd", "nan", "monthly budget must be a number"),
        ("max_prs_per_day", "2.5", "PRs per day must be a whole number"),
        ("paused", "maybe", "paused must be on or off"),
        ("repo", "other-org/secret-repo", "repository must be a repository of octo-org"),
        ("repo", "nope", "octo-org/nope is not a repository of octo-org you can see"),
    ],
)
def test_invalid_policy_values_are_400_and_nothing_is_saved(
    fresh_client: Client, field: str, value: str, message: str
) -> None:
    response = fresh_client.http.post("/orgs/octo-org/policy", data={**GOOD, field: value})
    assert response.status_code == 400
    assert "Nothing was saved." in response.text and message in response.text
    assert seeded_policy(fresh_client) == SEEDED
    assert fresh_client.seeded.store.get_policy(OCTO, "octo-org/nope") is None
    if field != "repo":  # the owner's form keeps what was typed
        assert f'value="{GOOD["monthly_usd"] if field != "monthly_usd" else value}"' in response.text


def test_parse_policy_form_semantics() -> None:
    def visible(repo: str) -> bool:
        return repo.lower() in {"octo-org/api"}

    parsed, errors = parse_policy_form(
        {"monthly_usd": "$12.345", "quiet_start": "0", "quiet_end": "0"}, OCTO, visible
    )
    assert errors == [] and parsed is not None
    assert parsed.repo == "" and parsed.fields == {
        "paused": False,
        "monthly_usd": 12.35,
        "max_prs_per_day": None,
        "quiet_start": 0,
        "quiet_end": 0,
        "timezone": None,
    }
    parsed, errors = parse_policy_form({"repo": "API", "paused": "0", "timezone": "UTC"}, OCTO, visible)
    assert parsed is not None and parsed.repo == "octo-org/API"
    assert parsed.fields["paused"] is False and parsed.fields["timezone"] == "UTC"
    parsed, _ = parse_policy_form({"repo": "octo-org/api"}, OCTO, visible)
    assert parsed is not None and parsed.fields["paused"] is None  # inherit on a repository row
    parsed, errors = parse_policy_form({"quiet_start": "x", "timezone": "x" * 100}, OCTO, visible)
    assert parsed is None and len(errors) == 2
