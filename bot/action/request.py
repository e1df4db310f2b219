"""What ``arcs action`` asks the engine for: the test command, the sandbox, the tier and the budget
(:class:`jobs.fix.FixRequest`), from the inputs, ``.arcs.yml`` and the failed run's logs (see
:mod:`bot.action.run`, step 2)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from bot.action.env import ActionEnv
from bot.action.event import Target
from bot.errors import ConfigError
from bot.github import GitHubError
from bot.settings import Settings
from runners import wsfs

if TYPE_CHECKING:
    from bot.github.client import InstallationClient
    from jobs.config import ArcsConfig
    from jobs.fix import FixRequest
    from runners.logs import FailureReport

SYSTEM_BIN = frozenset(
    {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/snap/bin"}
)


def toolchains_from_path(path: str) -> tuple[Path, ...]:
    """The folders whose ``bin/`` is on the workflow's ``PATH`` (system folders aside): what the
    setup steps installed (``actions/setup-python``, ``setup-node``…) is exposed to the tests."""
    out: list[Path] = []
    for entry in path.split(os.pathsep):
        entry = entry.rstrip("/")
        if not entry or entry in SYSTEM_BIN or not entry.endswith("/bin"):
            continue
        bin_dir = Path(entry)
        if not bin_dir.is_absolute() or not bin_dir.is_dir():
            continue
        root = bin_dir.parent
        if root != Path("/") and root not in out:
            out.append(root)
    return tuple(out)


def read_config(workspace: Path) -> ArcsConfig:
    """The workspace's ``.arcs.yml`` (defaults when absent; :class:`ConfigError` when malformed)."""
    from jobs.config import CONFIG_LIMIT
    from jobs.config import load as load_arcs_config

    def read(rel: str) -> str | None:
        return wsfs.text_or_none(workspace, rel, limit=CONFIG_LIMIT)

    return load_arcs_config(read)


def ci_failure(
    client: InstallationClient | None, env: ActionEnv, target: Target, notices: list[str]
) -> FailureReport | None:
    """``workflow_run``: what the failed run's logs say (step, tests, hints); None otherwise."""
    if target.failed_run_id is None:
        return None
    if client is None:
        notices.append("no github-token: the failed run's logs were not read (no failing step or test hints)")
        return None
    from bot.github.logs import concatenate, download_failed_job_logs
    from runners.logs import analyze_log

    try:
        logs = download_failed_job_logs(client, target.failed_run_id)
    except GitHubError as exc:
        notices.append(
            f"the failed run's logs could not be read ({exc.message}); grant `actions: read` for hints"
        )
        return None
    return analyze_log(concatenate(logs)) if logs else None


def sandbox(settings: Settings, env: ActionEnv, toolchains: tuple[Path, ...]) -> tuple[str, bool, str]:
    """``(how the tests run, unsandboxed?, refusal)``."""
    mode = env.inputs.sandbox
    unsandboxed = (
        "unsandboxed, in the job's own environment (as the workflow's test step ran them), with an "
        "environment built from nothing: no token, no API key"
    )
    if mode == "off":
        return f"{unsandboxed} (sandbox: off)", True, ""
    from runners.factory import SandboxUnavailable, make_runner

    try:
        make_runner(
            toolchain_paths=toolchains,
            kind=settings.runner,
            image=settings.runner_image,
            runtime=settings.runner_runtime,
        )
    except SandboxUnavailable as exc:
        if mode == "require":
            return "", False, f"sandbox: require, but the sandbox cannot run on this runner: {exc.message}"
        return f"{unsandboxed}: the sandbox cannot run on this runner ({exc.message})", True, ""
    return f"in the {settings.runner} sandbox (no network, read-only system, the workspace copied)", False, ""


def fix_request(
    settings: Settings,
    env: ActionEnv,
    target: Target,
    config: ArcsConfig,
    ci: FailureReport | None,
    unsafe: bool,
    notices: list[str],
    *,
    wall_s: float | None = None,
) -> FixRequest:
    """The engine's request; ``wall_s`` caps the repair's wall-time budget (``timeout-minutes``)."""
    from jobs.fix import FixRequest
    from jobs.repair.budget import Budget
    from jobs.repair.loop import LoopConfig
    from jobs.repair.tiers import TierRequest
    from jobs.wiring import default_jobs, llm_config

    inputs = env.inputs
    command = target.command
    llm = llm_config(settings)
    tier: TierRequest = (
        (command.tier if command is not None and command.tier else None) or inputs.tier or config.tier
    )
    if not llm.configured and tier != "0":
        notices.append(f"no anthropic-api-key: tier 0 (repair templates, no model) instead of {tier}")
        tier = "0"
    try:
        budget = config.budget.apply(Budget())
        if inputs.budget_usd is not None:
            budget = budget.with_(usd=inputs.budget_usd)
        if command is not None and command.budget_usd is not None:
            budget = budget.with_(usd=min(budget.usd, float(command.budget_usd)))
        if command is not None and command.iterations is not None:
            budget = budget.with_(iterations=command.iterations)
        if wall_s is not None and wall_s < budget.wall_s:
            notices.append(
                f"timeout-minutes: the repair's wall-time budget is {wall_s:.0f} s "
                f"(instead of {budget.wall_s:.0f} s), keeping time to verify and report"
            )
            budget = budget.with_(wall_s=wall_s)
    except ValueError as exc:
        raise ConfigError(f"action: {exc}") from None
    step_command = ci.step.command if ci is not None and ci.step is not None and not ci.step.uses else None
    trace_dir = env.runner_temp / "arcs"
    return FixRequest(
        repo=env.workspace,
        test_command=inputs.test or step_command,
        issue_text=target.issue_text,
        tier=tier,
        budget=budget,
        apply=False,
        trace_out=trace_dir / f"trace-{env.run_id}-{env.run_attempt}.json",
        traces_dir=trace_dir,
        llm=llm,
        config=LoopConfig(parallel=default_jobs()),
        unsafe_no_sandbox=unsafe,
        toolchain_paths=toolchains_from_path(env.path),
        failure_class=ci.failure_class if ci is not None else "",
        ci_tests=tuple(ci.test_ids) if ci is not None else (),
        hints=tuple((ref.path, ref.line) for ref in ci.locations[:20]) if ci is not None else (),
    )


__all__ = ["SYSTEM_BIN", "ci_failure", "fix_request", "read_config", "sandbox", "toolchains_from_path"]
