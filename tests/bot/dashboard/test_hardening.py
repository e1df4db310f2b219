"""The dashboard and the web process from an attacker's side (issue #22, "Smaller holes").

The real app (``create_app``: webhooks, setup, login, pages, API, static) behind a real GitHub
login at the strict double: every response carries the security headers, authenticated pages are
never cached, no page needs an inline script or style the policy would have to allow, the login
callback never shows text from the request, and an id no row can have is a 404, never a 500.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from bot.settings import Settings
from bot.store.store import Store
from bot.web.app import create_app
from bot.web.fakes import ListEnqueuer
from tests.bot.dashboard.test_auth import dash_settings, loopback_http, populate
from tests.bot.webhook_support import SECRET, encode, headers, load
from tests.fakes.github_double import GitHubDouble, oauth_login

REPO = "acme/widgets"
HEADERS = ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy")


@dataclass
class Served:
    double: GitHubDouble
    store: Store
    settings: Settings
    client: TestClient
    attempt_id: int


@pytest.fixture
def served(tmp_path: Path, github_double: GitHubDouble) -> Iterator[Served]:
    populate(github_double)
    settings = dash_settings(
        tmp_path, github_double, webhook_secret=SecretStr(SECRET), setup_token=SecretStr("s" * 32)
    ).model_copy(update={"app_id": None})
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    attempt, _ = store.claim_attempt("k-1", repo=REPO, trigger="ci", run_id=4242)
    store.update_attempt(attempt.id, status="fixed", head_sha="c" * 40, title="CI failed on main")
    app = create_app(settings, store=store, enqueuer=ListEnqueuer(), http=loopback_http)
    with TestClient(app, follow_redirects=False) as client:
        yield Served(github_double, store, settings, client, attempt.id)
    store.close()


def logged_in(served: Served) -> TestClient:
    reply = oauth_login(served.client, served.double, next="/", login="alice")
    assert reply.status_code == 303
    return served.client


def assert_hardened(response: object, path: str) -> None:
    got = {name: response.headers.get(name) for name in HEADERS}  # type: ignore[attr-defined]
    assert None not in got.values(), (path, got)
    csp = got["content-security-policy"] or ""
    assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert got["x-frame-options"] == "DENY" and got["x-content-type-options"] == "nosniff"
    assert got["referrer-policy"] == "no-referrer"


class InlineFinder(HTMLParser):
    """Inline scripts, inline styles and event-handler attributes (what a CSP without
    ``unsafe-inline`` blocks)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name.lower() for name, _ in attrs}
        if tag == "style":
            self.found.append("<style>")
        if "style" in names:
            self.found.append(f"<{tag} style=…>")
        self.found += [f"<{tag} {n}=…>" for n in names if n.startswith("on")]
        if tag == "script" and "src" not in names:
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def inline_of(html: str) -> InlineFinder:
    finder = InlineFinder()
    finder.feed(html)
    return finder


def pages(served: Served) -> list[str]:
    return [
        "/",
        "/orgs/acme",
        f"/orgs/acme/repos/{REPO.split('/')[1]}",
        "/orgs/acme/events",
        f"/attempts/{served.attempt_id}",
        "/attempts/999999",
        "/logout",
    ]


def test_every_page_and_api_answer_carries_the_headers_and_no_store(served: Served) -> None:
    anonymous = ["/", "/login", "/login/callback?error=access_denied", "/logout", "/api/orgs", "/healthz"]
    for path in anonymous:
        assert_hardened(served.client.get(path), path)
    client = logged_in(served)
    api = ["/api/orgs", "/api/orgs/acme", "/api/orgs/acme/repos", f"/api/attempts/{served.attempt_id}"]
    for path in [*pages(served), *api, "/metrics"]:
        response = client.get(path)
        assert response.status_code in (200, 404), (path, response.status_code)
        assert_hardened(response, path)
        assert "no-store" in response.headers.get("cache-control", ""), path
    posted = client.post("/orgs/acme/policy", data={"csrf": "wrong"})
    assert posted.status_code == 403
    assert_hardened(posted, "POST /orgs/acme/policy")
    body = encode(load("ping"))
    webhook = client.post("/webhooks/github", content=body, headers=headers("ping", body))
    assert_hardened(webhook, "/webhooks/github")
    static = client.get("/static/dashboard.css")
    assert_hardened(static, "/static/dashboard.css")
    assert "no-store" not in static.headers.get("cache-control", "")  # static files may be cached


def test_no_page_needs_an_inline_script_or_style(served: Served) -> None:
    client = logged_in(served)
    for path in pages(served):
        finder = inline_of(client.get(path).text)
        assert finder.found == [] and finder.scripts == [], (path, finder.found, finder.scripts)
    login_error = inline_of(served.client.get("/login/callback?error=access_denied").text)
    assert login_error.found == [] and login_error.scripts == []


def test_the_setup_page_runs_only_the_script_the_policy_names(served: Served) -> None:
    from bot.web.headers import script_hash
    from bot.web.setup import AUTOSUBMIT_JS

    response = served.client.get(f"/setup?token={'s' * 32}")
    assert response.status_code == 200
    assert_hardened(response, "/setup")
    finder = inline_of(response.text)
    assert finder.found == [] and finder.scripts == [AUTOSUBMIT_JS]
    csp = response.headers["content-security-policy"]
    assert f"script-src {script_hash(AUTOSUBMIT_JS)}" in csp
    # The manifest form posts to GitHub (the double's web URL), the only other place forms may go.
    assert f"form-action 'self' {served.double.base_url}" in csp


def test_a_500_page_carries_the_headers_too() -> None:
    async def broken(scope: object, receive: object, send: object) -> None:
        raise RuntimeError("boom")

    from starlette.routing import Route

    from bot.web.headers import SecureStarlette

    app = SecureStarlette(routes=[Route("/boom", broken)])
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/boom")
    assert response.status_code == 500
    assert_hardened(response, "/boom")


def test_the_middleware_keeps_what_a_route_chose(served: Served) -> None:
    client = logged_in(served)
    api = client.get("/api/orgs")
    assert api.headers["cache-control"] == "private, no-store"  # the API's own value is kept
    assert_hardened(api, "/api/orgs")


@pytest.mark.parametrize(
    "query",
    [
        "error=access_denied&error_description=Your+account+is+locked.+Call+%2B1-555-0100+now",
        "error=redirect_uri_mismatch&error_description=Visit+evil.example+to+re-verify",
        "error=something_new&error_description=Send+your+token+to+evil.example",
        "error=%3Cscript%3Ealert(1)%3C%2Fscript%3E&error_description=x",
    ],
)
def test_the_login_callback_never_shows_text_from_the_request(served: Served, query: str) -> None:
    response = served.client.get(f"/login/callback?{query}")
    assert response.status_code == 400
    text = response.text
    for planted in ("555-0100", "evil.example", "Call", "alert", "something_new", "locked"):
        assert planted not in text, planted
    assert "Try again" in text


@pytest.mark.parametrize(
    "path",
    [
        "/api/attempts/99999999999999999999999",
        "/api/attempts/9223372036854775808",
        "/api/attempts/0",
        "/attempts/99999999999999999999999",
        "/attempts/9223372036854775808",
    ],
)
def test_an_id_no_row_can_have_is_404_never_500(served: Served, path: str) -> None:
    client = logged_in(served)
    response = client.get(path)
    assert response.status_code == 404, (path, response.status_code, response.text[:200])
    assert_hardened(response, path)


def test_the_largest_id_is_looked_up_and_not_found(served: Served) -> None:
    client = logged_in(served)
    assert client.get("/api/attempts/9223372036854775807").status_code == 404


def test_a_webhook_with_an_installation_id_beyond_64_bits_is_refused_cleanly(served: Served) -> None:
    payload = load("ping")
    payload["installation"] = {"id": 2**70}
    body = encode(payload)
    reply = served.client.post(
        "/webhooks/github", content=body, headers=headers("ping", body, delivery="big")
    )
    assert reply.status_code == 400 and "installation.id" in reply.json()["reason"]


def test_the_attempt_page_and_api_list_the_runs_that_joined(served: Served) -> None:
    served.store.update_attempt(served.attempt_id, failure_signature="a" * 24)
    for run_id in (4243, 4244):
        served.store.join_attempt(served.attempt_id, repo=REPO, run_id=run_id, workflow_name="CI (nightly)")
    client = logged_in(served)
    html = client.get(f"/attempts/{served.attempt_id}").text
    assert "Also failing the same way on this commit" in html
    for run_id in (4243, 4244):
        assert f'href="{served.double.base_url}/{REPO}/actions/runs/{run_id}">run {run_id}</a>' in html
    doc = client.get(f"/api/attempts/{served.attempt_id}").json()
    assert [r["run_id"] for r in doc["joined_runs"]] == [4243, 4244]
    assert doc["failure_signature"] == "a" * 24
    assert re.search(r"CI \(nightly\)", html)
