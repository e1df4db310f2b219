"""The one ``.arcs.yml`` schema: what a repository can say to ARCS, and its two readers.

The file is ``.arcs.yml`` (or ``.arcs.yaml``) at the repository root, or ``.github/arcs.yml``
(:data:`CONFIG_NAMES`); a repository with two of them is an error naming both.

:func:`parse` reads the whole file the App's way: every key is validated and an unknown key is an
error with a did-you-mean (a typo must not silently turn a setting off). :func:`parse_repo_config`
reads only the runner keys (``test``, ``setup``, ``timeout_s``, ``memory_mb``, ``setup_network``)
and keeps the rest in :attr:`runners.config.RepoConfig.extra`; :func:`load_local` validates a local
folder's whole file the App's way (``arcs fix``, ``arcs test``: an invalid file stops them before
anything runs). The keys, their types, defaults and descriptions are one model,
:class:`jobs.config_model.ArcsConfig` (pydantic; ``docs/arcs.schema.json`` is generated from it);
this module reads files with it. Runners never read the file; they get a
:class:`runners.config.RepoConfig` (plain values) from here::

    triggers:                 # which events start a repair (all on by default)
      ci: true                #   a failed workflow run
      issues: true            #   an issue labelled with `label`
      comments: true          #   "/arcs fix" in a comment
    label: arcs               # the issue label that asks for a repair
    branches: ["main", "release/*"]   # CI failures on these branches are repaired (globs; default: all)
    setup: pip install -e .   # run before the tests; a string or a list of commands
    test: python -m pytest -q # the test command (wins over CI and conventions)
    timeout_s: 900            # wall-clock limit for one test run
    memory_mb: 4096           # memory limit for one test run
    setup_network:            # hosts `setup` may reach besides the package registries
      allow: [npm.example.com, "*.example.org:8443"]   # public addresses only (runners.egress)
    tier: auto                # 0 | small | medium | large | auto
    budget: {iterations: 5, usd: 2.0, wall_s: 1800}
    max_prs_per_day: 5        # per repository
    max_open_prs: 3           # ARCS pull requests open at once in the repository
    draft: true               # open pull requests as drafts
    pr_labels: [arcs]         # labels put on ARCS' pull requests
    paths:
      allowed: ["src/**"]     # gitignore-style; empty: everything not denied
      denied: [".github/workflows/**"]
    notify_unrepairable: false   # comment / check-run summary when a CI failure is not repairable
    open_pr_on_partial: false    # open a PR when the targets pass but the command still fails on
                                 # tests that already failed before (verdict `partial`)
    on_no_fix: report            # report | revert: when no forward fix passes on the default
                                 # branch, open a verified revert PR of the culprit commit
    dependency_updates: fix      # fix | comment | off: a red dependency update is migrated,
                                 # only commented on, or left alone (the bump is kept)

Errors name the key: ``.arcs.yml: budget.usd: expected a number, got 'lots'``
(:class:`ArcsConfigError`, a :class:`~runners.errors.ConfigError`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from jobs.config_model import (
    DEFAULT_DENIED,
    ON_NO_FIX,
    RUNNER_KEYS,
    ArcsConfig,
    BudgetConfig,
    DependencyUpdates,
    OnNoFix,
    PathsConfig,
    SetupNetwork,
    Triggers,
    errors_to_message,
    yaml_keys,
)
from runners import wsfs
from runners.config import RepoConfig
from runners.errors import ConfigError

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "CONFIG_NAMES",
    "DEFAULT_DENIED",
    "ON_NO_FIX",
    "RUNNER_KEYS",
    "ArcsConfig",
    "ArcsConfigError",
    "BudgetConfig",
    "OnNoFix",
    "PathsConfig",
    "Reader",
    "RepoConfig",
    "SetupNetwork",
    "Triggers",
    "dependency_updates_of",
    "from_repo_config",
    "inherited_keys",
    "load",
    "load_local",
    "load_repo_config",
    "merge",
    "parse",
    "parse_repo_config",
    "paths_of",
]

CONFIG_NAMES: tuple[str, ...] = (".arcs.yml", ".arcs.yaml", ".github/arcs.yml")
"""Where a repository keeps its ARCS configuration: the root, or ``.github/`` (Probot's place for an
app's file). One of them: a repository with two is an error naming both, never a silent pick."""
CONFIG_LIMIT = 1 << 20
"""The largest ``.arcs.yml`` read from a repository (1 MiB)."""


class ArcsConfigError(ConfigError):
    """A malformed ``.arcs.yml``; :attr:`key` is the dotted key at fault (None: the file itself)."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def _name(path: str | Path) -> str:
    """The file's name as messages show it: repository-relative (``.github/arcs.yml``), or
    ``owner/repo:file`` for another repository's (organisation defaults)."""
    if ":" in str(path):
        return str(path)
    file = Path(path)
    return f".github/{file.name}" if file.parent.name == ".github" else file.name


def _only_one(found: list[str]) -> None:
    """Two configuration files: which one ARCS would follow is a guess, so neither is read."""
    if len(found) > 1:
        raise ArcsConfigError(
            f"{' and '.join(found)} both configure ARCS; keep one of them (ARCS reads a single file)"
        )


def _yaml_mapping(text: str, name: str) -> dict[str, Any]:
    """The YAML mapping of ``text`` ({} for an empty file); one line naming the file otherwise."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ArcsConfigError(f"{name}: not valid YAML{where}: {problem}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ArcsConfigError(f"{name} must be a mapping of keys to values, got {type(data).__name__}")
    bad_keys = [k for k in data if not isinstance(k, str)]
    if bad_keys:
        raise ArcsConfigError(f"{name}: keys must be strings, got {bad_keys[0]!r}")
    return data


def _validate(model: type[M], data: Mapping[str, Any], name: str, **extra: Any) -> M:
    """``data`` as ``model``; the first of pydantic's errors as one line naming the key."""
    try:
        value = model.model_validate({**data, **extra})
        # `path` is the model's record of the file, not a key the file may write.
        if set(data) <= set(yaml_keys(model)):
            return value
        errors: list[ErrorDetails] = []
    except ValidationError as exc:
        errors = exc.errors()
    message, key = errors_to_message(errors, data)
    raise ArcsConfigError(f"{name}: {message}", key=key) from None


# --------------------------------------------------------------------------- the runner keys


def parse_repo_config(text: str, *, path: Path = Path(".arcs.yml")) -> RepoConfig:
    """Only the runner keys of an ``.arcs.yml`` (lenient: other keys land in ``extra``)."""
    data = _yaml_mapping(text, _name(path))
    if not data:
        return RepoConfig(path=path)
    runner = _validate(ArcsConfig, {k: v for k, v in data.items() if k in RUNNER_KEYS}, _name(path))
    return RepoConfig(
        test=runner.test,
        setup=runner.setup,
        timeout_s=runner.timeout_s,
        memory_mb=runner.memory_mb,
        setup_allow=runner.setup_allow,
        extra={k: v for k, v in data.items() if k not in RUNNER_KEYS},
        path=path,
    )


def load_repo_config(repo: Path) -> RepoConfig:
    """Read the folder's config (:data:`CONFIG_NAMES`) leniently; defaults when there is none."""
    found = [name for name in CONFIG_NAMES if wsfs.entry_stat(Path(repo), name) is not None]
    _only_one(found)
    if not found:
        return RepoConfig()
    candidate = Path(repo) / found[0]
    try:
        text = wsfs.read_text(Path(repo), found[0], limit=CONFIG_LIMIT, whole=True)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {candidate}: {exc}") from exc
    return parse_repo_config(text, path=candidate)


def paths_of(runner: RepoConfig) -> PathsConfig:
    """The ``paths:`` part of an ``.arcs.yml`` read leniently for its runner keys (``arcs fix``,
    the Action): validated like :func:`parse` does, so a bad pattern is an error here too."""
    name = _name(runner.path) if runner.path is not None else ".arcs.yml"
    paths = runner.extra.get("paths")
    return _validate(ArcsConfig, {"paths": paths}, name).paths


def dependency_updates_of(runner: RepoConfig) -> DependencyUpdates:
    """The ``dependency_updates:`` key of an ``.arcs.yml`` read leniently for its runner keys
    (``arcs fix``): validated like :func:`parse` does (``fix`` when the file does not say)."""
    name = _name(runner.path) if runner.path is not None else ".arcs.yml"
    value = runner.extra.get("dependency_updates")
    data = {} if value is None else {"dependency_updates": value}
    return _validate(ArcsConfig, data, name).dependency_updates


# --------------------------------------------------------------------------- the whole file


def parse(text: str, *, path: str = ".arcs.yml") -> ArcsConfig:
    """Parse the text of ``.arcs.yml``; :class:`ArcsConfigError` (a ConfigError) names the key."""
    name = _name(path)
    return _validate(ArcsConfig, _yaml_mapping(text, name), name, path=path)


Reader = Callable[[str], str | None]
"""A repository's file text by path (None: no such file)."""


def _find(read: Reader, repo: str = "") -> tuple[str, str] | None:
    """The one config file ``read`` sees, as (name, text); ``repo``: another repository's."""
    found = [(name, text) for name in CONFIG_NAMES if (text := read(name)) is not None]
    _only_one([f"{repo}:{name}" if repo else name for name, _ in found])
    return found[0] if found else None


def load(read: Reader, *, org: Callable[[str], Reader] | None = None) -> ArcsConfig:
    """The one of :data:`CONFIG_NAMES` that ``read(path)`` returns (defaults when none; two: an
    :class:`ArcsConfigError` naming both).

    ``org(repo)`` reads another repository (the App's gateway gives it): a file that says
    ``extends: <org>/.github`` gets that repository's config as defaults under its own keys,
    each file validated on its own first (an error names the file at fault). Without ``org``
    (a local folder) ``extends`` is validated and not followed.
    """
    found = _find(read)
    if found is None:
        return ArcsConfig()
    name, text = found
    config = parse(text, path=name)
    if config.extends is None or org is None:
        return config
    base = _find(org(config.extends), config.extends)
    if base is None:
        raise ArcsConfigError(
            f"{name}: extends: {config.extends} has no {' or '.join(CONFIG_NAMES)}", key="extends"
        )
    base_name = f"{config.extends}:{base[0]}"
    defaults = parse(base[1], path=base_name)
    if defaults.extends is not None:
        raise ArcsConfigError(f"{base_name}: extends: organisation defaults extend nothing", key="extends")
    org_map, own_map = _yaml_mapping(base[1], base_name), _yaml_mapping(text, name)
    return _validate(
        ArcsConfig,
        merge(org_map, own_map),
        name,
        path=name,
        defaults_file=base_name,
        inherited=inherited_keys(org_map, own_map),
    )


def inherited_keys(defaults: Mapping[str, Any], own: Mapping[str, Any]) -> tuple[str, ...]:
    """The keys :func:`merge` takes from ``defaults`` (dotted inside a section: ``budget.usd``),
    in the defaults' order: what the repository's own file leaves unset (or sets to ``null``)."""
    out: list[str] = []
    for key, value in defaults.items():
        if value is None or key == "extends":
            continue
        mine = own.get(key)
        if isinstance(value, dict) and (mine is None or isinstance(mine, dict)):
            out.extend(
                f"{key}.{sub}" for sub, v in value.items() if v is not None and (mine or {}).get(sub) is None
            )
        elif mine is None:
            out.append(key)
    return tuple(out)


def merge(defaults: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """``own`` over ``defaults``: a key the repository sets wins; in a section (``budget``,
    ``paths``…) key by key, so an organisation's ``budget.usd`` stays under a repository's
    ``budget.iterations``. Lists are replaced, not joined. A ``null`` value keeps the default."""
    merged = dict(defaults)
    for key, value in own.items():
        if value is None:
            continue
        base = merged.get(key)
        if isinstance(base, dict) and isinstance(value, dict):
            merged[key] = {**base, **{k: v for k, v in value.items() if v is not None}}
        else:
            merged[key] = value
    return merged


def from_repo_config(config: RepoConfig) -> ArcsConfig:
    """The typed config from the runner part plus the App keys left in ``extra``.

    For gateways that only give a :class:`RepoConfig` (the fakes): the same parser validates it,
    so a malformed value raises :class:`ArcsConfigError` naming the key.
    """
    data: dict[str, Any] = dict(config.extra)
    for key in ("test", "setup", "timeout_s", "memory_mb"):
        value = getattr(config, key)
        if value is not None:
            data[key] = value
    if config.setup_allow:
        data["setup_network"] = {"allow": list(config.setup_allow)}
    path = _name(config.path) if config.path is not None else ".arcs.yml"
    parsed = parse(yaml.safe_dump(data), path=path)
    return parsed if config.path is not None or data else ArcsConfig()


def load_local(repo: Path) -> ArcsConfig:
    """The whole ``.arcs.yml`` of a local folder, validated as the App validates it (``arcs fix``,
    ``arcs test``): an unknown key or a bad value is an :class:`ArcsConfigError` naming it, before
    anything runs. Defaults when the folder has none.

    The file is read by :func:`load_repo_config` (the runner keys checked there), the rest by
    :func:`parse` through :func:`from_repo_config`.
    """
    return from_repo_config(load_repo_config(repo))
