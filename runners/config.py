"""Per-repository configuration: the optional ``.arcs.yml`` at the repository root.

Known keys (more arrive with later features; unknown keys are kept in :attr:`RepoConfig.extra`
and never rejected, so a newer config does not break an older ARCS)::

    test: python -m pytest -q          # the test command (wins over CI and conventions)
    setup: pip install -e .            # run before the tests; a string or a list of commands
    timeout_s: 900                     # wall-clock limit for one test run
    memory_mb: 4096                    # memory limit for one test run
    setup_network:                     # hosts `setup` may reach besides the package registries
      allow: [npm.example.com, "*.example.org:8443"]   # public addresses only (runners.egress)

A file that is not valid YAML, is not a mapping, or gives a known key the wrong type raises
:class:`bot.errors.ConfigError` naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bot.errors import ConfigError

CONFIG_NAMES: tuple[str, ...] = (".arcs.yml", ".arcs.yaml")


@dataclass(frozen=True, slots=True)
class RepoConfig:
    """What ``.arcs.yml`` says; every field is optional."""

    test: str | None = None
    setup: str | None = None
    """Commands joined with `` && `` when the file gives a list."""
    timeout_s: float | None = None
    memory_mb: int | None = None
    setup_allow: tuple[str, ...] = ()
    """``setup_network.allow``: extra hosts for the setup step (never a non-public address)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Keys this version does not know, as parsed."""
    path: Path | None = None
    """The file this came from (None: no file, defaults)."""


def _where(path: Path, key: str) -> str:
    return f"{path.name}: `{key}`"


def _command(path: Path, key: str, value: object, *, allow_list: bool) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ConfigError(f"{_where(path, key)} is empty; remove it or give a command")
        return text
    if allow_list and isinstance(value, list):
        if not value or not all(isinstance(item, str) and item.strip() for item in value):
            raise ConfigError(f"{_where(path, key)} must be a command or a list of non-empty commands")
        return " && ".join(item.strip() for item in value)
    kind = "a command or a list of commands" if allow_list else "a command (a string)"
    raise ConfigError(f"{_where(path, key)} must be {kind}, got {type(value).__name__}")


def _positive(path: Path, key: str, value: object, *, integer: bool) -> float | None:
    if value is None:
        return None
    # bool is an int in Python; `timeout_s: yes` is a mistake, not 1 second.
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (integer and not isinstance(value, int))
    ):
        kind = "a positive integer" if integer else "a positive number"
        raise ConfigError(f"{_where(path, key)} must be {kind}, got {value!r}")
    if value <= 0:
        raise ConfigError(f"{_where(path, key)} must be positive, got {value!r}")
    return float(value)


def _setup_allow(path: Path, value: object) -> tuple[str, ...]:
    from runners.egress import PolicyError, parse_allow_list

    if value is None:
        return ()
    if not isinstance(value, dict) or set(value) - {"allow"}:
        raise ConfigError(f"{_where(path, 'setup_network')} must be a mapping with one key, `allow`")
    items = value.get("allow") or []
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ConfigError(f"{_where(path, 'setup_network')}: `allow` must be a list of host or host:port")
    try:
        parse_allow_list(items, trusted=False)
    except PolicyError as exc:
        raise ConfigError(f"{_where(path, 'setup_network')}: {exc}") from None
    return tuple(item.strip() for item in items)


def parse_repo_config(text: str, *, path: Path = Path(".arcs.yml")) -> RepoConfig:
    """Parse the text of an ``.arcs.yml``; see the module docstring for the keys."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path.name}: not valid YAML{where}: {problem}") from exc
    if data is None:
        return RepoConfig(path=path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path.name} must be a mapping of keys to values, got {type(data).__name__}")
    bad_keys = [k for k in data if not isinstance(k, str)]
    if bad_keys:
        raise ConfigError(f"{path.name}: keys must be strings, got {bad_keys[0]!r}")
    known = {"test", "setup", "timeout_s", "memory_mb", "setup_network"}
    timeout = _positive(path, "timeout_s", data.get("timeout_s"), integer=False)
    memory = _positive(path, "memory_mb", data.get("memory_mb"), integer=True)
    return RepoConfig(
        test=_command(path, "test", data.get("test"), allow_list=False),
        setup=_command(path, "setup", data.get("setup"), allow_list=True),
        timeout_s=timeout,
        memory_mb=int(memory) if memory is not None else None,
        setup_allow=_setup_allow(path, data.get("setup_network")),
        extra={k: v for k, v in data.items() if k not in known},
        path=path,
    )


def load_repo_config(repo: Path) -> RepoConfig:
    """Read ``repo/.arcs.yml`` (or ``.arcs.yaml``); defaults when there is none."""
    for name in CONFIG_NAMES:
        candidate = Path(repo) / name
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"cannot read {candidate}: {exc}") from exc
            return parse_repo_config(text, path=candidate)
    return RepoConfig()
