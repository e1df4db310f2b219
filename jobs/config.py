"""The one ``.arcs.yml`` schema: what a repository can say to ARCS, and its two readers.

:func:`parse` reads the whole file the App's way: every key is validated and an unknown key is an
error with a did-you-mean (a typo must not silently turn a setting off). :func:`parse_repo_config`
reads only the runner keys (``test``, ``setup``, ``timeout_s``, ``memory_mb``, ``setup_network``)
and keeps the rest in :attr:`runners.config.RepoConfig.extra`; :func:`load_local` validates a local
folder's whole file the App's way (``arcs fix``, ``arcs test``: an invalid file stops them before
anything runs). The plain top-level keys are one table, :data:`KEYS`. Runners never read the file;
they get a :class:`runners.config.RepoConfig` (plain values) from here::

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

Errors name the key: ``.arcs.yml: budget.usd: expected a number, got 'lots'``
(:class:`ArcsConfigError`, a :class:`~runners.errors.ConfigError`).

Longer than 500 lines on purpose: the one schema, its readers and its table stay together.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import pathspec
import yaml

from jobs.repair.budget import Budget
from jobs.repair.tiers import TIER_REQUESTS, TierRequest
from runners import wsfs
from runners.config import RepoConfig
from runners.errors import ConfigError

__all__ = [
    "BUDGET_KEYS",
    "CONFIG_NAMES",
    "DEFAULT_DENIED",
    "KEYS",
    "ON_NO_FIX",
    "PATHS_KEYS",
    "RUNNER_KEYS",
    "TOP_KEYS",
    "TRIGGER_KEYS",
    "ArcsConfig",
    "ArcsConfigError",
    "BudgetConfig",
    "Key",
    "OnNoFix",
    "PathsConfig",
    "RepoConfig",
    "Triggers",
    "from_repo_config",
    "load",
    "load_local",
    "load_repo_config",
    "parse",
    "parse_repo_config",
]

CONFIG_NAMES: tuple[str, ...] = (".arcs.yml", ".arcs.yaml")
CONFIG_LIMIT = 1 << 20
"""The largest ``.arcs.yml`` read from a repository (1 MiB)."""

# --------------------------------------------------------------------------- the runner keys


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
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{_where(path, key)} must be a finite positive number, got {value!r}")
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


def _runner_part(text: str, path: Path) -> RepoConfig:
    """The runner keys of ``text``; every other key is kept, unread, in ``extra``."""
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


def parse_repo_config(text: str, *, path: Path = Path(".arcs.yml")) -> RepoConfig:
    """Only the runner keys of an ``.arcs.yml`` (lenient: other keys land in ``extra``)."""
    return _runner_part(text, path)


def load_repo_config(repo: Path) -> RepoConfig:
    """Read ``repo/.arcs.yml`` (or ``.arcs.yaml``) leniently; defaults when there is none."""
    for name in CONFIG_NAMES:
        candidate = Path(repo) / name
        if wsfs.entry_stat(Path(repo), name) is not None:
            try:
                text = wsfs.read_text(Path(repo), name, limit=CONFIG_LIMIT, whole=True)
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"cannot read {candidate}: {exc}") from exc
            return parse_repo_config(text, path=candidate)
    return RepoConfig()


# --------------------------------------------------------------------------- the App's schema

RUNNER_KEYS = ("test", "setup", "timeout_s", "memory_mb", "setup_network")
TOP_KEYS = (
    "triggers",
    "label",
    "branches",
    *RUNNER_KEYS,
    "tier",
    "budget",
    "max_prs_per_day",
    "max_open_prs",
    "draft",
    "pr_labels",
    "paths",
    "notify_unrepairable",
    "open_pr_on_partial",
    "on_no_fix",
)
TRIGGER_KEYS = ("ci", "issues", "comments")
BUDGET_KEYS = ("iterations", "usd", "wall_s")
PATHS_KEYS = ("allowed", "denied")
DEFAULT_DENIED: tuple[str, ...] = (".github/workflows/",)
"""Workflow files: changing them needs the ``workflows`` permission ARCS does not ask for."""
OnNoFix = Literal["report", "revert"]
ON_NO_FIX: tuple[OnNoFix, ...] = ("report", "revert")
"""``on_no_fix``: what ARCS does when no forward fix passes the gates (``report``: say so; ``revert``:
on the default branch, also open a revert pull request of the culprit commit, verified by the
same final run)."""


class ArcsConfigError(ConfigError):
    """A malformed ``.arcs.yml``; :attr:`key` is the dotted key at fault (None: the file itself)."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, slots=True)
class Triggers:
    """Which events start a repair."""

    ci: bool = True
    issues: bool = True
    comments: bool = True


@dataclass(frozen=True, slots=True)
class BudgetConfig:
    """Per-attempt budget overrides (None: ARCS' default)."""

    iterations: int | None = None
    usd: float | None = None
    wall_s: float | None = None

    def apply(self, base: Budget) -> Budget:
        """``base`` with the configured dimensions replaced."""
        changes: dict[str, Any] = {
            name: value for name in BUDGET_KEYS if (value := getattr(self, name)) is not None
        }
        return replace(base, **changes)


@dataclass(frozen=True, slots=True)
class PathsConfig:
    """Which files a fix may touch (gitignore-style patterns)."""

    allowed: tuple[str, ...] = ()
    """Empty: every path not denied."""
    denied: tuple[str, ...] = DEFAULT_DENIED

    def allows(self, path: str) -> bool:
        """True when a fix may change ``path`` (repository-relative, ``/``-separated)."""
        rel = path.lstrip("/")
        if self.denied and pathspec.GitIgnoreSpec.from_lines(self.denied).match_file(rel):
            return False
        return not self.allowed or bool(pathspec.GitIgnoreSpec.from_lines(self.allowed).match_file(rel))


@dataclass(frozen=True, slots=True)
class ArcsConfig:
    """Everything ``.arcs.yml`` can say, with ARCS' defaults for what it does not."""

    triggers: Triggers = field(default_factory=Triggers)
    label: str = "arcs"
    branches: tuple[str, ...] = ("*",)
    setup: str | None = None
    test: str | None = None
    timeout_s: float | None = None
    memory_mb: int | None = None
    setup_allow: tuple[str, ...] = ()
    """``setup_network.allow``: hosts the setup step may reach besides the registries."""
    tier: TierRequest = "auto"
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    max_prs_per_day: int = 5
    max_open_prs: int = 3
    draft: bool = True
    pr_labels: tuple[str, ...] = ("arcs",)
    paths: PathsConfig = field(default_factory=PathsConfig)
    notify_unrepairable: bool = False
    open_pr_on_partial: bool = False
    """Open a pull request for a ``partial`` repair too (it says plainly what still fails)."""
    on_no_fix: OnNoFix = "report"
    """No forward fix: ``report`` it, or (default branch, culprit known) open a verified revert."""
    path: str | None = None
    """The file this came from (None: no file, all defaults)."""

    def watches(self, branch: str) -> bool:
        """True when CI failures on ``branch`` are repaired (``fnmatch`` globs, ``*`` spans ``/``)."""
        return any(fnmatch.fnmatchcase(branch, pattern) for pattern in self.branches)

    def repo_config(self) -> RepoConfig:
        """The runner part, as plain values for :mod:`runners`."""
        return RepoConfig(
            test=self.test,
            setup=self.setup,
            timeout_s=self.timeout_s,
            memory_mb=self.memory_mb,
            setup_allow=self.setup_allow,
            path=Path(self.path) if self.path else None,
        )


# --------------------------------------------------------------------------- parsing helpers


def _fail(name: str, key: str, message: str) -> ArcsConfigError:
    return ArcsConfigError(f"{name}: {key}: {message}", key=key)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _unknown(name: str, data: Mapping[str, Any], known: Sequence[str], prefix: str = "") -> None:
    unknown = [k for k in data if k not in known]
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
    hint = f" (did you mean `{prefix}{close[0]}`?)" if close else f" (known: {', '.join(known)})"
    more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
    raise ArcsConfigError(f"{name}: unknown key `{prefix}{key}`{more}{hint}", key=f"{prefix}{key}")


def _mapping(name: str, key: str, value: object) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise _fail(name, key, f"expected a mapping, got {_show(value)}")
    return value


def _bool(name: str, key: str, value: object, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _fail(name, key, f"expected true or false, got {_show(value)}")
    return value


def _int(name: str, key: str, value: object, default: int, *, minimum: int = 0) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(name, key, f"expected a whole number, got {_show(value)}")
    if value < minimum:
        raise _fail(name, key, f"expected a number >= {minimum}, got {value}")
    return value


def _number(name: str, key: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(name, key, f"expected a number, got {_show(value)}")
    if not math.isfinite(value) or value <= 0:
        raise _fail(name, key, f"expected a finite positive number, got {value}")
    return float(value)


def _text(name: str, key: str, value: object, default: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str) or not value.strip():
        raise _fail(name, key, f"expected a non-empty string, got {_show(value)}")
    return value.strip()


def _strings(name: str, key: str, value: object, default: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return default
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise _fail(name, key, f"expected a list of non-empty strings, got {_show(value)}")
    return tuple(item.strip() for item in value)


def _choice(name: str, key: str, value: object, allowed: Sequence[str], default: str) -> str:
    if value is None:
        return default
    # `tier: 0` is YAML's integer 0; a bool is never a choice (`tier: yes`).
    wanted = (
        str(value).strip().lower() if isinstance(value, str | int) and not isinstance(value, bool) else None
    )
    if wanted is None or wanted not in allowed:
        raise _fail(name, key, f"expected one of {', '.join(allowed)}, got {_show(value)}")
    return wanted


KeyKind = Literal["bool", "count", "text", "strings", "choice"]


@dataclass(frozen=True, slots=True)
class Key:
    """One plain top-level ``.arcs.yml`` key: its name, kind, default and allowed values.

    :data:`KEYS` is the table :func:`parse` reads these keys by (the nested ``triggers``,
    ``budget``, ``paths`` and the runner keys have their own readers); a schema of the file
    (pydantic, JSON schema) can be generated from it.
    """

    name: str
    kind: KeyKind
    default: Any
    choices: tuple[str, ...] = ()

    def read(self, file: str, value: object) -> Any:
        """``value`` validated (the default when None); :class:`ArcsConfigError` names the key."""
        if self.kind == "bool":
            return _bool(file, self.name, value, bool(self.default))
        if self.kind == "count":
            return _int(file, self.name, value, int(self.default))
        if self.kind == "text":
            return _text(file, self.name, value, str(self.default))
        if self.kind == "strings":
            return _strings(file, self.name, value, tuple(self.default))
        return _choice(file, self.name, value, self.choices, str(self.default))


KEYS: tuple[Key, ...] = (
    Key("label", "text", "arcs"),
    Key("branches", "strings", ("*",)),
    Key("tier", "choice", "auto", TIER_REQUESTS),
    Key("max_prs_per_day", "count", 5),
    Key("max_open_prs", "count", 3),
    Key("draft", "bool", True),
    Key("pr_labels", "strings", ("arcs",)),
    Key("notify_unrepairable", "bool", False),
    Key("open_pr_on_partial", "bool", False),
    Key("on_no_fix", "choice", "report", ON_NO_FIX),
)
"""The plain top-level keys, read the same way by the App, the Action and the CLI."""


def _patterns(name: str, key: str, value: object, default: tuple[str, ...]) -> tuple[str, ...]:
    patterns = _strings(name, key, value, default)
    try:
        pathspec.GitIgnoreSpec.from_lines(patterns)
    except (ValueError, TypeError) as exc:
        raise _fail(name, key, f"not a valid gitignore-style pattern list: {exc}") from exc
    return patterns


def _paths(name: str, data: Mapping[str, object]) -> PathsConfig:
    paths_data = _mapping(name, "paths", data.get("paths"))
    _unknown(name, paths_data, PATHS_KEYS, "paths.")
    return PathsConfig(
        allowed=_patterns(name, "paths.allowed", paths_data.get("allowed"), ()),
        denied=_patterns(name, "paths.denied", paths_data.get("denied"), DEFAULT_DENIED),
    )


def paths_of(runner: RepoConfig) -> PathsConfig:
    """The ``paths:`` part of an ``.arcs.yml`` read leniently for its runner keys (``arcs fix``,
    the Action): validated like :func:`parse` does, so a bad pattern is an error here too."""
    name = Path(runner.path).name if runner.path is not None else ".arcs.yml"
    return _paths(name, runner.extra)


# --------------------------------------------------------------------------- the parser


def parse(text: str, *, path: str = ".arcs.yml") -> ArcsConfig:
    """Parse the text of ``.arcs.yml``; :class:`ArcsConfigError` (a ConfigError) names the key."""
    name = Path(path).name
    try:
        runner = _runner_part(text, Path(path))
    except ArcsConfigError:
        raise
    except ConfigError as exc:
        key = next((k for k in RUNNER_KEYS if f"`{k}`" in exc.message), None)
        raise ArcsConfigError(exc.message, key=key) from exc
    data = dict(runner.extra)
    _unknown(name, data, TOP_KEYS)

    triggers_data = _mapping(name, "triggers", data.get("triggers"))
    _unknown(name, triggers_data, TRIGGER_KEYS, "triggers.")
    triggers = Triggers(
        **{key: _bool(name, f"triggers.{key}", triggers_data.get(key), True) for key in TRIGGER_KEYS}
    )

    budget_data = _mapping(name, "budget", data.get("budget"))
    _unknown(name, budget_data, BUDGET_KEYS, "budget.")
    iterations = budget_data.get("iterations")
    budget = BudgetConfig(
        iterations=None if iterations is None else _int(name, "budget.iterations", iterations, 0, minimum=1),
        usd=_number(name, "budget.usd", budget_data.get("usd")),
        wall_s=_number(name, "budget.wall_s", budget_data.get("wall_s")),
    )

    paths = _paths(name, data)

    plain = {key.name: key.read(name, data.get(key.name)) for key in KEYS}
    return ArcsConfig(
        triggers=triggers,
        setup=runner.setup,
        test=runner.test,
        timeout_s=runner.timeout_s,
        memory_mb=runner.memory_mb,
        setup_allow=runner.setup_allow,
        budget=budget,
        paths=paths,
        path=path,
        **plain,
    )


def load(read: Callable[[str], str | None]) -> ArcsConfig:
    """The first of ``.arcs.yml``/``.arcs.yaml`` that ``read(path)`` returns (defaults when none)."""
    for candidate in CONFIG_NAMES:
        text = read(candidate)
        if text is not None:
            return parse(text, path=candidate)
    return ArcsConfig()


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
    path = config.path.name if config.path is not None else ".arcs.yml"
    parsed = parse(yaml.safe_dump(data), path=path)
    return parsed if config.path is not None or data else ArcsConfig()


def load_local(repo: Path) -> ArcsConfig:
    """The whole ``.arcs.yml`` of a local folder, validated as the App validates it (``arcs fix``,
    ``arcs test``): an unknown key or a bad value is an :class:`ArcsConfigError` naming it, before
    anything runs. Defaults when the folder has none.

    The file is read by :func:`load_repo_config` (the runner keys checked there), the rest by
    :func:`parse` through :func:`from_repo_config`.
    """
    runner = load_repo_config(repo)
    return replace(from_repo_config(runner), setup_allow=runner.setup_allow)
