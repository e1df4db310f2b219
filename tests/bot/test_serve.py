"""``arcs serve``: gunicorn + uvicorn workers in a subprocess, on a bare machine's defaults."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from bot.cli.serve_cmd import (
    APP_FACTORY,
    WORKER_CLASS,
    effective_settings,
    gunicorn_options,
    new_setup_token,
    read_secrets_file,
    share_setup_token,
    with_setup_token,
)
from bot.errors import ConfigError, UsageError
from bot.settings import Settings
from tests.bot.webhook_support import encode, headers, load

ROOT = Path(__file__).resolve().parents[2]
SECRET = "serve-test-secret"

# Runs `arcs serve` through the real CLI; registers the command first if the registry lacks it.
LAUNCHER = textwrap.dedent(
    """
    import sys
    from bot.cli import commands, serve_cmd
    if serve_cmd.register not in commands.REGISTRY:
        commands.REGISTRY.append(serve_cmd.register)
    from bot.cli.app import main
    sys.exit(main(sys.argv[1:]))
    """
)


class Server:
    def __init__(self, home: Path) -> None:
        env = {
            **os.environ,
            "ARCS_HOME": str(home),
            "ARCS_WEBHOOK_SECRET": SECRET,
            "ARCS_EMBEDDER": "hash",
            "ARCS_LOG_FORMAT": "json",
        }
        for key in ("ARCS_BROKER_URL", "ARCS_DATABASE_URL", "ARCS_APP_ID", "ARCS_SETUP_TOKEN"):
            env.pop(key, None)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, "serve", "--host", "127.0.0.1", "--port", "0", "--workers", "1"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._port: int | None = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            match = re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", line)
            if match:
                self._port = int(match.group(1))
            if "web_started" in line:
                self._ready.set()
        self._ready.set()

    def base_url(self, timeout: float = 60.0) -> str:
        if not self._ready.wait(timeout) or self._port is None or self.proc.poll() is not None:
            raise AssertionError("arcs serve did not start:\n" + "".join(self.lines[-40:]))
        return f"http://127.0.0.1:{self._port}"

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(tmp_path / "home")
    try:
        yield running
    finally:
        running.stop()


@pytest.mark.slow
def test_serve_answers_probes_and_a_signed_webhook(server: Server) -> None:
    base = server.base_url()
    with httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"] == {"database": "ok", "broker": "ok"}

        body = encode(load("issues.labeled"))
        reply = client.post("/webhooks/github", content=body, headers=headers("issues", body, secret=SECRET))
        assert reply.status_code == 202 and reply.json()["status"] == "queued", reply.text
        again = client.post("/webhooks/github", content=body, headers=headers("issues", body, secret=SECRET))
        assert again.json()["status"] == "duplicate"
        unsigned = client.post("/webhooks/github", content=body, headers={"X-GitHub-Event": "issues"})
        assert unsigned.status_code == 401
    assert server.stop() == 0  # SIGTERM: a graceful shutdown
    assert any("uvicorn" in line.lower() or "Booting worker" in line for line in server.lines)


@pytest.mark.slow
def test_serve_prints_the_setup_link_and_its_workers_require_the_token(server: Server) -> None:
    base = server.base_url()
    links = [m for line in server.lines if (m := re.search(r"create it at (\S+)", line))]
    assert len(links) == 1, "".join(server.lines)
    link = links[0].group(1)
    # --port 0: the link names the port the server really listens on (#23).
    assert link.startswith(f"http://localhost:{base.rsplit(':', 1)[1]}/setup?token=")
    token = link.split("token=", 1)[1]
    assert len(token) >= 40
    with httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/setup").status_code == 403
        assert client.get("/setup", params={"token": token[:-1]}).status_code == 403
        opened = client.get("/setup", params={"token": token})
        assert opened.status_code == 200 and "name='manifest'" in opened.text


# --- the pure parts ---------------------------------------------------------------------------


def test_gunicorn_options() -> None:
    options = gunicorn_options("0.0.0.0", 8080, 3)
    assert options["bind"] == ["0.0.0.0:8080"]
    assert options["workers"] == 3
    assert options["worker_class"] == WORKER_CLASS == "uvicorn_worker.UvicornWorker"
    assert options["preload_app"] is False
    assert gunicorn_options("::1", 80, 1)["bind"] == ["[::1]:80"]


@pytest.mark.parametrize(("port", "workers"), [(-1, 1), (70000, 1), (8000, 0)])
def test_gunicorn_options_refuse_nonsense(port: int, workers: int) -> None:
    with pytest.raises(UsageError):
        gunicorn_options("127.0.0.1", port, workers)


def test_worker_class_is_importable() -> None:
    module, _, name = WORKER_CLASS.rpartition(".")
    assert getattr(__import__(module), name)


def test_deploy_config_uses_the_factory() -> None:
    namespace: dict[str, object] = {}
    exec(compile((ROOT / "deploy" / "gunicorn.conf.py").read_text(), "gunicorn.conf.py", "exec"), namespace)
    assert namespace["wsgi_app"] == APP_FACTORY == "bot.web.asgi:create()"
    assert namespace["worker_class"] == WORKER_CLASS
    assert namespace["preload_app"] is False


def test_asgi_module_does_no_work_at_import() -> None:
    code = "import sys, bot.web.asgi as a; print(a.app._app is None, 'bot.web.app' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_secrets_file_fills_unset_settings(settings: Settings) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "secrets.env").write_text(
        "# comment\nARCS_APP_ID=77\nARCS_WEBHOOK_SECRET='a b'\nARCS_BOT_LOGIN='x[bot]'\nOTHER=1\n"
    )
    merged = effective_settings(settings, {})
    assert merged.app_id == "77" and merged.bot_login == "x[bot]"
    assert merged.webhook_secret is not None and merged.webhook_secret.get_secret_value() == "a b"
    assert merged.home == settings.home and merged.embedder == settings.embedder
    # The environment wins over the file.
    assert effective_settings(settings, {"ARCS_APP_ID": "1"}).app_id is None


def test_secrets_file_client_credentials_reach_the_settings(settings: Settings) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "secrets.env").write_text("ARCS_CLIENT_ID=Iv1.abc\nARCS_CLIENT_SECRET='s e c'\n")
    merged = effective_settings(settings, {})
    assert merged.client_id == "Iv1.abc"
    assert merged.client_secret is not None and merged.client_secret.get_secret_value() == "s e c"


def test_no_secrets_file(settings: Settings) -> None:
    assert effective_settings(settings, {}) is settings


@pytest.mark.parametrize("line", ["NOT A LINE", "A='unterminated", "A=b c"])
def test_malformed_secrets_file(tmp_path: Path, line: str) -> None:
    path = tmp_path / "secrets.env"
    path.write_text(line + "\n")
    with pytest.raises(ConfigError):
        read_secrets_file(path)


# --- the setup token --------------------------------------------------------------------------


def test_an_unconfigured_app_gets_a_fresh_setup_token(settings: Settings) -> None:
    bare = settings.model_copy(
        update={"app_id": None, "setup_token": None, "public_url": "https://arcs.example/"}
    )
    locked, link = with_setup_token(bare, make_token=lambda: "tok-0123456789abcdef")
    assert link == "https://arcs.example/setup?token=tok-0123456789abcdef"
    assert locked.setup_token is not None and locked.setup_token.get_secret_value() == "tok-0123456789abcdef"
    assert locked.home == bare.home and bare.setup_token is None


def test_random_tokens_differ_and_are_long() -> None:
    first, second = new_setup_token(), new_setup_token()
    assert first != second and len(first) >= 43 and re.fullmatch(r"[A-Za-z0-9_-]+", first)


def test_a_configured_setup_token_is_kept(settings: Settings) -> None:
    given = settings.model_copy(update={"app_id": None, "setup_token": SecretStr("operator-chosen-token")})
    locked, link = with_setup_token(given, make_token=lambda: pytest.fail("no new token"))
    assert locked is given
    assert link is not None and link.endswith("/setup?token=operator-chosen-token")


def test_a_short_configured_setup_token_is_a_config_error(settings: Settings) -> None:
    given = settings.model_copy(update={"app_id": None, "setup_token": SecretStr("short")})
    with pytest.raises(ConfigError, match="ARCS_SETUP_TOKEN must be at least 16 characters"):
        with_setup_token(given)


def test_a_configured_app_gets_no_setup_token(settings: Settings) -> None:
    with_id = settings.model_copy(update={"app_id": "12"})
    assert with_setup_token(with_id, make_token=lambda: pytest.fail("no token")) == (with_id, None)
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "secrets.env").write_text("ARCS_APP_ID=12\n")
    bare = settings.model_copy(update={"app_id": None})
    assert with_setup_token(bare, make_token=lambda: pytest.fail("no token")) == (bare, None)


def test_the_token_is_shared_through_the_environment(settings: Settings) -> None:
    environ: dict[str, str] = {}
    share_setup_token(settings.model_copy(update={"setup_token": None}), environ)
    assert environ == {}
    share_setup_token(settings.model_copy(update={"setup_token": SecretStr("t" * 20)}), environ)
    assert environ == {"ARCS_SETUP_TOKEN": "t" * 20}
