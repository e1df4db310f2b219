from __future__ import annotations

import json

import pytest

from bot.cli import main
from bot.settings import Settings


def test_unknown_command_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], settings: Settings) -> None:
    assert main(["frobnicate"], settings=settings) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("arcs: error: ")
    assert "frobnicate" in err


def test_missing_argument_names_the_subcommand(
    capsys: pytest.CaptureFixture[str], settings: Settings
) -> None:
    assert main(["search"], settings=settings) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("arcs: error: search:")


def test_json_mode_reports_errors_as_json(capsys: pytest.CaptureFixture[str], settings: Settings) -> None:
    assert main(["search", "--json"], settings=settings) == 2
    out = capsys.readouterr().out
    assert json.loads(out)["exit_code"] == 2


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str], settings: Settings) -> None:
    assert main([], settings=settings) == 2
    assert "usage: arcs" in capsys.readouterr().err


def test_bad_configuration_is_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCS_EMBEDDER", "nope")
    assert main(["index", "."]) == 2
    err = capsys.readouterr().err
    assert "ARCS_EMBEDDER" in err
    assert err.count("\n") == 1
