"""``arcs doctor``: the command line, its exit codes and its reading of ``$ARCS_HOME/secrets.env``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli.doctor_cmd import secrets_file_fields
from bot.settings import Settings, load_settings
from tests.fakes.github_double import TEST_APP_ID, AppKey


@pytest.fixture(autouse=True)
def _no_arcs_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The doctor reads the process environment (misspelt ARCS_* names, secrets.env precedence).
    for key in list(os.environ):
        if key.startswith("ARCS_") or key.startswith("ANTHROPIC_"):
            monkeypatch.delenv(key)


def run_json(
    settings: Settings, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, object]]:
    code = main(["doctor", "--json", *args], settings=settings)
    return code, json.loads(capsys.readouterr().out)


def statuses(doc: dict[str, object]) -> dict[str, str]:
    checks = doc["checks"]
    assert isinstance(checks, list)
    return {check["name"]: check["status"] for check in checks}


def test_warnings_only_exit_0(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(settings, capsys, "--only", "llm,broker,settings")
    assert code == 0
    assert statuses(doc) == {"settings": "ok", "broker": "warn", "llm": "warn"}
    assert doc["counts"] == {"ok": 1, "warn": 2, "fail": 0} and doc["exit_code"] == 0


def test_a_failed_check_exits_1(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(settings, capsys, "--only", "github", "--offline")
    assert code == 1 and statuses(doc) == {"github": "fail"}


def test_human_report_has_fix_lines(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--only", "github,llm", "--offline"], settings=settings) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("fail  github  ARCS_APP_ID is not set")
    assert out.count("fix: ") == 2
    assert out.rstrip().endswith("arcs doctor: 1 failed, 1 warning(s), 0 ok")


def test_unreachable_broker_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = load_settings({"ARCS_HOME": str(tmp_path), "ARCS_BROKER_URL": "redis://127.0.0.1:1/0"})
    code, doc = run_json(settings, capsys, "--only", "broker", "--timeout", "2")
    assert code == 1 and statuses(doc) == {"broker": "fail"}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--only", "broker,bogus"], "unknown check(s) bogus"),
        (["--timeout", "0"], "--timeout must be positive"),
    ],
)
def test_bad_usage_exits_2(
    settings: Settings, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    assert main(["doctor", *args], settings=settings) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err


def test_misspelt_variable_in_the_environment(
    settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCS_BROKR_URL", "redis://x")
    code, doc = run_json(settings, capsys, "--only", "settings")
    assert code == 0 and statuses(doc) == {"settings": "warn"}
    assert "ARCS_BROKR_URL" in json.dumps(doc)


def write_secrets(home: Path, key: AppKey) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "github-app.pem").write_text(key.private_pem)
    (home / "secrets.env").write_text(
        f"ARCS_APP_ID={TEST_APP_ID}\nARCS_PRIVATE_KEY_PATH={home / 'github-app.pem'}\nARCS_WEBHOOK_SECRET=whsec\n"
    )


def test_credentials_from_secrets_env_are_seen_and_flagged(
    settings: Settings, capsys: pytest.CaptureFixture[str], test_app_key: AppKey
) -> None:
    write_secrets(settings.home, test_app_key)
    code, doc = run_json(settings, capsys, "--only", "github", "--offline")
    assert code == 0 and statuses(doc) == {"github": "warn"}
    assert "share ARCS_HOME" in json.dumps(doc)


def test_credentials_in_the_environment_are_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], test_app_key: AppKey
) -> None:
    key = tmp_path / "app.pem"
    key.write_text(test_app_key.private_pem)
    settings = load_settings(
        {
            "ARCS_HOME": str(tmp_path / "home"),
            "ARCS_APP_ID": TEST_APP_ID,
            "ARCS_PRIVATE_KEY_PATH": str(key),
            "ARCS_WEBHOOK_SECRET": "whsec",
        }
    )
    code, doc = run_json(settings, capsys, "--only", "github", "--offline")
    assert code == 0 and statuses(doc) == {"github": "ok"}


def test_a_malformed_secrets_env_is_a_failed_check(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "secrets.env").write_text("this is not KEY=value\n")
    code, doc = run_json(settings, capsys, "--only", "settings")
    assert code == 1 and statuses(doc) == {"settings": "fail"}


def test_secrets_file_fields(tmp_path: Path) -> None:
    bare = load_settings({"ARCS_HOME": str(tmp_path)})
    with_app = bare.model_copy(update={"app_id": "1", "webhook_secret": None})
    assert secrets_file_fields(bare, with_app) == frozenset({"app_id"})
    assert secrets_file_fields(bare, bare) == frozenset()


def test_doctor_is_registered(capsys: pytest.CaptureFixture[str], settings: Settings) -> None:
    from bot.cli.app import build_parser

    args = build_parser().parse_args(["doctor", "--deep", "--offline", "--only", "sandbox"])
    assert args.deep and args.offline and args.only == "sandbox" and args.timeout == 10.0
