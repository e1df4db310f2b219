"""``arcs serve --port N`` prints and uses links on port N (issue #23): the setup link, the app
manifest's webhook/redirect URLs and the dashboard's login callback. On the base commit they all
named ``http://localhost:8000`` whatever ``--port`` said. An explicit ``ARCS_PUBLIC_URL`` wins.

gunicorn is replaced by a stand-in that loads the app once (the real server is
``tests/bot/test_serve.py``'s)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.cli import commands, main, serve_cmd
from bot.settings import Settings, load_settings
from bot.web.setup import build_manifest


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """The settings each (stand-in) gunicorn worker built its app with."""
    import gunicorn.app.base  # type: ignore[import-untyped]

    import bot.web.app

    seen: list[Settings] = []

    class Cfg:
        def __init__(self) -> None:
            self.values: dict[str, Any] = {}

        def set(self, key: str, value: Any) -> None:
            self.values[key] = value

    class StandIn:
        def __init__(self) -> None:
            self.cfg = Cfg()

        def run(self) -> None:
            self.load_config()  # type: ignore[attr-defined]
            seen.append(self.cfg)  # type: ignore[arg-type]
            self.load()  # type: ignore[attr-defined]

    monkeypatch.setattr(gunicorn.app.base, "BaseApplication", StandIn)
    monkeypatch.setattr(bot.web.app, "create_app", lambda settings: seen.append(settings))
    if serve_cmd.register not in commands.REGISTRY:
        monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, serve_cmd.register])
    monkeypatch.delenv("ARCS_SETUP_TOKEN", raising=False)
    return seen


def test_the_links_name_the_port_given(
    loaded: list[Any], settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--port", "8765", "--workers", "1"], settings=settings) == 0
    err = capsys.readouterr().err
    assert "arcs serve: http://127.0.0.1:8765 (1 worker(s))" in err
    assert "create it at http://localhost:8765/setup?token=" in err and ":8000" not in err
    cfg, app_settings = loaded
    assert cfg.values["bind"] == ["127.0.0.1:8765"]
    assert app_settings.public_url == "http://localhost:8765"
    manifest = build_manifest(app_settings, {"name": "arcs"})
    assert manifest["callback_urls"] == ["http://localhost:8765/login/callback"]
    assert manifest["hook_attributes"]["url"] == "http://localhost:8765/webhooks/github"


def test_port_0_picks_the_port_the_links_name(
    loaded: list[Any], settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--port", "0", "--workers", "1"], settings=settings) == 0
    cfg, app_settings = loaded
    (bind,) = cfg.values["bind"]
    port = int(bind.rsplit(":", 1)[1])
    assert port > 0 and app_settings.public_url == f"http://localhost:{port}"
    assert f"create it at http://localhost:{port}/setup?token=" in capsys.readouterr().err


def test_an_explicit_public_url_is_kept(
    loaded: list[Any], tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings(
        {"ARCS_HOME": str(tmp_path / "home"), "ARCS_PUBLIC_URL": "https://arcs.example.com"}
    )
    assert main(["serve", "--port", "8765", "--workers", "1"], settings=settings) == 0
    assert loaded[1].public_url == "https://arcs.example.com"
    assert "create it at https://arcs.example.com/setup?token=" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://localhost:9000"),
        ("0.0.0.0", "http://localhost:9000"),
        ("10.1.2.3", "http://10.1.2.3:9000"),
        ("fd00::5", "http://[fd00::5]:9000"),
    ],
)
def test_with_listen_url(settings: Settings, host: str, url: str) -> None:
    assert serve_cmd.with_listen_url(settings, host, 9000, explicit=False).public_url == url
    assert serve_cmd.with_listen_url(settings, host, 9000, explicit=True).public_url == settings.public_url
