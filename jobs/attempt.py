"""The lifecycle of a repair attempt: claim -> ``.arcs.yml`` (read once) -> admission -> repair ->
record -> queue publishing. :func:`run_ci` (a red build) and :func:`run_issue` (an issue labelled
for ARCS) are the ``repair_ci_failure`` and ``repair_issue`` jobs; :mod:`jobs.commands` drives
the same steps for ``/arcs`` comments.

Repository policy comes from ``.arcs.yml`` (:class:`jobs.config.ArcsConfig`; at the commit being
repaired for CI and issues, the default branch for commands) and is enforced **before anything is
cloned or repaired**:

* a malformed file: no repair; the message names the key (check run for CI, status comment for
  issues and commands) and a ``refusal`` event is recorded;
* ``triggers.ci/issues/comments`` off: the job is ``skipped`` with a ``notice`` event; only a
  comment-triggered job gets a reply (an issue label or a red build never makes ARCS talk);
* ``branches`` (globs of the branches whose CI failures are repaired) and ``label`` (the issue
  label that asks for a fix);
* a CI failure that code changes do not fix: a ``notice`` event, and a check run (plus status
  comment on the pull request) only when ``notify_unrepairable`` is true;
* a CI failure whose failing tests are all known flaky (the test history, :mod:`jobs.flaky_ci`):
  no repair, the evidence on the check run, and (``flaky.rerun_failed_jobs``) a re-run of the
  failed jobs.

The config read here is the one the repair runs with: :func:`jobs.plan.plan_for` builds the
:class:`jobs.plan.RepairPlan` from it, so one CI repair reads ``.arcs.yml`` once. The owner's
policy and the limits come next (:mod:`jobs.admission`); the engine (``deps.repair``) runs the plan
and returns a :class:`jobs.repair.report.RepairReport`, which :mod:`jobs.outcome` records. While the repair runs, a store-backed
interrupt (:mod:`jobs.policy_interrupt`) stops it at its next round when the owner is paused or
``/arcs stop`` asked it to stop.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from jobs import flaky_ci, render, render_checks
from jobs.admission import Admitted, admit
from jobs.branches import branch_name
from jobs.config import (
    CONFIG_LIMIT,
    ArcsConfig,
    Reader,
    SetupNetwork,
    from_repo_config,
    load,
    load_repo_config,
)
from jobs.failures import Triage, failure_key, join, triage
from jobs.green import ChangeSource, change_signal
from jobs.messages import JobRequest, RepairCiFailure, RepairIssue
from jobs.outcome import record_outcome
from jobs.plan import RepairRequest, plan_for
from jobs.policy_interrupt import StoreInterrupt
from jobs.ports import GitHubGateway, IssueInfo
from jobs.run import AttemptRun, Deps, one_line, run_attempt
from runners import wsfs
from runners.errors import ConfigError

if TYPE_CHECKING:
    from runners.logs import FailureReport

log = structlog.get_logger("arcs.pipeline")

DEFAULT_LABEL = "arcs"
MAX_BRANCH_RETRIES = 2
"""How many times ARCS tries again when CI fails on its own ``arcs/*`` branch."""
MAX_LOG_LOCATIONS = 20
"""``file:line`` references taken from a CI log as retrieval hints (the first ones matter most)."""


# --- the repository's config (.arcs.yml) --------------------------------------------------------


def load_config(gh: GitHubGateway, repo: str, ref: str | None) -> ArcsConfig:
    """``.arcs.yml`` at ``ref`` (None: the default branch); ``ConfigError`` names the key.

    Prefers the gateway's typed ``load_arcs_config`` (the App's gateway has it); otherwise the
    protocol's ``load_repo_config`` is validated into an :class:`ArcsConfig`.
    """
    loader = getattr(gh, "load_arcs_config", None)
    if callable(loader):
        config = loader(repo, ref)
        if isinstance(config, ArcsConfig):
            return config
    sha = ref if ref is not None else gh.get_branch_head(repo, None).sha
    return from_repo_config(gh.load_repo_config(repo, sha))


def org_defaults_notice(config: ArcsConfig) -> tuple[str, dict[str, Any]] | None:
    """The ``notice`` event (message, data) saying which organisation defaults ``config`` applied
    (the dashboard's repository page shows the last one); None without ``extends`` followed."""
    if config.defaults_file is None:
        return None
    keys = ", ".join(config.inherited) or "none (this repository sets every key they set)"
    return (
        f"organisation defaults from {config.defaults_file}: {keys}",
        {
            "policy": "org_defaults",
            "extends": config.extends,
            "file": config.defaults_file,
            "inherited": list(config.inherited),
        },
    )


def read_config(run: AttemptRun, ref: str | None, *, head_sha: str | None = None) -> ArcsConfig | str:
    """The repository's config, or the attempt's final status when the file is malformed.

    A malformed file is never replaced by defaults the maintainer did not choose: no repair, a
    message naming the key (on the check run of ``head_sha`` for CI, else the status comment)
    and a ``refusal`` event.
    """
    try:
        config = load_config(run.gh, run.repo, ref)
        run.dashboard = config.dashboard_issue  # the refresh job reads the default branch's again
        applied = org_defaults_notice(config)
        if applied is not None:
            # What the organisation's defaults set here, for the dashboard's repository page.
            run.event("notice", applied[0], **applied[1])
        return config
    except ConfigError as exc:
        message = getattr(exc, "message", str(exc))
        key = getattr(exc, "key", None)
        text = render.config_error_comment(exc)
        if head_sha is not None:
            run.open_check_run(head_sha)
        return run.finish(
            "refused",
            f"malformed .arcs.yml: {message}",
            title="ARCS could not read .arcs.yml",
            body=text,
            conclusion="neutral" if head_sha is not None else None,
            event="refusal",
            event_data={"policy": "config_error", "key": key},
            comment=head_sha is None,
            check={"title": "ARCS could not read .arcs.yml", "summary": text},
            comment_body=text,
        )


def trigger_off(run: AttemptRun, config: ArcsConfig, trigger: str, *, reply: bool) -> str | None:
    """``skipped`` with a ``notice`` event when ``triggers.<trigger>`` is off in ``.arcs.yml``.

    Only a comment-triggered job (``reply``) is answered: a red build or an issue label must
    not make ARCS talk in a repository that turned it off.
    """
    if getattr(config.triggers, trigger):
        return None
    reason = f"triggers.{trigger} is off in .arcs.yml"
    return run.finish(
        "skipped",
        reason,
        title="" if not reply else "ARCS is turned off here",
        body="",
        conclusion=None,
        event="notice",
        event_data={"policy": f"triggers.{trigger}"},
        comment=reply,
        comment_body=render.refusal_comment("disabled", reason) if reply else None,
    )


# --- the shared repair step ------------------------------------------------------------------


def checkout_config(workdir: Path, org: Callable[[str], Reader] | None = None) -> ArcsConfig:
    """``.arcs.yml`` of a checkout, for a repair whose caller read none (``/arcs`` commands).

    A file the App's schema rejects does not stop the repair (the command's admission already
    read the default branch's): ARCS' defaults apply, the runner keys (``test``, ``setup``,
    timeouts…) read leniently as ``arcs fix`` reads them; the log says so. ``org``: the
    gateway's reader of other repositories, so ``extends:`` is followed as at admission.
    """

    def read(path: str) -> str | None:
        return wsfs.text_or_none(workdir, path, limit=CONFIG_LIMIT)

    try:
        return load(read, org=org)
    except ConfigError as exc:
        log.warning("repair.config_ignored", error=str(exc)[:300])
        runner = load_repo_config(workdir)
        return ArcsConfig(
            setup=runner.setup,
            test=runner.test,
            timeout_s=runner.timeout_s,
            memory_mb=runner.memory_mb,
            setup_network=SetupNetwork(allow=runner.setup_allow),
        )


def repair(
    run: AttemptRun,
    grant: Admitted,
    *,
    head_sha: str,
    config: ArcsConfig | None,
    failure: FailureReport | None = None,
    issue: IssueInfo | None = None,
    tier: str = "auto",
    budget_usd: float | None = None,
    iterations: int | None = None,
    instructions: str | None = None,
    source: ChangeSource | None = None,
) -> str:
    """Check out ``head_sha``, plan the repair, run it, record the report, queue publishing.

    ``config``: the ``.arcs.yml`` already read at ``head_sha`` (the plan is built from it; None:
    the checkout's, :func:`checkout_config`). The :class:`RepairRequest` is made of the
    admission's ``grant``, the CI log's analysis (``failure``), the ``issue`` to fix (an issue
    repair; else a CI one) and a command's options (``tier`` … ``instructions``). ``source``:
    where the last green commit of a CI failure is found (:mod:`jobs.green`; never fatal).
    """
    deps = run.deps
    interrupt = StoreInterrupt(deps.store, run.attempt.id, run.attempt.owner, run.repo)
    with deps.scratch() as scratch:
        workdir = scratch / "repo"
        workdir.mkdir()
        run.gh.clone(run.repo, head_sha, workdir)
        request = RepairRequest(
            kind="issue" if issue is not None else "ci",
            repo=run.repo,
            workdir=workdir,
            head_sha=head_sha,
            attempt_id=run.attempt.id,
            trace_dir=deps.settings.traces_dir,
            trigger=run.attempt.trigger,
            issue_title=issue.title if issue is not None else None,
            issue_body=issue.body if issue is not None else None,
            instructions=instructions,
            tier=tier,
            budget_usd=budget_usd,
            iterations=iterations,
            usd_cap=grant.usd_cap,
        )
        if failure is not None:
            request = replace(
                request,
                failure_class=failure.failure_class,
                failure_log="\n".join(failure.error_lines) or None,
                test_ids=tuple(failure.test_ids),
                locations=tuple((ref.path, ref.line) for ref in failure.locations[:MAX_LOG_LOCATIONS]),
                test_command=failure.step.command if failure.step and not failure.step.uses else None,
            )
        if source is not None:
            signal = change_signal(
                run.gh,
                run.repo,
                workdir,
                head_sha=head_sha,
                head_branch=source.head_branch,
                workflow_id=source.workflow_id,
                pull_request=source.pull_request,
            )
            request = replace(
                request,
                changes=signal.changes,
                change_note=signal.note,
                on_default_branch=source.on_default_branch,
            )
        run.repairing = True  # from here on an error is charged its reservation (see AttemptRun.fail)
        plan = plan_for(
            request,
            config if config is not None else checkout_config(workdir, getattr(run.gh, "org_reader", None)),
            deps.repair.defaults,
        )
        report = deps.repair.run(plan, interrupt=interrupt)
    return record_outcome(run, report)


# --- the jobs --------------------------------------------------------------------------------


def _red_build_at(deps: Deps, job: JobRequest, msg: RepairCiFailure) -> dt.datetime:
    """When CI went red: given by the web side, else when its webhook arrived, else now."""
    if msg.red_build_at is not None:
        return msg.red_build_at
    delivery_id = msg.delivery_id or job.context.get("delivery_id")
    delivery = deps.store.get_delivery(str(delivery_id)) if delivery_id else None
    return delivery.received_at if delivery is not None else deps.clock()


def run_ci(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """A failed CI run on a branch of the repository: classify, repair, queue publishing.

    A workflow run is triaged first (:func:`triage`): its attempt is the one of its failure
    (:func:`jobs.failures.failure_key`), so the runs of one commit that fail the same way join
    one attempt (:func:`join`). A message whose own key already names an attempt (one claimed
    for the run alone, or a deferred attempt's message) resumes that attempt as before.
    """
    msg = job.expect(RepairCiFailure)
    repo, head_sha, head_branch = msg.repo, msg.head_sha, msg.head_branch
    prs = msg.pull_requests
    key = job.idempotency_key or f"ci:{repo}:{head_sha}"
    triaged: Triage | None = None
    if job.typed().resume is None and deps.store.get_attempt_by_key(key) is None:
        # A redelivered run goes back to its attempt without downloading its logs again.
        known = deps.store.attempt_of_run(repo, msg.run_id) if msg.run_id is not None else None
        if known is not None:
            key = known.idempotency_key
        else:
            triaged = triage(deps, msg)
    signature: dict[str, Any] = {}
    if triaged is not None:
        key = failure_key(repo, head_sha, triaged.signature)
        signature["failure_signature"] = triaged.signature.digest

    def work(run: AttemptRun) -> str:
        config = read_config(run, head_sha, head_sha=head_sha)
        if isinstance(config, str):
            return config
        off = trigger_off(run, config, "ci", reply=False)
        if off is not None:
            if prs and config.triggers.comments:
                offer_fix(run, head_sha, prs[0])
            return off
        retry_of = msg.retry_of
        if not retry_of and not (head_branch is None or config.watches(head_branch)):
            # The repository asked for silence on this branch: record it, post nothing.
            return run.finish(
                "skipped",
                f"branch {head_branch} is not in .arcs.yml `branches`",
                title="",
                body="",
                conclusion=None,
                comment=False,
            )
        base_branch = head_branch
        branch = branch_name("fix", str(head_branch or head_sha[:12]))
        if retry_of:
            earlier = deps.store.attempts(repo=repo, head_branch=str(retry_of), limit=MAX_BRANCH_RETRIES + 2)
            previous = [a for a in earlier if a.id != run.attempt.id]
            if len(previous) >= MAX_BRANCH_RETRIES:
                run.open_check_run(head_sha)
                return run.finish(
                    "skipped",
                    f"CI still fails on {retry_of} after {len(previous)} ARCS retries",
                    title="ARCS stopped retrying",
                    body=f"CI still fails on `{retry_of}` after {len(previous)} attempts by ARCS; "
                    "it will not try again on its own. A maintainer can comment `/arcs fix` on the pull request.",
                    conclusion="skipped",
                )
            # A failure on ARCS's own branch: stack a new fix on it, same pull request.
            branch = str(retry_of)
            origin = deps.store.attempts(repo=repo, branch=branch, limit=10)
            base_branch = next((a.base_branch for a in origin if a.base_branch), None) or base_branch
        run.update(branch=branch, base_branch=base_branch)
        failure: FailureReport | None = None
        run_id = run.attempt.run_id
        if run_id is not None:
            from runners.logs import analyze_log

            if triaged is not None and run_id == msg.run_id:
                report = triaged.report
            else:
                report = analyze_log(run.gh.download_failed_logs(repo, run_id))
            run.update(failure_class=report.failure_class)
            if not report.repairable:
                # Said on GitHub only when the repository asked (`notify_unrepairable`); always recorded.
                notify = config.notify_unrepairable
                if notify:
                    run.open_check_run(head_sha)
                text = render.unrepairable_summary(report.failure_class, report.reason)
                return run.finish(
                    "skipped",
                    f"{report.failure_class} failure: {report.reason}",
                    title=f"ARCS does not repair {report.failure_class} failures" if notify else "",
                    body=text if notify else "",
                    conclusion="skipped",
                    event="notice",
                    event_data={"policy": "unrepairable", "failure_class": report.failure_class},
                    comment=notify,
                    comment_body=render.refusal_comment("unrepairable", text) if notify else None,
                )
            screened = flaky_ci.screen(
                run,
                config,
                report,
                head_sha=head_sha,
                run_id=run_id,
                run_attempt=msg.ci.run_attempt if run_id == msg.run_id else None,
                workflow=msg.workflow_name,
            )
            if isinstance(screened, str):
                return screened  # every failing test is known flaky: not repaired as code
            failure = screened
        grant = admit(run, config, branch, head_sha=head_sha, comment=False)
        if isinstance(grant, str):
            return grant
        run.open_check_run(head_sha)
        source = ChangeSource(
            head_branch=head_branch,
            workflow_id=msg.ci.workflow_id,
            pull_request=prs[0] if prs else None,
            on_default_branch=_on_default_branch(run, config, head_branch, prs=prs, retry_of=retry_of),
        )
        return repair(run, grant, head_sha=head_sha, config=config, failure=failure, source=source)

    return run_attempt(
        deps,
        job,
        key,
        message_id,
        work,
        gh=triaged.gh if triaged is not None else None,
        on_duplicate=lambda attempt: join(deps, job, msg, attempt),
        trigger="ci",
        head_sha=head_sha,
        head_branch=head_branch,
        run_id=msg.run_id,
        issue_number=prs[0] if prs else None,
        red_build_at=_red_build_at(deps, job, msg),
        requested_by=msg.actor,
        **signature,
    )


def offer_fix(run: AttemptRun, head_sha: str, pull: int) -> None:
    """A red build ARCS does not repair on its own here (``triggers.ci`` off): a neutral "ARCS can
    fix this" check run on the commit with a "Fix with ARCS" button (a click is ``/arcs fix`` on
    pull request ``pull`` by whoever clicked). A check run, not a comment: nobody is notified."""
    text = (
        "ARCS does not repair CI failures in this repository on its own (`triggers.ci` is off in "
        f"`.arcs.yml`). Anyone with write access can ask for a repair: click **Fix with ARCS**, or "
        f"comment `/arcs fix` on #{pull}."
    )
    try:
        check_id = run.gh.create_check_run(
            run.repo,
            head_sha,
            "ARCS",
            "ARCS can fix this",
            text,
            external_id=str(run.attempt.id),
            conclusion="neutral",
            actions=render_checks.check_actions(render_checks.ACTION_FIX),
        )
    except Exception as exc:  # an offer that cannot be posted costs nothing else
        run.event("error", f"could not offer a repair on {head_sha[:12]}: {type(exc).__name__}: {exc}")
        return
    run.update(check_run_id=check_id)


def _on_default_branch(
    run: AttemptRun, config: ArcsConfig, branch: str | None, *, prs: tuple[int, ...], retry_of: str | None
) -> bool:
    """The red commit is on the default branch, outside any pull request (asked of GitHub only
    when ``.arcs.yml`` wants a revert of the culprit; an error reads as "no")."""
    if getattr(config, "on_no_fix", "report") != "revert" or prs or retry_of or not branch:
        return False
    try:
        return run.gh.get_branch_head(run.repo, None).name == branch
    except Exception as exc:  # the revert fallback is optional
        log.warning("repair.default_branch_unknown", repo=run.repo, error=str(exc)[:200])
        return False


def run_issue(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """An issue labelled for ARCS: check who asked, repair on the default branch, queue publishing."""
    msg = job.expect(RepairIssue)
    repo, number, sender = msg.repo, msg.issue_number, msg.sender or ""
    key = job.idempotency_key or f"issue:{repo}#{number}"

    def work(run: AttemptRun) -> str:
        # The web side enqueues every label (only .arcs.yml knows which one asks ARCS): a label
        # that is not the repository's ARCS label ends here, silently (no comment, no event),
        # before anyone's permission is checked.
        added = msg.label or DEFAULT_LABEL
        is_default = added.casefold() == DEFAULT_LABEL.casefold()
        try:
            head = run.gh.get_branch_head(repo, None)
            loaded: ArcsConfig | None = load_config(run.gh, repo, head.sha)
        except ConfigError:
            loaded = None  # malformed: only the default label gets the error message below
        except Exception as exc:
            if is_default:
                raise
            return not_our_label(run, added, f"could not read .arcs.yml: {type(exc).__name__}")
        wanted = loaded.label if loaded is not None else DEFAULT_LABEL
        if added.casefold() != wanted.casefold():
            return not_our_label(run, added, f"this repository's ARCS label is {wanted!r}")
        refused = run.check_permission(sender)
        if refused is not None:
            return refused
        config = loaded if loaded is not None else read_config(run, head.sha)
        if isinstance(config, str):
            return config
        off = trigger_off(run, config, "issues", reply=False)
        if off is not None:
            return off
        issue = run.gh.get_issue(repo, number)
        run.update(title=one_line(issue.title, 300))
        if issue.state != "open":
            return run.finish(
                "skipped",
                f"issue #{number} is {issue.state}",
                title="ARCS did not run",
                body=f"Issue #{number} is {issue.state}; ARCS only works on open issues.",
                conclusion=None,
            )
        branch = branch_name("issue", str(number))
        run.update(head_sha=head.sha, base_branch=head.name, branch=branch)
        grant = admit(run, config, branch)
        if isinstance(grant, str):
            return grant
        run.tell(
            "ARCS is working on this issue",
            f"Attempt #{run.attempt.id}: reproducing the issue on `{head.name}` and searching for a fix.",
            conclusion=None,
        )
        return repair(run, grant, head_sha=head.sha, config=config, issue=issue)

    return run_attempt(
        deps, job, key, message_id, work, trigger="issue", issue_number=number, requested_by=sender
    )


def not_our_label(run: AttemptRun, label: str, why: str) -> str:
    """``skipped`` without a word on GitHub and without an event: most labels are not for ARCS."""
    return run.finish(
        "skipped",
        f"label {label!r} is not for ARCS: {why}",
        title="",
        body="",
        conclusion=None,
        comment=False,
    )
