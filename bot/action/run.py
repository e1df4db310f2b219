"""The ``arcs action`` use case: from the step's environment to a published fix and an exit code.

1. **What to repair** (:func:`bot.action.event.target_for`): the event decides the commit and the
   branch; forks, comments by people without write association and ARCS' own branches are not
   repaired (a summary says why; nothing is written to GitHub).
2. **How to test**: the test command is the ``test`` input, else the failing step's command (a
   ``workflow_run``: read from the failed run's logs, which also name the failing tests and
   file:line hints), else ``.arcs.yml`` ``test:``, else ARCS' conventions. The workspace is used as
   the workflow left it (no setup phase: the toolchains on the workflow's ``PATH`` are exposed to the
   tests); the bubblewrap sandbox applies when it works on the runner, else — ``sandbox: auto`` —
   the tests run unsandboxed (as the workflow's own test step did) and the summary says so.
3. **Repair**: the same application entry point as ``arcs fix`` (:func:`jobs.fix.fix`, replaceable
   through :attr:`ActionDeps.fixer`): reproduce, repair within the budget, quality gates (no test
   weakening), final verification. The workspace's files are not modified. With the change since
   the last green commit (:mod:`bot.action.changes`: the push's ``before``, a pull request's merge
   base, the last successful run; a shallow checkout is deepened) the repair also gets tier-0
   reverts, the "what changed" context and a bisection to the culprit commit.
4. **Publish** (:mod:`bot.action.publish`) with the token, only a verified fix.
5. **Report**: the job summary (``GITHUB_STEP_SUMMARY``) and the step outputs (``GITHUB_OUTPUT``).

Exit codes: 0 — a verified fix reached GitHub as the mode asked, or there was nothing to do
(``skipped``: a fork, no command, a run that did not fail); 1 — no verified fix, or a fix that could
not be published (no token, HTTP 403: the summary names the permission), or a refusal; 2 — a
configuration error (a missing ``GITHUB_*`` variable, a bad input, a malformed ``.arcs.yml``).
"""

from __future__ import annotations

import contextlib
import hashlib
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import structlog

from bot.action.deadline import DeadlineInterrupt, StepDeadline, run_bounded
from bot.action.env import ActionEnv
from bot.action.event import Target, target_for, with_pull
from bot.action.request import ci_failure, fix_request, read_config, sandbox, toolchains_from_path
from bot.action.summary import (
    ActionOutcome,
    Published,
    format_outputs,
    job_summary,
    repair_summary,
    run_rows,
    step_outputs,
)
from bot.errors import ArcsError, ConfigError
from bot.github import GitHubError
from bot.settings import Settings
from jobs.render import RepairSummary
from runners import wsfs

if TYPE_CHECKING:
    from bot.github.client import InstallationClient
    from jobs.config import ArcsConfig
    from jobs.fix import FixReport
    from jobs.green import ChangeSignal
    from jobs.repair.edits import AppliedEdits

log = structlog.get_logger(__name__)

Fixer = Callable[..., "FixReport"]
"""The application entry point: :func:`jobs.fix.fix`'s signature."""
FIX_BRANCH = "arcs/fix/{signature}"


@dataclass
class ActionDeps:
    """The ports of :func:`run_action` (tests replace the clock and the transport)."""

    fixer: Fixer | None = None
    """None: :func:`jobs.fix.fix`, the entry point ``arcs fix`` uses."""
    transport: httpx.BaseTransport | None = None
    clock: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    progress: Callable[[str], None] = field(default=lambda _message: None)
    commands: Callable[[str], None] = field(default=lambda line: _stdout_line(line))
    """Where the workflow commands (``::error``, ``::notice``) go: stdout, which the runner reads."""


def _stdout_line(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------- pure helpers


def failure_signature(repository: str, target: Target, command: str, failing: tuple[str, ...]) -> str:
    """12 hex digits naming the failure: the same failure on the same branch, the same branch and
    pull request (one per signature), whichever run or commit found it."""
    if target.issue_text is not None:
        key = f"{repository}\nissue#{target.issue_number}"
    else:
        key = "\n".join([repository, target.branch, command, *sorted(set(failing))])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def fix_changes(report: FixReport) -> AppliedEdits:
    """The fix's files before and after, computed on copies (the workspace is left as it was)."""
    from jobs.repair.edits import EditError, apply_edits

    root = report.repo.resolve()
    with tempfile.TemporaryDirectory(prefix="arcs-action-") as tmp:
        copy = Path(tmp)
        for rel in dict.fromkeys(edit.path for edit in report.result.edits):
            # The edit's path as the repair saw it (a folder link inside the workspace resolved),
            # then read without following anything (runners.wsfs); a missing file is created.
            try:
                source = (root / rel).resolve()
                if not source.is_relative_to(root):
                    continue
                canonical = source.relative_to(root).as_posix()
                st = wsfs.entry_stat(root, canonical)
                if st is None:
                    continue
                data = wsfs.read_bytes(root, canonical, limit=wsfs.SOURCE_LIMIT, whole=True)
            except (OSError, ValueError, RuntimeError):
                continue
            wsfs.write_bytes(copy, rel, data, mode=stat.S_IMODE(st.st_mode))
        try:
            return apply_edits(copy, report.result.edits)
        except EditError as exc:
            raise ArcsError(
                f"action: the verified patch does not apply to the workspace: {exc}", exit_code=1
            ) from exc


# --------------------------------------------------------------------------- the use case


def run_action(settings: Settings, env: ActionEnv, deps: ActionDeps | None = None) -> ActionOutcome:
    """Run the Action (see the module docstring); the summary and the outputs are always written.

    The ``model`` input replaces ``ARCS_MODEL`` for this run; ``timeout-minutes`` bounds the whole
    step (:mod:`bot.action.deadline`): past it, the outcome is ``timeout`` and the step exits 1.
    """
    deps = deps or ActionDeps()
    if env.inputs.model is not None:
        settings = settings.model_copy(update={"model": env.inputs.model})
    minutes = env.inputs.timeout_minutes
    deadline = StepDeadline.begin(minutes, deps.monotonic) if minutes is not None else None
    try:
        if deadline is None:
            outcome = _run(settings, env, deps, None)
        else:
            finished, result = run_bounded(lambda: _run(settings, env, deps, deadline), deadline)
            outcome = result if finished and result is not None else _timed_out(env, deadline)
    except ArcsError as exc:
        log.warning("action.error", error=exc.message[:300])
        outcome = ActionOutcome(
            verdict="error",
            reason=exc.message,
            repository=env.repository,
            run_url=env.run_url,
            exit_code=exc.exit_code,
        )
    write_results(env, outcome)
    from bot.action.commands import outcome_commands

    for line in outcome_commands(env, outcome):
        deps.commands(line)
    return outcome


def write_results(env: ActionEnv, outcome: ActionOutcome) -> None:
    """Append the job summary and the step outputs (when running under Actions)."""
    for path, text in (
        (env.step_summary, job_summary(outcome)),
        (env.output, format_outputs(step_outputs(outcome))),
    ):
        if path is None:
            continue
        try:
            with path.open("a", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise ConfigError(f"action: cannot write {path}: {exc.strerror or exc}") from exc


@contextlib.contextmanager
def _client(env: ActionEnv, deps: ActionDeps) -> Iterator[InstallationClient | None]:
    token = env.inputs.token
    if token is None:
        yield None
        return
    from bot.action.github import token_client

    client = token_client(
        token,
        env.repository,
        api_url=env.api_url,
        transport=deps.transport,
        clock=deps.clock,
        monotonic=deps.monotonic,
        sleep=deps.sleep,
    )
    try:
        yield client
    finally:
        client.close()


def _timed_out(env: ActionEnv, deadline: StepDeadline) -> ActionOutcome:
    log.warning("action.timeout", minutes=deadline.minutes)
    return ActionOutcome(
        verdict="timeout",
        reason=f"ARCS {deadline.stop_line}: the repair had not finished, nothing was published",
        repository=env.repository,
        run_url=env.run_url,
        exit_code=1,
    )


def _not_run(env: ActionEnv, target: Target) -> ActionOutcome:
    verdict = "skipped" if target.decision == "skip" else "refused"
    return ActionOutcome(
        verdict=verdict,
        reason=target.reason,
        repository=env.repository,
        run_url=env.run_url,
        exit_code=0 if verdict == "skipped" else 1,
    )


def _run(
    settings: Settings, env: ActionEnv, deps: ActionDeps, deadline: StepDeadline | None
) -> ActionOutcome:
    target = target_for(env)
    with _client(env, deps) as client:
        if target.decision == "repair" and target.needs_pull_lookup:
            if client is None:
                target = replace(
                    target,
                    decision="refuse",
                    reason="a comment on a pull request needs github-token to read the pull request",
                )
            else:
                from bot.action.publish import pull_request_head

                assert target.pr_number is not None
                pull = pull_request_head(client, target.pr_number)
                target = with_pull(
                    target,
                    sha=pull.sha,
                    branch=pull.branch,
                    head_repo=pull.head_repo,
                    base_repo=pull.base_repo,
                    base_sha=pull.base_sha,
                )
        if target.decision != "repair":
            log.info("action.not_run", decision=target.decision, reason=target.reason[:200])
            return _not_run(env, target)
        config = read_config(env.workspace)
        notices: list[str] = []
        ci = ci_failure(client, env, target, notices)
        if ci is not None and not ci.repairable:
            return ActionOutcome(
                verdict="skipped",
                reason=f"a {ci.failure_class} failure, which code changes do not fix: {ci.reason}",
                repository=env.repository,
                run_url=env.run_url,
                exit_code=0,
            )
        sandbox_note, unsafe, refusal = sandbox(settings, env, toolchains_from_path(env.path))
        if refusal:
            return ActionOutcome(
                verdict="refused", reason=refusal, repository=env.repository, run_url=env.run_url, exit_code=1
            )
        from bot.action.changes import change_signal

        signal = change_signal(env, target, client)
        if signal is not None and signal.changes is None:
            notices.append(signal.note)
        request = fix_request(
            settings,
            env,
            target,
            config,
            ci,
            unsafe,
            notices,
            wall_s=deadline.repair_wall_s() if deadline is not None else None,
        )
        if signal is not None and signal.changes is not None:
            request = replace(request, changes=signal.changes)
        fixer = deps.fixer or _default_fixer()
        if deadline is None:
            report = fixer(settings, request, progress=deps.progress)
        else:
            report = fixer(settings, request, progress=deps.progress, interrupt=DeadlineInterrupt(deadline))
        return _finish(env, target, config, client, report, sandbox_note, notices, signal, deadline)


def _default_fixer() -> Fixer:
    from jobs.fix import fix

    return fix


def _finish(
    env: ActionEnv,
    target: Target,
    config: ArcsConfig,
    client: InstallationClient | None,
    report: FixReport,
    sandbox_note: str,
    notices: list[str],
    signal: ChangeSignal | None = None,
    deadline: StepDeadline | None = None,
) -> ActionOutcome:
    from bot.action.dashboard import dashboard_link
    from jobs.culprit import changes_line
    from jobs.engine import report_of

    result = report.result
    # The engine's own report (the worker's and `arcs fix`'s): changes, culprit, failures on
    # files of the repository, the CI targets and the revert fields come with it.
    repaired = report_of(report)
    issue = target.issue_text is not None
    where = target.branch or target.sha[:12]
    summary = repair_summary(
        repaired,
        kind="issue" if issue else "ci",
        failure_summary=""
        if issue
        else f"CI failed on `{where}`; ARCS reproduced the failure in the workflow's own environment.",
        failing_run_url=env.run_url,
        head_sha=target.sha,
        issue_number=target.issue_number if issue else None,
        issue_title=target.issue_title,
    )
    command = str(result.trace.repo.get("test_command") or "")
    failing = tuple(result.trace.reproduction.targets) or (
        (*result.tests_before.failed, *result.tests_before.errors) if result.tests_before else ()
    )
    signature = failure_signature(env.repository, target, command, failing)
    published: Published | None = None
    # A partial fix (targets pass, the command still fails only on failures it already had) is
    # published only when .arcs.yml asks, as the App does; its PR title and body say so.
    # Past the hard stop the step has already reported: a late fix is not published behind it.
    late = deadline is not None and deadline.abandoned.is_set()
    if not late and (result.fixed or (result.verdict == "partial" and config.open_pr_on_partial)):
        published = _publish(env, target, config, client, report, summary, signature)
    exit_code = 0 if result.fixed and published is not None and published.ok else 1
    dashboard = dashboard_link(env.inputs.dashboard_url, target.sha, client, notices)
    return ActionOutcome(
        verdict=str(result.verdict),
        reason=result.reason,
        fixed=bool(result.fixed),
        repository=env.repository,
        run_url=env.run_url,
        trace_path=str(report.trace_path),
        sandbox=sandbox_note,
        summary=summary,
        rows=run_rows(repaired),
        published=published,
        notices=(*notices, *result.notices),
        test_command=command,
        signature=signature,
        exit_code=exit_code,
        changes=changes_line(signal.changes) if signal is not None and signal.changes is not None else "",
        change_origin=signal.note if signal is not None and signal.changes is not None else "",
        culprit=repaired.culprit,
        failures=repaired.failures,
        dashboard_url=dashboard,
    )


def _publish(
    env: ActionEnv,
    target: Target,
    config: ArcsConfig,
    client: InstallationClient | None,
    report: FixReport,
    summary: RepairSummary,
    signature: str,
) -> Published:
    from bot.action import publish

    mode = env.inputs.mode
    if client is None:
        return Published(
            mode, False, detail="no github-token was given: nothing was published (the patch is below)"
        )
    changes = fix_changes(report)
    try:
        if mode == "pr":
            stale = publish.base_mismatches(client, changes.before, target.sha)
            if stale:
                return _stale(mode, target, stale)
            return publish.publish_pr(
                client,
                summary,
                branch=FIX_BRANCH.format(signature=signature),
                base_branch=target.branch,
                base_sha=target.sha,
                files=changes.after,
                draft=env.inputs.draft if env.inputs.draft is not None else config.draft,
                labels=config.pr_labels,
                bot_login=env.bot_login,
                attempt=env.run_url,
                workdir=env.runner_temp,
            )
        if mode == "suggest":
            if target.pr_number is None:
                return Published(
                    mode,
                    False,
                    detail="suggest needs a pull request, and this run has none (the patch is below)",
                )
            stale = publish.base_mismatches(client, changes.before, target.sha)
            if stale:
                return _stale(mode, target, stale)
            return publish.publish_suggestions(
                client,
                summary,
                number=target.pr_number,
                head_sha=target.sha,
                before=changes.before,
                after=changes.after,
                signature=signature,
                bot_login=env.bot_login,
            )
        if target.issue_number is None:
            return Published(
                mode,
                False,
                detail="comment needs a pull request or an issue, and this run has none (the patch is below)",
            )
        return publish.publish_comment(
            client,
            summary,
            number=target.issue_number,
            signature=signature,
            bot_login=env.bot_login,
            repo_url=env.repo_url,
            run_url=env.run_url,
        )
    except GitHubError as exc:
        return publish.failed(mode, exc)


def _stale(mode: str, target: Target, paths: list[str]) -> Published:
    listed = ", ".join(f"`{p}`" for p in paths[:5])
    return Published(
        mode,
        False,
        detail=f"the workspace is not commit {target.sha[:12]} ({listed} differ there), so the fix cannot be "
        f"published on it; check out that commit (pull_request workflows: `ref: ${{{{ github.event.pull_request.head.sha }}}}`)",
    )


__all__ = [
    "ActionDeps",
    "Fixer",
    "failure_signature",
    "fix_changes",
    "run_action",
    "toolchains_from_path",
    "write_results",
]
