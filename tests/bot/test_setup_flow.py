"""The GitHub App manifest flow (behind its one-time token) against a local stub of the
conversions endpoint; app.yml."""

from __future__ import annotations

import html
import json
import re
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml
from pydantic import SecretStr
from starlette.testclient import TestClient

from bot.settings import Settings, github_web_url_for, load_settings
from bot.web.app import create_app
from bot.web.fakes import ListEnqueuer, MemoryDeliveryStore
from bot.web.setup import (
    MANIFEST_FILE,
    STATE_COOKIE,
    build_manifest,
    load_manifest,
    setup_url,
)

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "setup-token-for-the-tests-0123456789"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIB-not-a-real-key\n-----END RSA PRIVATE KEY-----\n"
CONVERSION = {
    "id": 4242,
    "slug": "arcs-selfhosted",
    "name": "ARCS self-hosted",
    "pem": PEM,
    "webhook_secret": "whsec with 'quotes' and $dollars",
    "client_id": "Iv1.abc",
    "client_secret": "oauth secret with 'quotes'",
    "html_url": "https://github.com/apps/arcs-selfhosted",
}


class GitHubStub:
    """``POST /api/v3/app-manifests/{code}/conversions`` on 127.0.0.1."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                stub.requests.append(("POST", self.path, dict(self.headers)))
                match = re.fullmatch(r"/api/v3/app-manifests/([^/]+)/conversions", self.path)
                if match and match.group(1) == "good-code":
                    self._send(201, CONVERSION)
                elif match and match.group(1) == "incomplete":
                    self._send(201, {"id": 1})
                else:
                    self._send(404, {"message": "Not Found"})

            def _send(self, status: int, data: dict[str, Any]) -> None:
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/v3"

    def __enter__(self) -> GitHubStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def stub() -> Iterator[GitHubStub]:
    with GitHubStub() as running:
        yield running


@pytest.fixture
def setup_settings(settings: Settings, stub: GitHubStub) -> Settings:
    return settings.model_copy(
        update={
            "github_api_url": stub.api_url,
            "public_url": "http://arcs.test",
            "setup_token": SecretStr(TOKEN),
        }
    )


def client_for(settings: Settings) -> TestClient:
    return TestClient(create_app(settings, store=MemoryDeliveryStore(), enqueuer=ListEnqueuer()))


def setup_path(token: str | None = TOKEN, **params: str) -> str:
    """``/setup?token=…&…``."""
    query = {"token": token, **params} if token is not None else params
    return "/setup" + (f"?{urlencode(query)}" if query else "")


def start(client: TestClient, **params: str) -> tuple[str, str, dict[str, Any]]:
    """GET /setup with the token; return (form action, state, manifest)."""
    reply = client.get(setup_path(**params))
    assert reply.status_code == 200, reply.text
    action_match = re.search(r"action='([^']+)'", reply.text)
    manifest_match = re.search(r"name='manifest' value='([^']+)'", reply.text)
    assert action_match and manifest_match
    action = html.unescape(action_match.group(1))
    state = action.split("state=", 1)[1]
    return action, state, json.loads(html.unescape(manifest_match.group(1)))


# --- GET /setup -------------------------------------------------------------------------------


def test_setup_posts_the_manifest_to_github(setup_settings: Settings, stub: GitHubStub) -> None:
    with client_for(setup_settings) as client:
        reply = client.get(setup_path())
        action, state, manifest = start(client)
    web = stub.api_url.removesuffix("/api/v3")
    assert action.startswith(f"{web}/settings/apps/new?state=")
    assert "document.forms[0].submit()" in reply.text
    assert manifest["hook_attributes"] == {"url": "http://arcs.test/webhooks/github", "active": True}
    assert manifest["redirect_url"] == "http://arcs.test/setup/callback"
    assert manifest["callback_urls"] == ["http://arcs.test/login/callback"]
    assert manifest["url"] == "http://arcs.test"
    assert manifest["default_permissions"] == load_manifest()["default_permissions"]
    cookie = reply.headers["set-cookie"]
    assert STATE_COOKIE in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert "Path=/setup" in cookie and "Secure" not in cookie
    assert len(state) > 40
    # The token stays here: neither the state nor the manifest posted to GitHub carries it,
    # and the page sends no Referer.
    assert TOKEN not in action and TOKEN not in json.dumps(manifest)
    assert reply.headers["referrer-policy"] == "no-referrer"


def test_setup_for_an_organization_and_a_name(setup_settings: Settings, stub: GitHubStub) -> None:
    with client_for(setup_settings) as client:
        action, _, manifest = start(client, org="octo-org", name="ARCS for octo")
        bad = client.get(setup_path(org="../../evil"))
    assert "/organizations/octo-org/settings/apps/new?state=" in action
    assert manifest["name"] == "ARCS for octo"
    assert bad.status_code == 400


def test_https_deployments_get_a_secure_cookie(setup_settings: Settings) -> None:
    secure = setup_settings.model_copy(update={"public_url": "https://arcs.example.com"})
    with client_for(secure) as client:
        assert "Secure" in client.get(setup_path()).headers["set-cookie"]


def test_manifest_values_are_escaped(setup_settings: Settings) -> None:
    with client_for(setup_settings) as client:
        reply = client.get(setup_path(name="'><script>alert(1)</script>"))
    assert reply.status_code == 200
    assert "<script>alert(1)" not in reply.text


# --- GET /setup/callback ----------------------------------------------------------------------


def test_callback_exchanges_the_code_and_writes_secrets(setup_settings: Settings, stub: GitHubStub) -> None:
    with client_for(setup_settings) as client:
        _, state, _ = start(client)
        reply = client.get(f"/setup/callback?code=good-code&state={state}")
    assert reply.status_code == 200, reply.text
    assert "https://github.com/apps/arcs-selfhosted/installations/new" in reply.text
    assert [(m, p) for m, p, _ in stub.requests] == [("POST", "/api/v3/app-manifests/good-code/conversions")]
    assert stub.requests[0][2]["Accept"] == "application/vnd.github+json"

    home = setup_settings.home
    secrets_env, pem = home / "secrets.env", home / "github-app.pem"
    assert stat.S_IMODE(secrets_env.stat().st_mode) == 0o600
    assert stat.S_IMODE(pem.stat().st_mode) == 0o600
    assert pem.read_text() == PEM
    text = secrets_env.read_text()
    assert "ARCS_APP_ID=4242\n" in text
    assert f"ARCS_PRIVATE_KEY_PATH={pem}\n" in text
    assert "ARCS_BOT_LOGIN='arcs-selfhosted[bot]'\n" in text
    assert "ARCS_CLIENT_ID=Iv1.abc\n" in text
    assert PEM not in reply.text and "whsec" not in reply.text and "oauth secret" not in reply.text
    assert not [p for p in home.iterdir() if p.name.endswith(".tmp")]

    # The file is shell-sourceable and round-trips through the reader `arcs serve` uses.
    from bot.cli.serve_cmd import read_secrets_file

    values = read_secrets_file(secrets_env)
    assert values["ARCS_WEBHOOK_SECRET"] == CONVERSION["webhook_secret"]
    assert values["ARCS_APP_ID"] == "4242"
    assert values["ARCS_CLIENT_ID"] == "Iv1.abc"
    assert values["ARCS_CLIENT_SECRET"] == CONVERSION["client_secret"]


def test_the_secrets_file_becomes_the_next_starts_settings(setup_settings: Settings) -> None:
    from bot.cli.serve_cmd import effective_settings

    with client_for(setup_settings) as client:
        _, state, _ = start(client)
        assert client.get(f"/setup/callback?code=good-code&state={state}").status_code == 200
    bare = setup_settings.model_copy(update={"setup_token": None})
    merged = effective_settings(bare, {})
    assert merged.app_id == "4242" and merged.bot_login == "arcs-selfhosted[bot]"
    assert merged.private_key_path == setup_settings.home / "github-app.pem"
    assert merged.webhook_secret is not None
    assert merged.webhook_secret.get_secret_value() == CONVERSION["webhook_secret"]
    assert merged.client_id == "Iv1.abc"
    assert merged.client_secret is not None
    assert merged.client_secret.get_secret_value() == CONVERSION["client_secret"]


def test_an_answer_without_the_oauth_client_writes_no_client_lines(setup_settings: Settings) -> None:
    from bot.web.setup import write_credentials

    conversion = {k: v for k, v in CONVERSION.items() if not k.startswith("client_")}
    text = write_credentials(setup_settings, conversion).read_text()
    assert "ARCS_APP_ID=4242\n" in text and "CLIENT" not in text


def test_callback_then_setup_is_refused(setup_settings: Settings) -> None:
    with client_for(setup_settings) as client:
        _, state, _ = start(client)
        assert client.get(f"/setup/callback?code=good-code&state={state}").status_code == 200
        # The token is spent: the secrets file exists.
        assert client.get(setup_path()).status_code == 409
        assert client.get("/setup").status_code == 409
        assert client.get(f"/setup/callback?code=good-code&state={state}").status_code == 409


def test_state_from_another_browser_is_refused(setup_settings: Settings, stub: GitHubStub) -> None:
    with client_for(setup_settings) as victim:
        _, state, _ = start(victim)
    with client_for(setup_settings) as attacker:  # no cookie
        reply = attacker.get(f"/setup/callback?code=good-code&state={state}")
    assert reply.status_code == 400
    assert stub.requests == []
    assert not (setup_settings.home / "secrets.env").exists()


def test_forged_state_is_refused(setup_settings: Settings, stub: GitHubStub) -> None:
    with client_for(setup_settings) as client:
        start(client)
        assert client.get("/setup/callback?code=good-code&state=1.forged").status_code == 400
        assert client.get("/setup/callback?code=good-code").status_code == 400
    assert stub.requests == []


def test_expired_state_is_refused(setup_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.web import setup as setup_module

    with client_for(setup_settings) as client:
        _, state, _ = start(client)
        import time

        real = time.time
        monkeypatch.setattr("bot.web.setup.time.time", lambda: real() + setup_module.STATE_MAX_AGE_S + 5)
        assert client.get(f"/setup/callback?code=good-code&state={state}").status_code == 400


def test_github_refusing_the_code(setup_settings: Settings) -> None:
    with client_for(setup_settings) as client:
        _, state, _ = start(client)
        reply = client.get(f"/setup/callback?code=expired&state={state}")
    assert reply.status_code == 502 and "404" in reply.text
    assert not (setup_settings.home / "secrets.env").exists()


def test_incomplete_answer(setup_settings: Settings) -> None:
    with client_for(setup_settings) as client:
        _, state, _ = start(client)
        assert client.get(f"/setup/callback?code=incomplete&state={state}").status_code == 502
    assert not (setup_settings.home / "secrets.env").exists()


def test_github_unreachable(setup_settings: Settings) -> None:
    down = setup_settings.model_copy(update={"github_api_url": "http://127.0.0.1:9/api/v3"})
    with client_for(down) as client:
        _, state, _ = start(client)
        assert client.get(f"/setup/callback?code=good-code&state={state}").status_code == 502


def test_malformed_code(setup_settings: Settings, stub: GitHubStub) -> None:
    with client_for(setup_settings) as client:
        _, state, _ = start(client)
        assert client.get(f"/setup/callback?code=../x&state={state}").status_code == 400
    assert stub.requests == []


def test_configured_app_refuses_setup(setup_settings: Settings) -> None:
    configured = setup_settings.model_copy(update={"app_id": "1"})
    with client_for(configured) as client:
        assert client.get("/setup").status_code == 409
        assert client.get("/setup/callback?code=good-code&state=x").status_code == 409


# --- the setup token ----------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "", "wrong-token-of-some-length", TOKEN[:-1], TOKEN + "x"])
def test_setup_without_the_token_is_forbidden(setup_settings: Settings, token: str | None) -> None:
    with client_for(setup_settings) as client:
        reply = client.get(setup_path(token, org="octo-org"))
    assert reply.status_code == 403
    assert "setup link" in reply.text and "arcs serve" in reply.text
    assert "set-cookie" not in reply.headers and "manifest" not in reply.text


@pytest.mark.parametrize("configured", [None, SecretStr("")])
def test_no_token_configured_locks_setup(
    setup_settings: Settings, stub: GitHubStub, configured: SecretStr | None
) -> None:
    unlocked = setup_settings.model_copy(update={"setup_token": configured})
    with client_for(unlocked) as client:
        for path in ("/setup", setup_path(), setup_path(""), "/setup/callback?code=good-code&state=1.a.b"):
            reply = client.get(path)
            assert reply.status_code == 403, path
            assert "arcs serve" in reply.text and "ARCS_SETUP_TOKEN" in reply.text
    assert stub.requests == []


def test_a_short_configured_token_locks_setup(setup_settings: Settings) -> None:
    short = setup_settings.model_copy(update={"setup_token": SecretStr("short")})
    with client_for(short) as client:
        reply = client.get(setup_path("short"))
    assert reply.status_code == 403 and "shorter than 16" in reply.text


def test_a_self_made_state_and_cookie_are_forbidden(setup_settings: Settings, stub: GitHubStub) -> None:
    # Whoever has no token cannot skip /setup by presenting a state and cookie of their own.
    import time

    forged = f"{int(time.time())}.nonce.tag"
    with client_for(setup_settings) as client:
        client.cookies.set(STATE_COOKIE, forged)
        reply = client.get(f"/setup/callback?code=good-code&state={forged}")
    assert reply.status_code == 403 and "setup link" in reply.text
    assert stub.requests == []
    assert not (setup_settings.home / "secrets.env").exists()


def test_a_state_signed_with_another_token_is_forbidden(setup_settings: Settings, stub: GitHubStub) -> None:
    # e.g. the deployment restarted (a new random token) between /setup and GitHub's redirect.
    with client_for(setup_settings) as client:
        _, state, _ = start(client)
    restarted = setup_settings.model_copy(update={"setup_token": SecretStr("another-token-0123456789")})
    with client_for(restarted) as client:
        client.cookies.set(STATE_COOKIE, state)
        assert client.get(f"/setup/callback?code=good-code&state={state}").status_code == 403
    assert stub.requests == []


def test_setup_url(setup_settings: Settings) -> None:
    assert setup_url(setup_settings, "a/b+c") == "http://arcs.test/setup?token=a%2Fb%2Bc"
    slash = setup_settings.model_copy(update={"public_url": "https://arcs.example.com/"})
    assert setup_url(slash, "t") == "https://arcs.example.com/setup?token=t"


# --- URLs and app.yml -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://api.github.com/", "https://github.com"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com"),
        ("https://ghe.example.com/api/v3/", "https://ghe.example.com"),
        ("https://api.octocorp.ghe.com", "https://octocorp.ghe.com"),
        ("http://127.0.0.1:8080/api/v3", "http://127.0.0.1:8080"),
    ],
)
def test_github_web_url(api: str, web: str) -> None:
    assert github_web_url_for(api) == web
    # Settings derive it the same way unless it is given.
    assert load_settings({"ARCS_GITHUB_API_URL": api}).web_url == web


def test_packaged_manifest_is_the_repository_app_yml() -> None:
    assert MANIFEST_FILE.resolve() == (ROOT / "app.yml").resolve()


def test_app_yml_is_least_privilege_and_commented() -> None:
    manifest = load_manifest()
    assert manifest["default_permissions"] == {
        "contents": "write",
        "pull_requests": "write",
        "issues": "write",
        "checks": "write",
        "actions": "read",
        "metadata": "read",
        "members": "read",
    }
    raw = (ROOT / "app.yml").read_text()
    for permission in manifest["default_permissions"]:
        assert re.search(rf"# {permission}: \w+ --", raw), f"{permission} is not justified"
    assert set(manifest["default_events"]) == {
        "workflow_run",
        "check_suite",
        "check_run",
        "issues",
        "issue_comment",
        "pull_request_review_comment",
        "push",
        "pull_request",
    }
    for key in ("name", "description", "hook_attributes", "public"):
        assert key in manifest


def test_every_routed_event_is_subscribed_or_always_delivered() -> None:
    from bot.handlers.registry import build_router

    always = {"installation", "installation_repositories", "ping"}
    assert build_router().events() <= set(load_manifest()["default_events"]) | always


def test_build_manifest_does_not_mutate_its_base(settings: Settings) -> None:
    base = yaml.safe_load((ROOT / "app.yml").read_text())
    before = json.dumps(base, sort_keys=True)
    build_manifest(settings, base)
    assert json.dumps(base, sort_keys=True) == before
