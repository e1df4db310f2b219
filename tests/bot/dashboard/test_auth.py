"""Dashboard login with GitHub, end to end through the strict GitHub double's OAuth web flow.

The app under test is the auth routes and the session middleware, plus ``/whoami`` (what
``request.state.viewer`` says); the pages and the API are tested with their own module, and the
whole app in ``test_app.py``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import structlog
from pydantic import SecretStr
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from bot.dashboard.auth import (
    SESSION_COOKIE,
    GitHubLogin,
    our_installations,
    safe_next,
    session_id_hash,
    session_middleware,
)
from bot.dashboard.viewer import Viewer
from bot.settings import Settings, load_settings
from bot.store.models import DashboardSession
from bot.store.store import Store
from tests.fakes.github_double import (
    TEST_APP_ID,
    TEST_CLIENT_ID,
    TEST_CLIENT_SECRET,
    WITH_MEMBERS,
    GitHubDouble,
    oauth_login,
)

T0 = dt.datetime(2025, 3, 13, 12, 0, tzinfo=dt.UTC)
SECRET = "test-session-secret-0123456789abcdef"
PUBLIC = "http://testserver"


class Clock:
    """The time the store and the login routes see."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


def loopback_http() -> httpx.AsyncClient:
    """The login's client: the double is on loopback (no proxy, no TLS)."""
    return httpx.AsyncClient(trust_env=False, verify=False)


def dash_settings(tmp_path: Path, double: GitHubDouble, **overrides: Any) -> Settings:
    """Settings of an ARCS whose GitHub is the double."""
    values: dict[str, Any] = {
        "client_id": TEST_CLIENT_ID,
        "client_secret": SecretStr(TEST_CLIENT_SECRET),
        "github_web_url": double.base_url,
        "github_api_url": double.api_url,
        "public_url": PUBLIC,
        "app_id": TEST_APP_ID,
        "session_secret": SecretStr(SECRET),
    }
    values.update(overrides)
    return load_settings({"ARCS_HOME": str(tmp_path / "home"), "ARCS_EMBEDDER": "hash"}, **values)


def populate(double: GitHubDouble) -> None:
    """acme (alice admin, bob member, carol pending) and alice's own account, both with ARCS."""
    double.add_org("acme")
    double.add_member("acme", "alice", role="admin")
    double.add_member("acme", "bob")
    double.add_member("acme", "carol", state="pending")
    double.add_installation("acme", ["acme/widgets", "acme/gadgets"], permissions=WITH_MEMBERS)
    double.add_installation("alice", ["alice/dots"])
    double.register_callback(PUBLIC + "/login/callback")


async def whoami(request: Request) -> JSONResponse:
    viewer: Viewer | None = request.state.viewer
    if viewer is None:
        return JSONResponse(None)
    return JSONResponse({"login": viewer.login, **viewer.scope_json(), "csrf": viewer.csrf})


@dataclass
class World:
    double: GitHubDouble
    store: Store
    clock: Clock
    settings: Settings
    client: TestClient

    def who(self) -> Any:
        return self.client.get("/whoami").json()

    def set_cookie(self, value: str) -> None:
        self.client.cookies.clear()
        self.client.cookies.set(SESSION_COOKIE, value)

    def login(self, login: str = "alice", next: str = "/orgs/acme") -> httpx.Response:
        return oauth_login(self.client, self.double, next=next, login=login)

    def rows(self) -> list[DashboardSession]:
        with self.store._sessions() as session:
            return list(session.scalars(select(DashboardSession)))

    def start(self) -> dict[str, str]:
        """GET /login; the authorize URL's query."""
        reply = self.client.get("/login", follow_redirects=False)
        assert reply.status_code == 302
        return {k: v[-1] for k, v in parse_qs(urlsplit(reply.headers["location"]).query).items()}


def build(
    tmp_path: Path, double: GitHubDouble, clock: Clock, **overrides: Any
) -> tuple[Settings, Store, Starlette]:
    settings = dash_settings(tmp_path, double, **overrides)
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}", clock=clock)
    login = GitHubLogin(settings, store, http=loopback_http, clock=clock)
    app = Starlette(
        routes=[*login.routes(), Route("/whoami", whoami)],
        middleware=session_middleware(settings, store, secret=SECRET),
    )
    return settings, store, app


@pytest.fixture
def world(tmp_path: Path, github_double: GitHubDouble) -> Iterator[World]:
    populate(github_double)
    clock = Clock()
    settings, store, app = build(tmp_path, github_double, clock)
    with TestClient(app, follow_redirects=False) as client:
        yield World(github_double, store, clock, settings, client)
    store.close()


# --- a full login ------------------------------------------------------------------------------


def test_org_admin_logs_in_through_github(world: World) -> None:
    with structlog.testing.capture_logs() as logs:
        reply = world.login("alice", next="/orgs/acme?weeks=4")
    assert reply.status_code == 303
    assert reply.headers["location"] == "/orgs/acme?weeks=4"
    cookie = reply.headers["set-cookie"]
    assert cookie.startswith(SESSION_COOKIE + "=")
    assert "httponly" in cookie.lower() and "samesite=lax" in cookie.lower()
    assert "secure" not in cookie.lower()  # http://testserver: a Secure cookie would never come back

    me = world.who()
    assert me["login"] == "alice"
    assert me["owners"] == ["acme", "alice"]
    assert me["repos"] == ["acme/gadgets", "acme/widgets", "alice/dots"]
    assert me["admin_of"] == ["acme", "alice"]

    # The row holds the id's hash, the scope and the CSRF token; never the user token.
    [row] = world.rows()
    assert row.login == "alice" and row.user_id == world.double.users["alice"]
    assert row.csrf == me["csrf"] and len(row.csrf) >= 32
    assert row.expires_at == T0 + dt.timedelta(hours=world.settings.session_hours)
    sid = world.client.cookies[SESSION_COOKIE]
    assert row.id_hash != sid and len(row.id_hash) == 64
    [user_token] = world.double.user_tokens
    dumped = repr([(r.id_hash, r.login, r.scope, r.csrf) for r in world.rows()])
    assert user_token not in dumped and user_token not in repr(logs) and user_token not in sid

    # What ARCS asked GitHub, with the user token, and nothing else.
    paths = [(r.method, r.path, r.auth) for r in world.double.requests]
    assert paths[:4] == [
        ("GET", "/login/oauth/authorize", "none"),
        ("POST", "/login/oauth/access_token", "none"),
        ("GET", "/user", "user"),
        ("GET", "/user/installations", "user"),
    ]
    assert sorted(paths[4:]) == sorted(
        [
            ("GET", f"/user/installations/{_inst(world, 'acme')}/repositories", "user"),
            ("GET", f"/user/installations/{_inst(world, 'alice')}/repositories", "user"),
            ("GET", "/user/memberships/orgs/acme", "user"),
        ]
    )
    assert all(r.api_version == "2022-11-28" for r in world.double.requests if r.auth == "user")
    assert world.double.mutations == []


def _inst(world: World, account: str) -> int:
    return next(i.id for i in world.double.installations.values() if i.account == account)


def test_org_member_sees_the_org_but_is_not_its_admin(world: World) -> None:
    assert world.login("bob").status_code == 303
    me = world.who()
    assert me["owners"] == ["acme"]
    assert me["repos"] == ["acme/gadgets", "acme/widgets"]
    assert me["admin_of"] == []


def test_pending_member_and_outsider_see_nothing(world: World) -> None:
    for login in ("carol", "mallory"):
        world.client.cookies.clear()
        assert world.login(login).status_code == 303
        me = world.who()
        assert (me["login"], me["owners"], me["repos"], me["admin_of"]) == (login, [], [], [])


def test_members_see_only_granted_repos_when_the_base_permission_is_none(world: World) -> None:
    world.double.add_org("acme", base_permission="none")
    world.double.grant("bob", "acme/widgets")
    assert world.login("bob").status_code == 303
    assert world.who()["repos"] == ["acme/widgets"]


def test_without_the_members_permission_nobody_is_an_org_admin(world: World) -> None:
    inst = world.double.installations[_inst(world, "acme")]
    inst.permissions.pop("members")
    assert world.login("alice").status_code == 303
    assert world.who()["admin_of"] == ["alice"]  # her own account still
    assert any("/user/memberships/orgs/acme: 403" in f for f in world.double.auth_failures)


def test_listings_are_read_page_by_page(world: World) -> None:
    names = [f"acme/r{i:03d}" for i in range(230)]
    world.double.installations[_inst(world, "acme")].repositories.update(names)
    assert world.login("bob").status_code == 303
    assert len(world.who()["repos"]) == 232
    pages = world.double.requests_matching("GET", r"^/user/installations/\d+/repositories$")
    assert len(pages) == 3  # acme's 232 repositories in pages of 100 (bob sees no alice/*)


def test_installations_of_other_apps_are_ignored(tmp_path: Path, github_double: GitHubDouble) -> None:
    populate(github_double)
    clock = Clock()
    # The double's App is 4242: for an ARCS configured as App 999, every installation is foreign.
    _, store, app = build(tmp_path, github_double, clock, app_id="999")
    with TestClient(app, follow_redirects=False) as client:
        assert oauth_login(client, github_double, login="alice").status_code == 303
        me = client.get("/whoami").json()
    store.close()
    assert (me["owners"], me["repos"], me["admin_of"]) == ([], [], [])
    assert github_double.requests_matching("GET", r"/repositories$") == []


def test_our_installations_filters_by_app_id_and_shape() -> None:
    listed: list[dict[str, Any]] = [
        {"id": 1, "app_id": 4242, "account": {"login": "acme", "type": "Organization"}},
        {"id": 2, "app_id": 7, "account": {"login": "evil", "type": "Organization"}},
        {"id": 3, "app_id": 4242, "account": None},
        {"id": "4", "app_id": 4242, "account": {"login": "x"}},
    ]
    assert [i["id"] for i in our_installations(listed, "4242")] == [1]
    assert [i["id"] for i in our_installations(listed, None)] == [1, 2]


# --- failures: no session ----------------------------------------------------------------------


def test_state_mismatch_is_400_and_opens_no_session(world: World) -> None:
    world.double.sign_in("alice")
    query = world.start()
    reply = world.client.get("/login/callback", params={"code": "0" * 20, "state": query["state"] + "x"})
    assert reply.status_code == 400
    assert "state mismatch" in reply.text
    # The state is single-use: the right one no longer works either.
    again = world.client.get("/login/callback", params={"code": "0" * 20, "state": query["state"]})
    assert again.status_code == 400
    # A callback nobody started (login CSRF) is refused the same way.
    world.client.cookies.clear()
    forged = world.client.get("/login/callback", params={"code": "0" * 20, "state": query["state"]})
    assert forged.status_code == 400
    assert world.rows() == [] and world.who() is None
    assert world.double.requests_matching("POST", "access_token") == []


def test_a_stale_login_is_refused(world: World) -> None:
    world.double.sign_in("alice")
    query = world.start()
    world.clock.now += dt.timedelta(minutes=11)
    reply = world.client.get("/login/callback", params={"code": "0" * 20, "state": query["state"]})
    assert reply.status_code == 400 and "expired" in reply.text
    assert world.rows() == []


def test_denied_consent_shows_a_clear_page(world: World) -> None:
    world.double.deny_next_authorization()
    reply = world.login("alice")
    assert reply.status_code == 400
    assert "Login cancelled" in reply.text and "did not authorize ARCS" in reply.text
    assert world.rows() == [] and world.who() is None
    assert world.double.requests_matching("POST", "access_token") == []


def test_a_bad_code_is_400(world: World) -> None:
    world.double.sign_in("alice")
    query = world.start()
    reply = world.client.get("/login/callback", params={"code": "f" * 20, "state": query["state"]})
    assert reply.status_code == 400
    assert "login code" in reply.text
    assert world.rows() == [] and world.who() is None


def test_wrong_client_secret_is_502_naming_the_setting(tmp_path: Path, github_double: GitHubDouble) -> None:
    populate(github_double)
    _, store, app = build(tmp_path, github_double, Clock(), client_secret=SecretStr("wrong"))
    with TestClient(app, follow_redirects=False) as client:
        reply = oauth_login(client, github_double, login="alice")
        assert reply.status_code == 502
        assert "ARCS_CLIENT_SECRET" in reply.text
        assert client.get("/whoami").json() is None
    store.close()


def test_github_errors_are_502(world: World) -> None:
    world.double.fail_next("GET", r"^/user/installations$", 500)
    reply = world.login("alice")
    assert reply.status_code == 502
    assert "HTTP 500" in reply.text
    assert world.rows() == [] and world.who() is None


def test_a_failing_installation_listing_is_502(world: World) -> None:
    world.double.fail_next("GET", r"^/user/installations/\d+/repositories$", 500)
    reply = world.login("alice")
    assert reply.status_code == 502
    assert world.rows() == [] and world.who() is None


def test_github_unreachable_is_502(tmp_path: Path, github_double: GitHubDouble) -> None:
    populate(github_double)
    # The web host answers; the API host is a closed port.
    _, store, app = build(tmp_path, github_double, Clock(), github_api_url="http://127.0.0.1:9/api/v3")
    with TestClient(app, follow_redirects=False) as client:
        reply = oauth_login(client, github_double, login="alice")
        assert reply.status_code == 502
        assert "could not be reached" in reply.text
    store.close()


def test_login_is_explained_when_not_configured(tmp_path: Path, github_double: GitHubDouble) -> None:
    _, store, app = build(tmp_path, github_double, Clock(), client_id=None, client_secret=None)
    with TestClient(app, follow_redirects=False) as client:
        reply = client.get("/login")
    store.close()
    assert reply.status_code == 503
    assert "ARCS_CLIENT_ID" in reply.text and "ARCS_CLIENT_SECRET" in reply.text
    assert f"{PUBLIC}/login/callback" in reply.text
    assert github_double.requests == []


def test_authorize_redirect_carries_client_state_and_callback(world: World) -> None:
    query = world.start()
    assert query["client_id"] == TEST_CLIENT_ID
    assert query["redirect_uri"] == PUBLIC + "/login/callback"
    assert len(query["state"]) >= 40
    assert world.start()["state"] != query["state"]


# --- the session cookie --------------------------------------------------------------------------


def test_a_tampered_cookie_is_logged_out(world: World) -> None:
    assert world.login("alice").status_code == 303
    good = world.client.cookies[SESSION_COOKIE]
    payload, stamp, signature = good.split(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    for bad in (f"{payload}.{stamp}.{flipped}", "x" + good, good.replace(payload, payload[::-1])):
        world.set_cookie(bad)
        assert world.who() is None, bad
    # A cookie signed with another key (another deployment) is not accepted either.
    from itsdangerous import TimestampSigner

    forged = TimestampSigner("another-secret").sign(payload.encode()).decode()
    world.set_cookie(forged)
    assert world.who() is None
    world.set_cookie(good)
    assert world.who()["login"] == "alice"


def test_an_expired_session_is_logged_out(world: World) -> None:
    assert world.login("alice").status_code == 303
    world.clock.now += dt.timedelta(hours=world.settings.session_hours, seconds=1)
    reply = world.client.get("/whoami")
    assert reply.json() is None
    # The stale id is dropped from the cookie.
    assert "expires=thu, 01 jan 1970" in reply.headers["set-cookie"].lower()


def test_a_database_outage_does_not_log_everyone_out(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    assert world.login("alice").status_code == 303

    def down(id_hash: str) -> None:
        raise ConnectionError("database unreachable")

    monkeypatch.setattr(world.store, "get_session", down)
    reply = world.client.get("/whoami")
    assert reply.json() is None and "set-cookie" not in reply.headers
    monkeypatch.undo()
    assert world.who()["login"] == "alice"


def test_logout_needs_the_csrf_token(world: World) -> None:
    assert world.login("alice").status_code == 303
    me = world.who()
    sid = world.client.cookies[SESSION_COOKIE]
    page = world.client.get("/logout")
    assert page.status_code == 200 and f"value='{me['csrf']}'" in page.text

    for form in ({}, {"csrf": "nope"}):
        refused = world.client.post("/logout", data=form)
        assert refused.status_code == 403
        assert world.who()["login"] == "alice"

    done = world.client.post("/logout", data={"csrf": me["csrf"]})
    assert done.status_code == 303 and done.headers["location"] == "/logout"
    assert "expires=thu, 01 jan 1970" in done.headers["set-cookie"].lower()
    assert world.rows() == []
    assert world.who() is None
    # Replaying the old cookie does not bring the session back.
    world.set_cookie(sid)
    assert world.who() is None
    assert "You are logged out" in world.client.get("/logout").text


def test_logout_accepts_the_csrf_header(world: World) -> None:
    assert world.login("alice").status_code == 303
    token = world.who()["csrf"]
    assert world.client.post("/logout", headers={"X-CSRF-Token": token}).status_code == 303
    assert world.who() is None


def test_a_new_login_replaces_the_previous_session(world: World) -> None:
    assert world.login("alice").status_code == 303
    [first] = world.rows()
    assert world.login("alice").status_code == 303
    [second] = world.rows()
    assert first.id_hash != second.id_hash and first.csrf != second.csrf


def test_the_cookie_is_secure_on_https(tmp_path: Path, github_double: GitHubDouble) -> None:
    _, store, app = build(tmp_path, github_double, Clock(), public_url="https://arcs.example")
    with TestClient(app, base_url="https://arcs.example", follow_redirects=False) as client:
        reply = client.get("/login")
    store.close()
    assert reply.status_code == 302
    assert "redirect_uri=https%3A%2F%2Farcs.example%2Flogin%2Fcallback" in reply.headers["location"]
    assert "; secure" in reply.headers["set-cookie"].lower()


def test_an_unset_session_secret_warns(tmp_path: Path, github_double: GitHubDouble) -> None:
    settings = dash_settings(tmp_path, github_double, session_secret=None)
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    with structlog.testing.capture_logs() as logs:
        session_middleware(settings, store)
    store.close()
    assert [e["event"] for e in logs] == ["dashboard_session_secret_unset"]
    assert "ARCS_SESSION_SECRET" in logs[0]["hint"]


# --- next ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "https://evil.example/x",
        "//evil.example/x",
        "/\\evil.example",
        "/\t/evil.example",
        "/\nevil",
        "\\\\evil.example",
        "javascript:alert(1)",
        "evil.example",
        "/login/callback?code=x",
        "/logout",
        "/x" * 1200,
        "",
        None,
    ],
)
def test_next_refuses_anything_but_a_local_path(value: str | None) -> None:
    assert safe_next(value) == "/"


@pytest.mark.parametrize(
    "value", ["/", "/orgs/acme", "/orgs/acme/repos/widgets?weeks=4#top", "/attempts/12", "/x%0a%2F%2Fy"]
)
def test_next_keeps_local_paths(value: str) -> None:
    assert safe_next(value) == value


def test_an_open_redirect_in_next_is_refused_end_to_end(world: World) -> None:
    reply = world.login("alice", next="//evil.example/phish")
    assert reply.status_code == 303 and reply.headers["location"] == "/"


def test_the_session_id_hash_is_sha256() -> None:
    assert session_id_hash("abc") == hashlib.sha256(b"abc").hexdigest()
