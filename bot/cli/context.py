"""What every ``arcs`` subcommand receives, and the settings the long-running commands see.

A leaf of ``bot.cli``: the command modules import :class:`Context` from here rather than from
:mod:`bot.cli.app` (which imports the command registry), so the commands and the parser do not
import each other.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from bot.errors import ConfigError
from bot.settings import Settings

__all__ = ["Context", "Output", "effective_settings", "read_secrets_file"]


@dataclass
class Output:
    """Where a subcommand writes: human text, or one JSON document with ``--json``."""

    json_mode: bool
    stream: IO[str] = field(default_factory=lambda: sys.stdout)
    err: IO[str] = field(default_factory=lambda: sys.stderr)

    def emit(self, data: Any, human: Callable[[], str] | str) -> None:
        """Print ``data`` as JSON in ``--json`` mode, else the human rendering."""
        if self.json_mode:
            self.stream.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
        else:
            text = human() if callable(human) else human
            self.stream.write(text.rstrip("\n") + "\n")

    def info(self, message: str) -> None:
        """Progress or notices: stderr, so ``--json`` stdout stays parseable."""
        self.err.write(message.rstrip("\n") + "\n")


@dataclass
class Context:
    """What every subcommand receives: settings (read once) and the output channel."""

    settings: Settings
    out: Output


def read_secrets_file(path: Path) -> dict[str, str]:
    """Parse ``KEY=value`` lines (shell-quoted values, ``#`` comments) of a secrets file."""
    values: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, rest = line.partition("=")
        try:
            parts = shlex.split(rest)
        except ValueError as exc:
            raise ConfigError(f"{path}:{number}: {exc}") from exc
        if not sep or not key.isidentifier() or len(parts) > 1:
            raise ConfigError(f"{path}:{number}: expected KEY=value")
        values[key] = parts[0] if parts else ""
    return values


def effective_settings(settings: Settings, environ: Mapping[str, str]) -> Settings:
    """``settings`` plus the values of ``$ARCS_HOME/secrets.env`` the environment does not set."""
    path = settings.home / "secrets.env"
    if not path.is_file():
        return settings
    extra: dict[str, str] = {}
    for key, value in read_secrets_file(path).items():
        name = key.removeprefix("ARCS_").lower()
        if key.startswith("ARCS_") and name in Settings.model_fields and not environ.get(key):
            extra[name] = value
    if not extra:
        return settings
    try:
        return Settings.model_validate({**settings.model_dump(), **extra})
    except ValidationError as exc:
        raise ConfigError(f"{path}: {exc.errors()[0]['msg']}") from exc
