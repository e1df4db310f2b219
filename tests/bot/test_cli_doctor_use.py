"""``arcs doctor`` for someone who only uses the command line (issue #23): the App's checks (web,
database, broker, github) do not make it exit 1. On the base commit it always exited 1 there,
since ``github`` fails without ``ARCS_APP_ID``. Once an App setting is set, every check counts.

The checks are stand-ins with fixed outcomes: what is asserted is which ones run and count."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

import pytest

import bot.doctor
from bot.cli import main
from bot.doctor import CheckResult, DoctorOptions
from bot.settings import Settings, load_settings

APP_ONLY = ("web", "database", "broker", "github")


def _stand_in(name: str) -> bot.doctor.Check:
    def check(_settings: Settings, _options: DoctorOptions) -> CheckResult:
        if name in APP_ONLY:
            return CheckResult(name, "fail", f"{name} is not set up", "set it up")
        return CheckResult(name, "warn" if name == "llm" else "ok", f"{name} works")

    return check


@pytest.fixture(autouse=True)
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> Mapping[str, bot.doctor.Check]:
    for key in list(os.environ):
        if key.startswith(("ARCS_", "ANTHROPIC_")):
            monkeypatch.delenv(key)
    table = {name: _stand_in(name) for name in bot.doctor.CHECKS}
    monkeypatch.setattr(bot.doctor, "CHECKS", table)
    return table


def _run(settings: Settings, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["doctor", "--json", *args], settings=settings)
    return code, json.loads(capsys.readouterr().out)


def _names(doc: dict[str, object]) -> list[str]:
    checks = doc["checks"]
    assert isinstance(checks, list)
    return [check["name"] for check in checks]


def test_a_command_line_user_gets_exit_0(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _run(settings, capsys)
    assert code == 0 and doc["exit_code"] == 0 and doc["for"] == "cli"
    assert _names(doc) == ["settings", "qdrant", "sandbox", "limits", "embedder", "llm"]
    assert main(["doctor"], settings=settings) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1] == (
        "checked for the command line (no GitHub App setting is set); web, database, broker, github "
        "are the App's: `arcs doctor --for app`"
    )


def test_a_failing_command_line_check_still_exits_1(
    settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = dict(bot.doctor.CHECKS)
    table["sandbox"] = lambda _s, _o: CheckResult("sandbox", "fail", "bubblewrap is missing", "install it")
    monkeypatch.setattr(bot.doctor, "CHECKS", table)
    code, doc = _run(settings, capsys)
    assert code == 1 and doc["for"] == "cli"


@pytest.mark.parametrize(
    "variable",
    ["ARCS_APP_ID", "ARCS_WEBHOOK_SECRET", "ARCS_DATABASE_URL", "ARCS_BROKER_URL", "ARCS_PUBLIC_URL"],
)
def test_an_app_setting_makes_every_check_count(
    variable: str, tmp_path: object, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "x")
    settings = load_settings({"ARCS_HOME": str(tmp_path)})
    code, doc = _run(settings, capsys)
    assert code == 1 and doc["for"] == "app" and _names(doc) == list(bot.doctor.CHECKS)


def test_the_app_values_in_secrets_env_count_too(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "secrets.env").write_text("ARCS_APP_ID=12345\n", encoding="utf-8")
    code, doc = _run(settings, capsys)
    assert code == 1 and doc["for"] == "app"


def test_for_and_only_choose_explicitly(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _run(settings, capsys, "--for", "app")
    assert code == 1 and doc["for"] == "app" and len(_names(doc)) == len(bot.doctor.CHECKS)
    code, doc = _run(settings, capsys, "--only", "github")
    assert code == 1 and _names(doc) == ["github"] and "for" not in doc
