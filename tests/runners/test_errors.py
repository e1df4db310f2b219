"""One set of user-facing error classes: runners raise the types the CLI catches (exit codes kept)."""

from __future__ import annotations

from pathlib import Path

import pytest

import bot.errors
import runners.errors
from runners.commands import resolve_test_command


def test_bot_errors_are_the_ground_floor_errors() -> None:
    for name in ("ArcsError", "ConfigError", "UsageError"):
        assert getattr(bot.errors, name) is getattr(runners.errors, name)


def test_a_runner_usage_error_is_caught_as_bot_usage_error_with_exit_code_2(tmp_path: Path) -> None:
    with pytest.raises(bot.errors.UsageError) as caught:
        resolve_test_command(tmp_path)
    assert caught.value.exit_code == 2
