"""The ``.arcs.yml`` model: every key with its type, default and description, in one place.

:class:`ArcsConfig` (frozen pydantic models, ``extra="forbid"``) is the one source of the file's
keys: :mod:`jobs.config` validates a file with it and maps pydantic's errors to one line naming
the key (:func:`errors_to_message`), and ``docs/arcs.schema.json`` is generated from it
(:func:`json_schema`). Split from :mod:`jobs.config` (the file readers) to keep both under ~500
lines: this module has no I/O.

The YAML value ``null`` (``label:`` with nothing after it) means "the default" everywhere; a
single string stands for a one-item list in the list keys (``branches: main``); ``tier: 0`` is
YAML's integer 0; choices are read case-insensitively.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import pathspec
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import ErrorDetails, PydanticCustomError

from jobs.repair.budget import Budget
from jobs.repair.tiers import TIER_REQUESTS, TierRequest
from runners.config import RepoConfig

__all__ = [
    "DEFAULT_DENIED",
    "DEPENDENCY_UPDATES",
    "FIX_KINDS",
    "ON_NO_FIX",
    "ORG_DEFAULTS",
    "RUNNER_KEYS",
    "ArcsConfig",
    "BudgetConfig",
    "DependencyUpdates",
    "FixKind",
    "FlakyConfig",
    "OnNoFix",
    "PathsConfig",
    "SetupNetwork",
    "Triggers",
    "errors_to_message",
    "yaml_keys",
]

DEFAULT_DENIED: tuple[str, ...] = (".github/workflows/",)
"""Workflow files: changing them needs the ``workflows`` permission ARCS does not ask for."""
OnNoFix = Literal["report", "revert"]
ON_NO_FIX: tuple[OnNoFix, ...] = ("report", "revert")
FixKind = Literal["format", "lint", "template", "revert", "llm"]
FIX_KINDS: tuple[FixKind, ...] = ("format", "lint", "template", "revert", "llm")
"""What made a fix (:mod:`jobs.fix_kind`): a formatter's or a linter's own fix mode, a tier-0
template, a revert of the lines that broke, a model's patch."""
DependencyUpdates = Literal["fix", "comment", "off"]
DEPENDENCY_UPDATES: tuple[DependencyUpdates, ...] = ("fix", "comment", "off")
ORG_DEFAULTS = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/\.github$"
"""``extends:``: an organisation's (or user's) ``.github`` repository, nothing else."""
RUNNER_KEYS = ("test", "setup", "timeout_s", "memory_mb", "setup_network")
"""The keys the runners read (:class:`runners.config.RepoConfig`); their errors keep the
runner's wording (`` `timeout_s` must be … ``), which ``arcs fix`` has always printed."""

# --------------------------------------------------------------------------- value types

_TEXT = {"type": "string", "minLength": 1, "pattern": r"\S"}


def _drop_nulls(data: Any) -> Any:
    """``key:`` with no value means the default; a non-string key is not a mapping of keys."""
    if not isinstance(data, dict):
        return data
    if not all(isinstance(key, str) for key in data):
        raise PydanticCustomError("not_a_mapping", "expected a mapping")
    return {key: value for key, value in data.items() if value is not None}


def _listify(value: object) -> object:
    # `branches: main` is one pattern, not a list of characters.
    return [value] if isinstance(value, str) else value


def _choice_text(value: object) -> object:
    # `tier: 0` is YAML's integer 0; a bool is never a choice (`tier: yes`).
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value.strip().lower() if isinstance(value, str) else value


def _gitignore(patterns: tuple[str, ...]) -> tuple[str, ...]:
    try:
        pathspec.GitIgnoreSpec.from_lines(patterns)
    except (ValueError, TypeError) as exc:
        raise PydanticCustomError(
            "arcs", "not a valid gitignore-style pattern list: {error}", {"error": str(exc)}
        ) from exc
    return patterns


def _commands(value: object) -> object:
    """``setup:``: a command, or a list of commands joined with `` && ``."""
    if isinstance(value, str):
        if not value.strip():
            raise PydanticCustomError("arcs", " is empty; remove it or give a command")
        return value.strip()
    if isinstance(value, list):
        if not value or not all(isinstance(item, str) and item.strip() for item in value):
            raise PydanticCustomError("arcs", " must be a command or a list of non-empty commands")
        return " && ".join(item.strip() for item in value)
    raise PydanticCustomError(
        "arcs", " must be a command or a list of commands, got {kind}", {"kind": type(value).__name__}
    )


def _public_hosts(items: tuple[str, ...]) -> tuple[str, ...]:
    from runners.egress import PolicyError, parse_allow_list  # on use: the egress policy is large

    try:
        parse_allow_list(list(items), trusted=False)
    except PolicyError as exc:
        raise PydanticCustomError("arcs", ": {error}", {"error": str(exc)}) from None
    return tuple(item.strip() for item in items)


NonEmptyText = Annotated[StrictStr, StringConstraints(strip_whitespace=True, min_length=1, pattern=r"\S")]
Strings = Annotated[
    tuple[NonEmptyText, ...],
    BeforeValidator(_listify),
    WithJsonSchema({"anyOf": [_TEXT, {"type": "array", "items": _TEXT}]}),
]
Patterns = Annotated[Strings, AfterValidator(_gitignore)]
Count = Annotated[StrictInt, Field(ge=0)]
PositiveNumber = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
Command = Annotated[
    str,
    BeforeValidator(_commands),
    WithJsonSchema(
        {"anyOf": [_TEXT, {"type": "array", "items": _TEXT, "minItems": 1}]},
    ),
]
Tier = Annotated[
    TierRequest,
    BeforeValidator(_choice_text),
    WithJsonSchema({"enum": [0, *TIER_REQUESTS]}),
]
Choice = Annotated[OnNoFix, BeforeValidator(_choice_text)]
FixKinds = Annotated[
    tuple[Annotated[FixKind, BeforeValidator(_choice_text)], ...],
    BeforeValidator(_listify),
    WithJsonSchema(
        {
            "anyOf": [
                {"enum": list(FIX_KINDS)},
                {"type": "array", "items": {"enum": list(FIX_KINDS)}, "uniqueItems": True},
            ]
        }
    ),
]


def _switch_text(value: object) -> object:
    # YAML 1.1 (what ARCS reads) turns a bare `off` into false: that is the choice `off`.
    return "off" if value is False else _choice_text(value)


UpdateChoice = Annotated[
    DependencyUpdates,
    BeforeValidator(_switch_text),
    WithJsonSchema({"enum": [*DEPENDENCY_UPDATES, False]}),
]


class _Section(BaseModel):
    """A frozen part of the file: unknown keys are errors, ``null`` values are the defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _nulls(cls, data: Any) -> Any:
        return _drop_nulls(data)


# --------------------------------------------------------------------------- the sections


class Triggers(_Section):
    """Which events start a repair (all on by default)."""

    ci: StrictBool = Field(default=True, description="Repair a failed workflow run.")
    issues: StrictBool = Field(default=True, description="Repair an issue labelled with `label`.")
    comments: StrictBool = Field(default=True, description='Repair on "/arcs fix" in a comment.')


class BudgetConfig(_Section):
    """Per-attempt budget overrides (unset: ARCS' default)."""

    iterations: Annotated[StrictInt, Field(ge=1)] | None = Field(
        default=None, description="Search rounds of one repair."
    )
    usd: PositiveNumber | None = Field(default=None, description="LLM spend of one repair, in US dollars.")
    wall_s: PositiveNumber | None = Field(
        default=None, description="Wall-clock limit of one repair, in seconds."
    )

    def apply(self, base: Budget) -> Budget:
        """``base`` with the configured dimensions replaced."""
        changes = {
            name: value for name in type(self).model_fields if (value := getattr(self, name)) is not None
        }
        return replace(base, **changes)


class PathsConfig(_Section):
    """Which files a fix may touch (gitignore-style patterns)."""

    allowed: Patterns = Field(default=(), description="Paths a fix may change; empty: every path not denied.")
    denied: Patterns = Field(default=DEFAULT_DENIED, description="Paths a fix never changes.")

    def allows(self, path: str) -> bool:
        """True when a fix may change ``path`` (repository-relative, ``/``-separated)."""
        rel = path.lstrip("/")
        if self.denied and pathspec.GitIgnoreSpec.from_lines(self.denied).match_file(rel):
            return False
        return not self.allowed or bool(pathspec.GitIgnoreSpec.from_lines(self.allowed).match_file(rel))


class FlakyConfig(_Section):
    """What ARCS does with a CI failure of tests its test history knows to be flaky."""

    rerun_failed_jobs: StrictBool = Field(
        default=False,
        description="Ask GitHub to re-run the failed jobs (once per workflow run) instead of repairing; "
        "needs the App's `actions: write` permission.",
    )


class SetupNetwork(_Section):
    """Hosts the `setup` step may reach besides the package registries."""

    allow: Annotated[tuple[StrictStr, ...], AfterValidator(_public_hosts)] = Field(
        default=(),
        description='Host or host:port, e.g. "npm.example.com", "*.example.org:8443" (public addresses only).',
    )


class ArcsConfig(_Section):
    """Everything ``.arcs.yml`` can say, with ARCS' defaults for what it does not."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        title="ARCS repository configuration",
        json_schema_extra={
            "description": "Configuration of ARCS, the bot that repairs failing CI and labelled issues: "
            "`.arcs.yml` at the repository root or `.github/arcs.yml`."
        },
    )

    triggers: Triggers = Field(default_factory=Triggers, description="Which events start a repair.")
    label: NonEmptyText = Field(default="arcs", description="The issue label that asks for a repair.")
    branches: Strings = Field(
        default=("*",),
        description="CI failures on these branches are repaired (globs; `*` spans `/`; default: all).",
    )
    test: NonEmptyText | None = Field(
        default=None, description="The test command (wins over the failing CI step and the conventions)."
    )
    setup: Command | None = Field(
        default=None, description="Run before the tests: a command or a list of commands (joined with `&&`)."
    )
    timeout_s: PositiveNumber | None = Field(
        default=None, description="Wall-clock limit of one test run, in seconds."
    )
    memory_mb: Annotated[StrictInt, Field(gt=0)] | None = Field(
        default=None, description="Memory limit of one test run, in MiB."
    )
    setup_network: SetupNetwork = Field(
        default_factory=SetupNetwork,
        description="Hosts `setup` may reach besides the package registries.",
    )
    tier: Tier = Field(
        default="auto", description="The repair tier: 0 (templates, no model), small, medium, large, auto."
    )
    budget: BudgetConfig = Field(default_factory=BudgetConfig, description="Per-attempt budget overrides.")
    max_prs_per_day: Count = Field(default=5, description="ARCS pull requests per day in this repository.")
    max_open_prs: Count = Field(default=3, description="ARCS pull requests open at once in this repository.")
    draft: StrictBool = Field(default=True, description="Open pull requests as drafts.")
    pr_labels: Strings = Field(default=("arcs",), description="Labels put on ARCS' pull requests.")
    paths: PathsConfig = Field(default_factory=PathsConfig, description="Which files a fix may touch.")
    notify_unrepairable: StrictBool = Field(
        default=False, description="Comment (or say on the check run) when a CI failure is not repairable."
    )
    open_pr_on_partial: StrictBool = Field(
        default=False,
        description="Open a pull request when the targets pass but tests that already failed before "
        "still fail (verdict `partial`).",
    )
    flaky: FlakyConfig = Field(
        default_factory=FlakyConfig,
        description="CI failures whose failing tests are all known flaky are never repaired as code.",
    )
    on_no_fix: Choice = Field(
        default="report",
        description="No forward fix passes: `report` it, or (default branch, culprit known) `revert`: "
        "open a verified revert pull request of the culprit commit.",
    )
    dependency_updates: UpdateChoice = Field(
        default="fix",
        description="A dependency update (Dependabot, Renovate) whose CI is red: `fix` migrates the code to "
        "the new version (a commit on the update's own branch when this key is written in the default branch's "
        "file and the pull request is Dependabot's or Renovate's, else a pull request stacked on the update), "
        "`comment` only names "
        "the breaking changes that hit this repository, `off` leaves it alone. ARCS does not revert the bump.",
    )
    extends: Annotated[StrictStr, StringConstraints(pattern=ORG_DEFAULTS)] | None = Field(
        default=None,
        description="Organisation defaults: `<org>/.github`, the organisation's `.github` repository; "
        "its `.github/arcs.yml` (or `.arcs.yml`) is read through the App and this file's keys win.",
    )
    auto_apply: FixKinds = Field(
        default=(),
        description="Fix kinds committed straight to the pull request's branch (format, lint, template, "
        "revert, llm) when the repair is for a pull request of this repository and the person it "
        "counts for may write; the others are published as a pull request, as by default.",
    )
    dashboard_issue: StrictBool = Field(
        default=False,
        description='Keep one "ARCS dashboard" issue in the repository, edited in place after each '
        "attempt: open attempts and pull requests, paused items, flaky tests, this month's spend.",
    )
    path: SkipJsonSchema[str | None] = Field(default=None, exclude=True)
    """The file this came from (None: no file, all defaults); not a key of the file."""
    defaults_file: SkipJsonSchema[str | None] = Field(default=None, exclude=True)
    """The organisation defaults ``extends`` read (``acme/.github:.github/arcs.yml``; None: none
    followed); not a key of the file."""
    inherited: SkipJsonSchema[tuple[str, ...]] = Field(default=(), exclude=True)
    """The keys taken from :attr:`defaults_file` (``tier``, ``budget.usd``: dotted in a section),
    the ones this file does not set; not a key of the file."""

    @property
    def setup_allow(self) -> tuple[str, ...]:
        """``setup_network.allow``: hosts the setup step may reach besides the registries."""
        return self.setup_network.allow

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


def yaml_keys(model: type[BaseModel] = ArcsConfig) -> tuple[str, ...]:
    """The keys a file may write at ``model``'s level, in the documented order."""
    return tuple(name for name, info in model.model_fields.items() if not info.exclude)


# --------------------------------------------------------------------------- errors, one line


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _section(key: str) -> type[BaseModel]:
    annotation = ArcsConfig.model_fields[key].annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else ArcsConfig


def unknown_message(
    data: Mapping[str, Any], known: Sequence[str], prefix: str = ""
) -> tuple[str, str] | None:
    """``(message, key)`` for the unknown keys of ``data`` (None: all known), with a did-you-mean."""
    unknown = [k for k in data if k not in known]
    if not unknown:
        return None
    key = unknown[0]
    close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
    hint = f" (did you mean `{prefix}{close[0]}`?)" if close else f" (known: {', '.join(known)})"
    more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
    return f"unknown key `{prefix}{key}`{more}{hint}", f"{prefix}{key}"


_CHOICES: dict[str, Sequence[str]] = {
    "tier": TIER_REQUESTS,
    "on_no_fix": ON_NO_FIX,
    "auto_apply": FIX_KINDS,
    "dependency_updates": DEPENDENCY_UPDATES,
}
_MAPPING = {"model_type", "dict_type", "model_attributes_type", "not_a_mapping"}


def _runner_text(key: str, kind: str, value: object, error: ErrorDetails) -> str:
    """The runner keys' wording (`` `key` must … ``)."""
    if kind == "arcs":
        return f"`{key}`{error['msg']}"
    if key == "setup_network":
        if kind in _MAPPING or kind == "extra_forbidden" or len(error["loc"]) == 1:
            return "`setup_network` must be a mapping with one key, `allow`"
        return "`setup_network`: `allow` must be a list of host or host:port"
    if key == "test":
        if kind == "string_type":
            return f"`test` must be a command (a string), got {type(value).__name__}"
        return "`test` is empty; remove it or give a command"
    if kind in {"int_type", "float_type"}:
        what = "a positive integer" if kind == "int_type" else "a positive number"
        return f"`{key}` must be {what}, got {value!r}"
    return f"`{key}` must be a finite positive number, got {value!r}"


def _app_text(key: str, kind: str, value: object, error: ErrorDetails) -> str:
    field = key.rsplit(".", 1)[-1]
    if kind == "arcs":
        text = error["msg"]
    elif kind in _MAPPING:
        text = f"expected a mapping, got {_show(value)}"
    elif field in {"branches", "pr_labels", "allowed", "denied"}:
        text = f"expected a list of non-empty strings, got {_show(value)}"
    elif kind == "bool_type":
        text = f"expected true or false, got {_show(value)}"
    elif kind == "int_type":
        text = f"expected a whole number, got {_show(value)}"
    elif kind == "greater_than_equal":
        text = f"expected a number >= {error.get('ctx', {}).get('ge')}, got {value}"
    elif kind == "float_type":
        text = f"expected a number, got {_show(value)}"
    elif kind in {"finite_number", "greater_than"}:
        text = f"expected a finite positive number, got {value}"
    elif field == "extends":
        text = f"expected <org>/.github (the organisation's .github repository), got {_show(value)}"
    elif kind == "literal_error":
        text = f"expected one of {', '.join(_CHOICES[field])}, got {_show(value)}"
    else:  # strings: `label: ''`, `label: 5`
        text = f"expected a non-empty string, got {_show(value)}"
    return f"{key}: {text}"


def _rank(error: ErrorDetails, order: Sequence[str]) -> tuple[int, int, int]:
    """Today's order of checks: the runner keys, then each section (its unknown keys first)."""
    loc = [part for part in error["loc"] if isinstance(part, str)]
    top = order.index(loc[0]) if loc and loc[0] in order else len(order)
    unknown_first = 0 if error["type"] == "extra_forbidden" else 1
    inner = 0
    if len(loc) > 1 and top < len(order):
        fields = list(_section(loc[0]).model_fields)
        inner = fields.index(loc[1]) if loc[1] in fields else 0
    return top, unknown_first, inner


_ORDER = (
    "timeout_s",
    "memory_mb",
    "test",
    "setup",
    "setup_network",
    "triggers",
    "budget",
    "paths",
    "label",
    "branches",
    "tier",
    "max_prs_per_day",
    "max_open_prs",
    "draft",
    "pr_labels",
    "notify_unrepairable",
    "open_pr_on_partial",
    "flaky",
    "on_no_fix",
    "dependency_updates",
    "extends",
    "auto_apply",
    "dashboard_issue",
)


def errors_to_message(errors: Sequence[ErrorDetails], data: Mapping[str, Any]) -> tuple[str, str]:
    """``(message, key)`` for the first of pydantic's ``errors`` on ``data`` (the file's mapping),
    in the order ARCS has always checked (the runner keys, the unknown keys, then each section),
    naming the dotted key; the caller puts the file's name in front."""
    runner = [e for e in errors if e["loc"] and e["loc"][0] in RUNNER_KEYS]
    if not runner:
        unknown = unknown_message(data, yaml_keys())
        if unknown is not None:
            return unknown
    rest = [e for e in errors if not (e["type"] == "extra_forbidden" and len(e["loc"]) == 1)]
    if not (runner or rest):
        return "not a valid ARCS configuration", ""
    error = min(runner or rest, key=lambda e: _rank(e, _ORDER))
    loc = [part for part in error["loc"] if isinstance(part, str)]
    kind = error["type"]
    top = loc[0]
    if top in RUNNER_KEYS:
        return _runner_text(top, kind, data.get(top), error), top
    section = data.get(top)
    if kind == "extra_forbidden" and len(loc) == 2 and isinstance(section, Mapping):
        found = unknown_message(section, yaml_keys(_section(top)), f"{top}.")
        if found is not None:
            return found
    key = ".".join(loc[:2])
    value: Any = data
    for part in loc[:2]:
        value = value.get(part) if isinstance(value, Mapping) else None
    return _app_text(key, kind, value, error), key
