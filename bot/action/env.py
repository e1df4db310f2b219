"""The GitHub Actions environment of an ``arcs action`` step, read once into typed values.

GitHub sets ``GITHUB_*`` and ``RUNNER_*`` for every step (GitHub's "Store information in
variables" reference, default environment variables); ``action.yml`` passes the Action's inputs
as ``INPUT_*`` variables (a composite action gets no automatic ``INPUT_*``, so ``action.yml``
names them: ``INPUT_MODE``, ``INPUT_TEST``, ``INPUT_TIER``, ``INPUT_BUDGET_USD``, ``INPUT_DRAFT``,
``INPUT_SANDBOX``, ``INPUT_MODEL``, ``INPUT_TIMEOUT_MINUTES``, ``INPUT_DASHBOARD_URL``,
``INPUT_GITHUB_TOKEN``) and the ``PATH`` the workflow's own steps see as
``ARCS_ACTION_PATH`` (captured before the Action sets up its own Python).

:func:`read_action_env` is pure over the mapping it is given and reports every missing or
malformed variable at once, by name (:class:`bot.errors.ConfigError`, exit code 2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import SecretStr

from bot.action.dashboard import dashboard_url_problem
from bot.errors import ConfigError
from jobs.repair.pricing import model_name_problem
from jobs.repair.tiers import TierRequest, parse_tier

Mode = Literal["pr", "suggest", "comment"]
SandboxMode = Literal["auto", "require", "off"]
MODES: tuple[str, ...] = get_args(Mode)
SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)
REQUIRED = (
    "GITHUB_EVENT_NAME",
    "GITHUB_EVENT_PATH",
    "GITHUB_REPOSITORY",
    "GITHUB_SHA",
    "GITHUB_RUN_ID",
    "GITHUB_WORKSPACE",
)
"""Set by GitHub for every step; ``arcs action`` cannot work out what to repair without them."""
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
_TRUE = frozenset({"true", "yes", "1", "on"})
_FALSE = frozenset({"false", "no", "0", "off"})
MAX_TIMEOUT_MINUTES = 7200.0
"""The longest ``timeout-minutes`` accepted: five days, the most a job may run (self-hosted runners)."""


@dataclass(frozen=True, slots=True)
class ActionInputs:
    """The Action's inputs (``action.yml``), validated."""

    mode: Mode = "pr"
    test: str | None = None
    """The test command; None: the failing step's command where it can be known, else ``.arcs.yml``."""
    tier: TierRequest | None = None
    """None: ``.arcs.yml`` ``tier``, else ``auto``."""
    budget_usd: float | None = None
    """A cap on LLM spend for this run (None: ``.arcs.yml`` ``budget.usd``, else ARCS' default)."""
    draft: bool | None = None
    """None: ``.arcs.yml`` ``draft`` (default true)."""
    sandbox: SandboxMode = "auto"
    """``auto``: bubblewrap when it works on the runner, else unsandboxed (said in the summary);
    ``require``: no repair without the sandbox; ``off``: unsandboxed."""
    token: SecretStr | None = field(default=None, repr=False)
    """The token to publish with (``github-token``); None: nothing is written to GitHub."""
    model: str | None = None
    """The Anthropic model of the repair's LLM tiers (``model``); None: ``ARCS_MODEL``, else ARCS' default."""
    timeout_minutes: float | None = None
    """A wall-clock bound on the whole ``arcs action`` step (``timeout-minutes``); None: no bound
    beyond the repair's own wall-time budget."""
    dashboard_url: str | None = None
    """The ARCS App's address (``dashboard-url``): the summary links the App's attempt on the
    commit when there is one (:mod:`bot.action.dashboard`); None: no lookup, no link."""


@dataclass(frozen=True, slots=True)
class ActionEnv:
    """Everything ``arcs action`` reads from the step's environment."""

    event_name: str
    event_path: Path
    event: Mapping[str, Any]
    repository: str
    sha: str
    ref: str
    head_ref: str
    base_ref: str
    run_id: int
    run_attempt: int
    workspace: Path
    step_summary: Path | None
    output: Path | None
    api_url: str
    server_url: str
    runner_temp: Path
    path: str
    """The ``PATH`` of the workflow's own steps: its toolchain folders are what the tests use."""
    inputs: ActionInputs = field(default_factory=ActionInputs)
    bot_login: str = "github-actions[bot]"
    """The account the token acts as (``ARCS_ACTION_BOT_LOGIN``; set it with an App's or a person's
    token): commits are authored as it and its earlier comments and reviews are found by it."""

    @property
    def owner(self) -> str:
        """The repository's owner."""
        return self.repository.split("/", 1)[0]

    @property
    def repo_url(self) -> str:
        """The repository's web URL."""
        return f"{self.server_url}/{self.repository}"

    @property
    def run_url(self) -> str:
        """The web URL of this workflow run."""
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"


def _flag(name: str, raw: str, default: bool | None, problems: list[str]) -> bool | None:
    value = raw.strip().lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    problems.append(f"{name}: expected true or false, got {raw!r}")
    return default


def read_inputs(env: Mapping[str, str], problems: list[str]) -> ActionInputs:
    """The ``INPUT_*`` values; problems are appended to ``problems``."""
    mode = env.get("INPUT_MODE", "").strip().lower() or "pr"
    if mode not in MODES:
        problems.append(f"INPUT_MODE (mode): expected one of {', '.join(MODES)}, got {mode!r}")
        mode = "pr"
    sandbox = env.get("INPUT_SANDBOX", "").strip().lower() or "auto"
    if sandbox not in SANDBOX_MODES:
        problems.append(
            f"INPUT_SANDBOX (sandbox): expected one of {', '.join(SANDBOX_MODES)}, got {sandbox!r}"
        )
        sandbox = "auto"
    tier: TierRequest | None = None
    if env.get("INPUT_TIER", "").strip():
        try:
            tier = parse_tier(env["INPUT_TIER"])
        except ValueError as exc:
            problems.append(f"INPUT_TIER (tier): {exc}")
    budget: float | None = None
    raw_budget = env.get("INPUT_BUDGET_USD", "").strip().lstrip("$")
    if raw_budget:
        try:
            budget = float(raw_budget)
        except ValueError:
            budget = -1.0
        if not 0 <= budget <= 1000:
            problems.append(
                f"INPUT_BUDGET_USD (budget-usd): expected US dollars from 0 to 1000, got {raw_budget!r}"
            )
            budget = None
    model = env.get("INPUT_MODEL", "").strip() or None
    if model is not None:
        problem = model_name_problem(model)
        if problem:
            problems.append(f"INPUT_MODEL (model): {problem}")
            model = None
    timeout: float | None = None
    raw_timeout = env.get("INPUT_TIMEOUT_MINUTES", "").strip()
    if raw_timeout:
        try:
            timeout = float(raw_timeout)
        except ValueError:
            timeout = -1.0
        # `nan` and `inf` parse as floats; neither bounds anything.
        if not 0 < timeout <= MAX_TIMEOUT_MINUTES:
            problems.append(
                "INPUT_TIMEOUT_MINUTES (timeout-minutes): expected a positive number of minutes, at most "
                f"{MAX_TIMEOUT_MINUTES:g}, got {raw_timeout!r}"
            )
            timeout = None
    dashboard = env.get("INPUT_DASHBOARD_URL", "").strip().rstrip("/") or None
    if dashboard is not None:
        problem = dashboard_url_problem(dashboard)
        if problem:
            problems.append(f"INPUT_DASHBOARD_URL (dashboard-url): {problem}")
            dashboard = None
    token = env.get("INPUT_GITHUB_TOKEN", "").strip()
    return ActionInputs(
        mode=mode,  # type: ignore[arg-type]  # checked against MODES above
        test=env.get("INPUT_TEST", "").strip() or None,
        tier=tier,
        budget_usd=budget,
        draft=_flag("INPUT_DRAFT (draft)", env.get("INPUT_DRAFT", ""), None, problems),
        sandbox=sandbox,  # type: ignore[arg-type]  # checked against SANDBOX_MODES above
        token=SecretStr(token) if token else None,
        model=model,
        timeout_minutes=timeout,
        dashboard_url=dashboard,
    )


def _read_event(path: Path, problems: list[str]) -> Mapping[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        problems.append(f"GITHUB_EVENT_PATH: cannot read {path}: {exc.strerror or exc}")
        return {}
    except (UnicodeDecodeError, ValueError) as exc:
        problems.append(f"GITHUB_EVENT_PATH: {path} is not a JSON document ({exc.__class__.__name__})")
        return {}
    if not isinstance(data, dict):
        problems.append(f"GITHUB_EVENT_PATH: {path} does not hold a JSON object")
        return {}
    return data


def _positive_int(name: str, raw: str, problems: list[str], default: int = 0) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if value < 1:
        problems.append(f"{name}: expected a positive number, got {raw!r}")
        return default
    return value


def read_action_env(env: Mapping[str, str]) -> ActionEnv:
    """Read the step's environment (see the module docstring); :class:`ConfigError` names every
    missing or malformed variable."""
    problems: list[str] = []
    missing = [name for name in REQUIRED if not env.get(name, "").strip()]
    if missing:
        problems.append(
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set "
            "(arcs action runs as a step of a GitHub Actions workflow)"
        )
    repository = env.get("GITHUB_REPOSITORY", "").strip()
    if repository and not _REPO.match(repository):
        problems.append(f"GITHUB_REPOSITORY: expected owner/name, got {repository!r}")
    sha = env.get("GITHUB_SHA", "").strip()
    if sha and not _SHA.match(sha):
        problems.append(f"GITHUB_SHA: expected a full commit sha, got {sha!r}")
    run_id = _positive_int("GITHUB_RUN_ID", env["GITHUB_RUN_ID"], problems) if env.get("GITHUB_RUN_ID") else 0
    attempt_raw = env.get("GITHUB_RUN_ATTEMPT", "").strip() or "1"
    run_attempt = _positive_int("GITHUB_RUN_ATTEMPT", attempt_raw, problems, default=1)
    workspace = Path(env.get("GITHUB_WORKSPACE", "").strip() or ".")
    if env.get("GITHUB_WORKSPACE", "").strip() and not workspace.is_dir():
        problems.append(f"GITHUB_WORKSPACE: {workspace} is not a folder")
    event_path = Path(env.get("GITHUB_EVENT_PATH", "").strip() or ".")
    event: Mapping[str, Any] = {}
    if env.get("GITHUB_EVENT_PATH", "").strip():
        event = _read_event(event_path, problems)
    urls: dict[str, str] = {}
    for name, default in (
        ("GITHUB_API_URL", "https://api.github.com"),
        ("GITHUB_SERVER_URL", "https://github.com"),
    ):
        value = env.get(name, "").strip().rstrip("/") or default
        if not re.match(r"^https?://[^/\s]+", value):
            problems.append(f"{name}: expected an http(s) URL, got {value!r}")
        urls[name] = value
    temp = env.get("RUNNER_TEMP", "").strip()
    runner_temp = Path(temp) if temp else workspace.parent / ".arcs-action-tmp"
    inputs = read_inputs(env, problems)
    if problems:
        raise ConfigError("arcs action: " + "; ".join(problems))
    return ActionEnv(
        event_name=env["GITHUB_EVENT_NAME"].strip(),
        event_path=event_path,
        event=event,
        repository=repository,
        sha=sha,
        ref=env.get("GITHUB_REF", "").strip(),
        head_ref=env.get("GITHUB_HEAD_REF", "").strip(),
        base_ref=env.get("GITHUB_BASE_REF", "").strip(),
        run_id=run_id,
        run_attempt=run_attempt,
        workspace=workspace.resolve(),
        step_summary=Path(env["GITHUB_STEP_SUMMARY"]) if env.get("GITHUB_STEP_SUMMARY", "").strip() else None,
        output=Path(env["GITHUB_OUTPUT"]) if env.get("GITHUB_OUTPUT", "").strip() else None,
        api_url=urls["GITHUB_API_URL"],
        server_url=urls["GITHUB_SERVER_URL"],
        runner_temp=runner_temp,
        path=env.get("ARCS_ACTION_PATH", "").strip() or env.get("PATH", ""),
        inputs=inputs,
        bot_login=env.get("ARCS_ACTION_BOT_LOGIN", "").strip() or "github-actions[bot]",
    )


__all__ = [
    "MAX_TIMEOUT_MINUTES",
    "MODES",
    "REQUIRED",
    "ActionEnv",
    "ActionInputs",
    "Mode",
    "SandboxMode",
    "read_action_env",
    "read_inputs",
]
