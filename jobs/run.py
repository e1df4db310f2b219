"""One attempt in progress: the dependencies of a job, claiming its attempt, and telling the user.

Each repair job runs through :func:`run_attempt`: it first **claims its attempt** by idempotency
key (a unique constraint in the store): a duplicate message (GitHub redelivering the webhook, the broker redelivering the message)
finds the attempt taken, logs ``attempt.duplicate`` and returns without a single side effect. The
message that claimed the attempt (its id is stored) may run again after a crash or a retry and
resumes it.

Then the attempt moves ``queued -> running -> fixed | no_fix | refused | skipped | error`` and
every step is visible (:class:`AttemptRun`): a check run on the commit (CI), a status comment on
the issue or pull request, an event in the store for refusals and errors. An exception never
disappears: it becomes status ``error``, an ``error`` event and a message to the user (who sees
the exception type, not its text).

Longer than ~500 lines on purpose: one attempt's life and every way it tells the user (check run
with its annotations and buttons, status comment, review-thread reply) stay in one place.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from structlog.contextvars import bind_contextvars

from jobs import render, render_checks
from jobs.dashboard_schedule import schedule_dashboard
from jobs.logctx import set_outcome
from jobs.messages import Envelope, MessageInvalid, PublishResult, RepairCiFailure
from jobs.policy import EffectivePolicy
from jobs.ports import (
    WRITE_PERMISSIONS,
    AttemptStore,
    AttemptView,
    GitHubGateway,
    IndexService,
    JobSettings,
    RepairService,
    is_bot_account,
)
from jobs.test_history import HistoryStore

log = structlog.get_logger("arcs.pipeline")

CHECK_NAME = "ARCS"
MAX_REASON_CHARS = 500
MAX_JOINED_LISTED = 20
"""Joined runs named on a check run (the rest are counted; the dashboard lists them all)."""

WorkdirFactory = Callable[[], contextlib.AbstractContextManager[Path]]


def utcnow() -> dt.datetime:
    """The current time, aware, in UTC."""
    return dt.datetime.now(dt.UTC)


@dataclass
class Deps:
    """Everything the jobs use, built by the worker (or a test) from settings."""

    settings: JobSettings
    store: AttemptStore
    github: Callable[[int | None], GitHubGateway]
    """The gateway of an installation (``installation_id`` from the job)."""
    repair: RepairService
    enqueue: Callable[[Envelope], None]
    """Sends follow-up jobs (``publish_result``)."""
    index: IndexService | None = None
    workdir: WorkdirFactory | None = None
    """An empty scratch folder per job (default: a temporary folder under ``ARCS_HOME/work``)."""
    clock: Callable[[], dt.datetime] = field(default=utcnow)
    enqueue_later: Callable[[Envelope, dt.timedelta], None] | None = None
    """Sends a job that must not start before the delay (quiet hours; the worker wires
    :meth:`jobs.broker.BrokerEnqueuer.enqueue_later`). None: deferring is impossible and the
    repair is refused."""
    history: HistoryStore | None = None
    """The repository's test history (the worker wires the store); None: nothing is recorded and
    no test is known flaky."""

    def scratch(self) -> contextlib.AbstractContextManager[Path]:
        """A fresh, empty folder, removed afterwards."""
        if self.workdir is not None:
            return self.workdir()
        return _temporary_dir(self.settings.home / "work")


@contextlib.contextmanager
def _temporary_dir(parent: Path) -> Iterator[Path]:
    parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="arcs-job-", dir=parent) as tmp:
        yield Path(tmp)


# --- small pure helpers --------------------------------------------------------------------------


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@contextlib.contextmanager
def closing(gh: GitHubGateway) -> Iterator[GitHubGateway]:
    """Close the gateway after the job (the real one revokes its installation tokens)."""
    try:
        yield gh
    finally:
        close = getattr(gh, "close", None)
        if callable(close):
            try:
                close()
            except Exception as exc:  # a token that cannot be revoked expires within the hour
                log.warning("github.close_failed", error=f"{type(exc).__name__}: {exc}"[:300])


# --- the attempt being worked on -------------------------------------------------------------


class AttemptRun:
    """One attempt in progress: state transitions, events and what the user is told."""

    def __init__(self, deps: Deps, gh: GitHubGateway, attempt: AttemptView, job: Envelope) -> None:
        self.deps = deps
        self.gh = gh
        self.attempt = attempt
        self.job = job
        self.policy: EffectivePolicy | None = None
        """The policy the repair was admitted under (set by :func:`jobs.admission.admit`)."""
        self.committed: dict[str, float] = {}
        """USD committed against each monthly cap when the repair was admitted."""
        self.granted_usd: float | None = None
        self.repairing = False
        """The repair service was called (its spend, if it fails, is unknown)."""
        self.dashboard = False
        """``.arcs.yml`` as read by this attempt asks for the dashboard issue (``dashboard_issue``)."""
        self.review_thread: int | None = None
        """A command given in a pull request review thread: what :meth:`tell` says goes there as
        a reply (edited in place within this job), not in the status comment."""
        self.review_reply: int | None = None

    @property
    def repo(self) -> str:
        """``owner/name`` of the attempt."""
        return self.attempt.repo

    def update(self, **fields: Any) -> AttemptView:
        """Set columns of the attempt (and keep the updated row)."""
        self.attempt = self.deps.store.update_attempt(self.attempt.id, **fields)
        return self.attempt

    def event(self, kind: str, message: str, **data: Any) -> None:
        """Record an event of the attempt."""
        self.deps.store.record_event(
            kind,
            one_line(message),
            attempt_id=self.attempt.id,
            delivery_id=self.attempt.delivery_id,
            installation_id=self.attempt.installation_id,
            repo=self.repo,
            data=data or None,
        )

    def start(self) -> None:
        """``running``."""
        self.update(status="running", started_at=self.deps.clock())
        log.info("attempt.start", trigger=self.attempt.trigger)

    def open_check_run(self, head_sha: str) -> None:
        """The attempt's in-progress check run on ``head_sha`` (once)."""
        if self.attempt.check_run_id is not None:
            return
        check_id = self.gh.create_check_run(
            self.repo,
            head_sha,
            CHECK_NAME,
            "ARCS is looking at this failure",
            f"Attempt #{self.attempt.id}: reproducing the failure and searching for a fix.",
            external_id=str(self.attempt.id),  # a button clicked on it names this attempt
        )
        self.update(check_run_id=check_id)

    def tell(
        self,
        title: str,
        body: str,
        *,
        conclusion: str | None,
        comment: bool = True,
        check: Mapping[str, str] | None = None,
        comment_body: str | None = None,
        annotations: Sequence[Mapping[str, Any]] = (),
        actions: Sequence[Mapping[str, str]] | None = None,
    ) -> None:
        """Say it on the check run (CI) and in the status comment (issue/PR), whichever exist.

        ``check`` (a :func:`jobs.render.check_run_output`) and ``comment_body`` replace the plain
        ``title``/``body`` where given; ``annotations`` and ``actions`` (:mod:`jobs.render_checks`)
        go on the check run (annotations are appended by GitHub: give them once per attempt). The comment carries the attempt's hidden marker, so a
        redelivered job edits the same comment. A failure to post is recorded as an event, not
        raised: the attempt's outcome stands.
        """
        if self.attempt.check_run_id is not None:
            if actions is None and conclusion is not None:
                actions = self.buttons()
            output = dict(check) if check is not None else {"title": title, "summary": body}
            also = self.also_failing()
            if also:
                output["summary"] = f"{output['summary']}\n\n{also}"
            extra: dict[str, Any] = {}
            if annotations:
                extra["annotations"] = annotations
            if actions is not None:
                extra["actions"] = actions
            try:
                self.gh.update_check_run(
                    self.repo,
                    self.attempt.check_run_id,
                    conclusion=conclusion,
                    title=output["title"],
                    summary=output["summary"],
                    details=output.get("text"),
                    **extra,
                )
            except Exception as exc:
                self._report_post_failure("check run", exc)
        if comment and self.attempt.issue_number is not None:
            text = comment_body if comment_body is not None else f"**{title}**\n\n{body}"
            if render.find_status_marker(text) is None:
                text += "\n\n" + render.status_marker(self.attempt.id)
            if self.review_thread is not None:
                self._reply_in_thread(self.attempt.issue_number, self.review_thread, text)
                return
            try:
                comment_id = self.gh.create_or_edit_status_comment(
                    self.repo,
                    self.attempt.issue_number,
                    text,
                    self.attempt.status_comment_id,
                )
                if comment_id != self.attempt.status_comment_id:
                    self.update(status_comment_id=comment_id)
            except Exception as exc:
                self._report_post_failure("status comment", exc)

    def _reply_in_thread(self, number: int, thread: int, text: str) -> None:
        try:
            self.review_reply = self.gh.reply_in_review_thread(
                self.repo, number, thread, text, reply_id=self.review_reply
            )
        except Exception as exc:
            self._report_post_failure("review thread reply", exc)

    def buttons(self) -> list[dict[str, str]]:
        """The buttons of the attempt's completed check run (:func:`jobs.render_checks.attempt_buttons`)."""
        return render_checks.attempt_buttons(self.attempt)

    def also_failing(self) -> str:
        """ "Also failing the same way: run N, …" for a CI attempt that other runs joined
        (:mod:`jobs.failures`); ``""`` when none did (or the store cannot tell)."""
        if self.attempt.trigger != "ci":
            return ""
        try:
            runs = self.deps.store.joined_runs(self.attempt.id)
        except Exception as exc:  # a missing line must not cost the message
            log.warning("attempt.joined_runs_unreadable", error=f"{type(exc).__name__}: {exc}"[:300])
            return ""
        if not runs:
            return ""
        shown = ", ".join(f"run {r.run_id}" for r in runs[:MAX_JOINED_LISTED])
        more = len(runs) - MAX_JOINED_LISTED
        tail = f" and {more} more" if more > 0 else ""
        return f"Also failing the same way on this commit (one attempt for all): {shown}{tail}."

    def _report_post_failure(self, what: str, exc: Exception) -> None:
        log.error("attempt.post_failed", what=what, error=f"{type(exc).__name__}: {exc}"[:300])
        self.event("error", f"could not update the {what}: {type(exc).__name__}: {exc}")

    def finish(
        self,
        status: str,
        reason: str,
        *,
        title: str,
        body: str,
        conclusion: str | None,
        event: str | None = None,
        event_data: Mapping[str, Any] | None = None,
        comment: bool = True,
        check: Mapping[str, str] | None = None,
        comment_body: str | None = None,
        annotations: Sequence[Mapping[str, Any]] = (),
        actions: Sequence[Mapping[str, str]] | None = None,
        **fields: Any,
    ) -> str:
        """End the attempt with ``status``, record ``event`` and tell the user; returns ``status``."""
        self.update(status=status, reason=one_line(reason), finished_at=self.deps.clock(), **fields)
        if event is not None:
            self.event(event, reason, **(event_data or {}))
        if title or body or check is not None or comment_body is not None:
            self.tell(
                title,
                body,
                conclusion=conclusion,
                comment=comment,
                check=check,
                comment_body=comment_body,
                annotations=annotations,
                actions=actions,
            )
        set_outcome(status)
        log.info("attempt.finish", status=status, reason=one_line(reason, 200))
        return status

    def refuse(self, reason: str, body: str) -> str:
        """``refused`` with a ``refusal`` event."""
        return self.finish(
            "refused", reason, title="ARCS did not run", body=body, conclusion="neutral", event="refusal"
        )

    def check_permission(self, user: str, *, reply: bool = True) -> str | None:
        """Refuse (with a ``refusal`` event) unless ``user`` may write to the repository.

        Both ways of asking ARCS for work go through it: an issue label (``reply``: a polite
        comment; labelling needs triage access already) and a ``/arcs`` command (``reply=False``:
        anyone can comment, so a refusal posts nothing on GitHub, or anyone could make the bot
        talk; it is recorded for the dashboard).
        """
        # A bot's permission is its App's, granted for other work: it never asks for a repair.
        if is_bot_account(user):
            permission = "a bot's"
        else:
            permission = self.gh.get_permission(self.repo, user) if user else "none"
        if permission in WRITE_PERMISSIONS:
            return None
        reason = f"@{user or 'unknown'} has {permission} permission; write is needed"
        if not reply:
            return self.finish(
                "refused",
                reason,
                title="",
                body="",
                conclusion=None,
                event="refusal",
                event_data={"policy": "permission", "silent": True},
                comment=False,
            )
        return self.refuse(
            reason,
            f"Thanks for asking, @{user or 'there'}! ARCS only takes requests from people with write access "
            "to this repository, so it will not act on this one. A maintainer can ask instead.",
        )

    def fail(self, exc: BaseException) -> None:
        """Status ``error``, an ``error`` event and a message that names the kind of failure."""
        what = f"{type(exc).__name__}: {exc}"
        log.error("attempt.error", error=one_line(what, 300), exc_info=isinstance(exc, Exception))
        self.release_reservation()
        self.update(status="error", reason=one_line(what), finished_at=self.deps.clock())
        self.event("error", what)
        # The user sees the kind of failure, not its text (it may name internal hosts or paths).
        self.tell(
            "ARCS ran into an error",
            f"Attempt #{self.attempt.id} stopped with an internal error ({type(exc).__name__}). "
            "Nothing was changed in the repository. The maintainers of this ARCS installation can "
            "find the details under this attempt; commenting `/arcs retry` starts a new attempt.",
            conclusion="neutral",
        )
        set_outcome("error")

    def release_reservation(self) -> None:
        """Drop the attempt's USD reservation after an error. When the repair service had been
        called its spend is unknown: the reservation is charged (the safe bound for the monthly
        budget); before that nothing was spent."""
        try:
            attempt = self.deps.store.get_attempt(self.attempt.id)
            held = attempt.reserved_usd if attempt is not None else None
            if held is not None:
                self.deps.store.release_usd(self.attempt.id, cost_usd=held if self.repairing else None)
        except Exception as exc:  # the original error matters more; the reservation expires anyway
            log.error("attempt.release_failed", error=f"{type(exc).__name__}: {exc}"[:300])

    def guard(self) -> Guard:
        """Turn any exception into status ``error`` and a message; interrupts are re-raised."""
        return Guard(self)


class Guard:
    """``with run.guard():`` -- an exception becomes status ``error`` (and is swallowed);
    an interrupt (time limit, shutdown) is recorded the same way and re-raised."""

    def __init__(self, run: AttemptRun) -> None:
        self.run = run

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc is None:
            return False
        self.run.fail(exc)
        return isinstance(exc, Exception)


# --- claiming ------------------------------------------------------------------------------------


def open_run(
    deps: Deps, attempt: AttemptView, job: Envelope, *, gh: GitHubGateway | None = None
) -> AttemptRun | None:
    """The run of a claimed attempt; ``None`` (status ``error``, an event) when GitHub is unusable.

    ``gh``: the installation's gateway when the job opened one already (CI triage)."""
    if gh is not None:
        return AttemptRun(deps, gh, attempt, job)
    try:
        gh = deps.github(attempt.installation_id)
    except Exception as exc:
        # Without a gateway nobody can be told on GitHub: the store and the log must say it.
        what = f"no GitHub access for installation {attempt.installation_id}: {type(exc).__name__}: {exc}"
        log.error("attempt.error", error=one_line(what, 300))
        deps.store.update_attempt(attempt.id, status="error", reason=one_line(what), finished_at=deps.clock())
        deps.store.record_event(
            "error",
            one_line(what),
            attempt_id=attempt.id,
            delivery_id=attempt.delivery_id,
            installation_id=attempt.installation_id,
            repo=attempt.repo,
        )
        set_outcome("error")
        return None
    return AttemptRun(deps, gh, attempt, job)


def run_attempt(
    deps: Deps,
    job: Envelope,
    key: str,
    message_id: str | None,
    work: Callable[[AttemptRun], str],
    *,
    gh: GitHubGateway | None = None,
    on_duplicate: Callable[[AttemptView], str] | None = None,
    **fields: Any,
) -> str:
    """The preamble every repair job shares: claim the attempt for ``key`` (``fields`` as in
    :func:`claim`), open its run, start it and return what ``work`` returns.

    A duplicate returns ``"duplicate"`` without a side effect, or what ``on_duplicate`` makes of
    the attempt that holds the key (a CI run joining the attempt of its failure); an
    installation without GitHub access ``"error"`` (recorded by :func:`open_run`). Inside, an
    exception becomes status ``error`` and the attempt's status is returned; an interrupt is
    recorded the same way and re-raised (:class:`Guard`). The gateway (``gh``, when the job
    opened it already) is closed afterwards either way.
    """
    try:
        attempt, go = claim(deps, job, key, message_id, **fields)
    except BaseException:
        if gh is not None:
            with closing(gh):
                pass
        raise
    if not go:
        if gh is not None:
            with closing(gh):
                pass
        return on_duplicate(attempt) if on_duplicate is not None else "duplicate"
    run = open_run(deps, attempt, job, gh=gh)
    if run is None:
        return "error"
    try:
        with closing(run.gh), run.guard():
            run.start()
            return work(run)
        return str(run.attempt.status)
    finally:  # the repository's dashboard issue shows how it ended (when .arcs.yml wants one)
        if run.dashboard:
            schedule_dashboard(
                deps.enqueue,
                deps.enqueue_later,
                deps.clock(),
                job.context,
                repo=attempt.repo,
                installation_id=attempt.installation_id,
            )


def ci_title(message: RepairCiFailure) -> str | None:
    """The dashboard's one-line title of a CI attempt ("CI failed on main"), if the message says."""
    what = message.workflow_name or message.source
    branch = message.head_branch
    if not what or not branch:
        return None
    return one_line(f"{what} failed on {branch}", 300)


def claim(
    deps: Deps, job: Envelope, key: str, message_id: str | None, **fields: Any
) -> tuple[AttemptView, bool]:
    """Claim the attempt for ``key``: ``(attempt, go)``; ``go`` is False for a duplicate."""
    typed = job.typed()
    message = typed.message
    if message.repo is None:
        raise MessageInvalid(f"{job.actor}: repo is missing")
    fields.setdefault("installation_id", message.installation_id)
    fields.setdefault("delivery_id", message.delivery_id or job.context.get("delivery_id"))
    if (
        "title" not in fields
        and isinstance(message, RepairCiFailure)
        and (title := ci_title(message)) is not None
    ):
        fields["title"] = title
    attempt, created = deps.store.claim_attempt(key, repo=message.repo, message_id=message_id, **fields)
    bind_contextvars(attempt_id=str(attempt.id))
    if created:
        return attempt, True
    resume = typed.resume
    # The delayed message of an attempt that waited for quiet hours to end: exactly one
    # delivery of it takes the attempt over (a stopped attempt is no longer queued).
    if (
        resume is not None
        and resume.attempt_id == attempt.id
        and attempt.status == "queued"
        and deps.store.take_deferred(attempt.id, message_id)
    ):
        log.info("attempt.resume_deferred", until=resume.until.isoformat())
        refreshed = deps.store.get_attempt(attempt.id)
        return (refreshed or attempt), True
    same_message = message_id is not None and attempt.message_id == message_id
    if same_message and attempt.status in ("queued", "running"):
        # Our own message again (a retry, or a redelivery after a crash): resume.
        log.info("attempt.resume", status=attempt.status)
        return attempt, True
    if same_message and attempt.status == "fixed" and attempt.pr_number is None:
        # The fix is recorded but publishing was never queued (the broker failed): queue it.
        enqueue_publish(deps, job, attempt)
    log.info("attempt.duplicate", key=key, status=attempt.status)
    set_outcome("duplicate")
    return attempt, False


def enqueue_publish(deps: Deps, job: Envelope, attempt: AttemptView, *, dashboard: bool = False) -> None:
    """Queue ``publish_result`` for a recorded fix (its own idempotency key); ``dashboard``: the
    repository's dashboard issue is refreshed once it is published."""
    message = PublishResult(
        attempt_id=attempt.id,
        repo=attempt.repo,
        installation_id=attempt.installation_id,
        delivery_id=attempt.delivery_id,
        dashboard=dashboard,
    )
    deps.enqueue(
        Envelope.of(
            message,
            context={**job.context, "attempt_id": str(attempt.id)},
            idempotency_key=f"publish:{attempt.idempotency_key}",
        )
    )
