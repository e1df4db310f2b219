"""``create_app`` with the SQL store mounts the dashboard (login, pages, API, /metrics, /static);
with the tests' in-memory delivery store, or ``dashboard=False``, it does not."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import structlog
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr
from starlette.testclient import TestClient

from bot.settings import Settings
from bot.store.store import Store
from bot.web.app import create_app
from bot.web.fakes import ListEnqueuer, MemoryDeliveryStore
from tests.bot.dashboard.test_auth import PUBLIC, dash_settings, loopback_http, populate
from tests.bot.webhook_support import SECRET, encode, headers, load
from tests.fakes.github_double import GitHubDouble, oauth_login


@dataclass
class Served:
    double: GitHubDouble
    store: Store
    settings: Settings
    client: TestClient


@pytest.fixture
def served(tmp_path: Path, github_double: GitHubDouble) -> Iterator[Served]:
    populate(github_double)
    settings = dash_settings(tmp_path, github_double, webhook_secret=SecretStr(SECRET))
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    app = create_app(settings, store=store, enqueuer=ListEnqueuer(), http=loopback_http)
    with TestClient(app, follow_redirects=False) as client:
        yield Served(github_double, store, settings, client)
    store.close()


def test_a_logged_in_user_reaches_the_api_and_pages(served: Served) -> None:
    client = served.client
    assert client.get("/api/orgs").status_code == 401
    to_login = client.get("/")
    assert to_login.status_code == 303 and to_login.headers["location"].startswith("/login?next=")

    reply = oauth_login(client, served.double, next="/", login="alice")
    assert reply.status_code == 303 and reply.headers["location"] == "/"

    orgs = client.get("/api/orgs")
    assert orgs.status_code == 200
    listed = {org["owner"]: org["admin"] for org in orgs.json()["orgs"]}
    assert listed == {"acme": True, "alice": True}
    home = client.get("/")
    assert home.status_code == 200 and "alice" in home.text
    assert client.get("/orgs/acme").status_code == 200

    # The page's own logout form (with its CSRF token) logs out.
    match = re.search(r'name="csrf" value="([^"]+)"', home.text)
    assert match is not None
    assert client.post("/logout", data={"csrf": match.group(1)}).status_code == 303
    assert client.get("/api/orgs").status_code == 401


def test_a_member_cannot_change_the_policy_of_the_org(served: Served) -> None:
    assert oauth_login(served.client, served.double, login="bob").status_code == 303
    [org] = served.client.get("/api/orgs").json()["orgs"]
    assert (org["owner"], org["admin"]) == ("acme", False)


def test_static_files_metrics_and_probes_are_served(served: Served) -> None:
    client = served.client
    css = client.get("/static/dashboard.css")
    assert css.status_code == 200 and "text/css" in css.headers["content-type"]
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert {f.name for f in text_string_to_metric_families(metrics.text)} >= {
        "arcs_attempts",
        "arcs_queue_depth",
    }
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200


def test_webhook_latency_lands_in_the_store_and_in_metrics(served: Served) -> None:
    body = encode(load("ping"))
    reply = served.client.post(
        "/webhooks/github", content=body, headers=headers("ping", body, delivery="lat-1")
    )
    assert reply.status_code == 202
    row = served.store.get_delivery("lat-1")
    assert row is not None and row.latency_ms is not None and row.latency_ms > 0
    samples = {
        s.name: s.value
        for f in text_string_to_metric_families(served.client.get("/metrics").text)
        for s in f.samples
        if not s.labels
    }
    assert samples["arcs_webhook_latency_seconds_count"] == 1
    assert samples["arcs_webhook_latency_seconds_sum"] == pytest.approx(row.latency_ms / 1000)


def test_webhooks_set_no_session_cookie(served: Served) -> None:
    body = encode(load("ping"))
    reply = served.client.post("/webhooks/github", content=body, headers=headers("ping", body))
    assert "set-cookie" not in reply.headers


def test_an_in_memory_delivery_store_gets_no_dashboard(settings: Settings) -> None:
    app = create_app(settings, store=MemoryDeliveryStore(), enqueuer=ListEnqueuer())
    with TestClient(app) as client:
        for path in ("/login", "/metrics", "/api/orgs", "/static/dashboard.css"):
            assert client.get(path).status_code == 404, path
        assert client.get("/healthz").status_code == 200


def test_the_dashboard_can_be_left_out(tmp_path: Path, github_double: GitHubDouble) -> None:
    settings = dash_settings(tmp_path, github_double)
    with Store.open(f"sqlite:///{tmp_path / 'arcs.db'}") as store:
        app = create_app(settings, store=store, enqueuer=ListEnqueuer(), dashboard=False)
        with TestClient(app) as client:
            assert client.get("/login").status_code == 404
            assert client.get("/metrics").status_code == 404


def test_without_a_session_secret_create_app_warns(tmp_path: Path, github_double: GitHubDouble) -> None:
    settings = dash_settings(tmp_path, github_double, session_secret=None)
    with Store.open(f"sqlite:///{tmp_path / 'arcs.db'}") as store, structlog.testing.capture_logs() as logs:
        create_app(settings, store=store, enqueuer=ListEnqueuer())
    assert "dashboard_session_secret_unset" in [e["event"] for e in logs]


def test_the_login_redirect_uses_the_public_url(served: Served) -> None:
    reply = served.client.get("/login", params={"next": "/orgs/acme"})
    assert reply.status_code == 302
    assert reply.headers["location"].startswith(served.double.base_url + "/login/oauth/authorize?")
    assert "redirect_uri=" + PUBLIC.replace(":", "%3A").replace("/", "%2F") in reply.headers["location"]


def test_static_files_do_not_read_the_session(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    assert oauth_login(served.client, served.double, login="alice").status_code == 303
    calls: list[str] = []
    real = served.store.get_session

    def counted(id_hash: str) -> object:
        calls.append(id_hash)
        return real(id_hash)

    monkeypatch.setattr(served.store, "get_session", counted)
    assert served.client.get("/static/dashboard.css").status_code == 200
    assert calls == []
    assert served.client.get("/api/orgs").status_code == 200
    assert len(calls) == 1
