"""The domain functions behind the actors: one per job, no dramatiq in sight.

Each repair job (``repair_ci_failure``, ``repair_issue``, ``handle_command``) first **claims its
attempt** by idempotency key (a unique constraint in the store): a duplicate message — GitHub
redelivering the webhook, the broker redelivering the message — finds the attempt taken, logs
``attempt.duplicate`` and returns without a single side effect. The message that claimed the
attempt (its id is stored) may run again after a crash or a retry and resumes it.

Then the attempt moves ``queued -> running -> fixed | no_fix | refused | skipped | error`` and
every step is visible: a check run on the commit (CI), a status comment on the issue or pull
request, an event in the store for refusals and errors. An exception never disappears: it
becomes status ``error``, an ``error`` event and a message to the user (who sees the exception
type, not its text).

``publish_result`` turns a fixed attempt into a branch and a pull request, once: the branch name
is a function of what is repaired, the gateway updates an open pull request for the branch
instead of opening a second one, and :meth:`bot.store.store.Store.begin_publish` lets only one
worker publish at a time. It raises on failure so the queue retries it.

Job arguments are those of the web side (documented in :mod:`bot.handlers`). Repository policy
comes from ``.arcs.yml`` (:class:`bot.github.repo_config.ArcsConfig`; at the commit being repaired
for CI, the default branch otherwise) and is enforced **before anything is cloned or repaired**:

* a malformed file: no repair; the message names the key (check run for CI, status comment for
  issues and commands) and a ``refusal`` event is recorded;
* ``triggers.ci/issues/comments`` off: the job is ``skipped`` with a ``notice`` event; only a
  comment-triggered job gets a reply (an issue label or a red build never makes ARCS talk);
* ``branches`` (globs of the branches whose CI failures are repaired) and ``label`` (the issue
  label that asks for a fix);
* a CI failure that code changes do not fix: a ``notice`` event, and a check run (plus status
  comment on the pull request) only when ``notify_unrepairable`` is true;
* ``max_prs_per_day`` (ARCS pull requests opened in the repository in the last 24 hours) and
  ``max_open_prs`` (ARCS pull requests still open), both counted from the store: ``refused``, a
  ``refusal`` event and a message naming the limit and the numbers. A repair that would update an
  open ARCS pull request (a retry on, or ``/arcs revise`` of, an ARCS branch) opens nothing new and
  is not limited.

The owner's **policy** (org admins edit it on the dashboard; :mod:`jobs.policy`) comes next, right
before the repair would start:

* paused (owner or repository): ``refused``, a ``refusal`` event, the message on the check run
  (CI) or the status comment (issues, commands);
* a monthly USD budget used up: the same, with the numbers;
* quiet hours: the attempt goes back to ``queued`` and the job is re-sent with a delay until the
  window ends (a ``notice`` event; the check run/status comment says when it will start). A window
  that ends after the actor's ``max_age`` (counted from when the attempt was created) is refused
  instead: the request would be stale;
* ``max_prs_per_day`` of the policy and of ``.arcs.yml``: the stricter wins.

Admission is one store transaction under a per-owner lock
(:meth:`bot.store.store.Store.admit_repair`): the pull-request limits count the pull requests
admitted repairs may still open, and USD is reserved (at most what every monthly cap still
allows). The attempt's USD budget is lowered to the grant, so the loop's guard keeps the spend
within the cap; when the repair ends its cost replaces the reservation (on an error the
reservation is charged: the real spend is unknown). While the repair runs, a store-backed
interrupt (:mod:`jobs.policy_interrupt`) stops it at its next round when the owner is paused or
``/arcs stop`` asked it to stop.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from structlog.contextvars import bind_contextvars

from bot.errors import ConfigError
from bot.github import payloads
from bot.github.git import branch_name as signature_branch
from bot.github.git import check_branch
from bot.github.repo_config import ArcsConfig, parse_arcs_config
from bot.settings import Settings
from bot.store.models import Attempt
from bot.store.store import PrLimits, Store, utcnow
from jobs.logctx import set_outcome
from jobs.messages import ActorName, JobRequest
from jobs.policy import (
    Defer,
    EffectivePolicy,
    Refuse,
    binding_cap,
    budget_stop_reason,
    budget_used_reason,
    decide,
    merge,
    monthly_window,
)
from jobs.policy_interrupt import StoreInterrupt
from jobs.ports import (
    WRITE_PERMISSIONS,
    GitHubGateway,
    IndexService,
    RepairOutcome,
    RepairRequest,
    RepairService,
)
from runners.config import RepoConfig

log = structlog.get_logger("arcs.pipeline")

CHECK_NAME = "ARCS"
BRANCH_PREFIX = "arcs/"
DEFAULT_LABEL = "arcs"
MAX_BRANCH_RETRIES = 2
"""How many times ARCS tries again when CI fails on its own ``arcs/*`` branch."""
PUBLISH_STALE_AFTER = dt.timedelta(minutes=15)
"""A ``publishing`` claim older than this belongs to a dead worker and can be taken over."""
MAX_REASON_CHARS = 500
PR_WINDOW = dt.timedelta(hours=24)
"""``max_prs_per_day`` counts the pull requests ARCS opened in this trailing window."""
DEFER_MARGIN = dt.timedelta(minutes=10)
"""A deferred job must start at least this long before its actor's ``max_age`` runs out."""

WorkdirFactory = Callable[[], contextlib.AbstractContextManager[Path]]


@dataclass
class Deps:
    """Everything the domain functions use, built by the worker (or a test) from settings."""

    settings: Settings
    store: Store
    github: Callable[[int | None], GitHubGateway]
    """The gateway of an installation (``installation_id`` from the job)."""
    repair: RepairService
    enqueue: Callable[[JobRequest], None]
    """Sends follow-up jobs (``publish_result``)."""
    index: IndexService | None = None
    workdir: WorkdirFactory | None = None
    """An empty scratch folder per job (default: a temporary folder under ``ARCS_HOME/work``)."""
    clock: Callable[[], dt.datetime] = field(default=utcnow)
    enqueue_later: Callable[[JobRequest, dt.timedelta], None] | None = None
    """Sends a job that must not start before the delay (quiet hours; the worker wires
    :meth:`jobs.broker.BrokerEnqueuer.enqueue_later`). None: deferring is impossible and the
    repair is refused."""

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


MAX_LOG_LOCATIONS = 20
"""``file:line`` references taken from a CI log as retrieval hints (the first ones matter most)."""


def _one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _int(value: Any) -> int | None:
    if value is None or value == "":
        return None
    return int(value)


def _parse_time(value: Any) -> dt.datetime | None:
    if not value:
        return None
    when = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def branch_name(*parts: str) -> str:
    """The ``arcs/…`` branch of a failure signature (``parts``, e.g. ``("fix", head_branch)``).

    One branch (so one pull request) per signature: a readable ``arcs/fix/main`` when the
    cleaned parts make a branch ARCS may push to, else :func:`bot.github.git.branch_name` of the
    signature (``arcs/`` + a stable hash).
    """
    cleaned = [re.sub(r"[^A-Za-z0-9._/-]+", "-", p).strip("-/.") for p in parts]
    name = BRANCH_PREFIX + "/".join(p for p in cleaned if p)
    name = re.sub(r"/{2,}", "/", name).replace("..", ".")
    name = name[:200].rstrip("/.")
    try:
        return check_branch(name)
    except Exception:  # not pushable as written: the hashed signature always is
        return signature_branch("/".join(parts))


@contextlib.contextmanager
def _closing(gh: GitHubGateway) -> Iterator[GitHubGateway]:
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


def _branch_watched(config: ArcsConfig, branch: str | None) -> bool:
    return branch is None or config.watches(branch)


def _as_arcs_config(config: RepoConfig) -> ArcsConfig:
    """The typed config from the runner part plus the App keys left in ``extra``.

    For gateways without ``load_arcs_config`` (the fakes): the same parser validates it, so a
    malformed value raises :class:`bot.github.repo_config.ArcsConfigError` naming the key.
    """
    import yaml

    data: dict[str, Any] = dict(config.extra)
    for key in ("test", "setup", "timeout_s", "memory_mb"):
        value = getattr(config, key)
        if value is not None:
            data[key] = value
    path = config.path.name if config.path is not None else ".arcs.yml"
    parsed = parse_arcs_config(yaml.safe_dump(data), path=path)
    return parsed if config.path is not None or data else ArcsConfig()


def _load_config(gh: GitHubGateway, repo: str, ref: str | None) -> ArcsConfig:
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
    return _as_arcs_config(gh.load_repo_config(repo, sha))


@dataclass(frozen=True, slots=True)
class PrCounts:
    """ARCS pull requests of one repository, from the store."""

    opened_today: int
    """Opened in the last :data:`PR_WINDOW`."""
    open_now: int
    """Still open."""
    pending: int = 0
    """Admitted repairs that may still open one (running, or fixed and not published yet)."""


def count_arcs_prs(store: Store, repo: str, now: dt.datetime) -> PrCounts:
    """How many pull requests ARCS opened in ``repo`` in the last 24 hours, and how many are open
    (COUNT queries over ``pull_requests``: one row per pull request, however many attempts
    updated it)."""
    tally = store.count_prs(repo, now - PR_WINDOW)
    return PrCounts(opened_today=tally.opened_since, open_now=tally.open_now)


def pr_limit_reached(
    config: ArcsConfig, counts: PrCounts, repo: str, *, policy: EffectivePolicy | None = None
) -> tuple[payloads.RefusalKind, str, int, int] | None:
    """``(refusal kind, message, count, limit)`` when a new pull request would break a limit.

    ``max_prs_per_day`` is the policy's merged one (the stricter of the org admins' and
    ``.arcs.yml``'s) when ``policy`` is given, else ``.arcs.yml``'s. Pull requests that admitted
    repairs may still open (``counts.pending``) count against both limits.
    """
    per_day = config.max_prs_per_day
    source = "from .arcs.yml max_prs_per_day"
    if policy is not None and policy.max_prs_per_day is not None:
        per_day = policy.max_prs_per_day
        if policy.max_prs_source == "policy":
            source = f"set by an org admin for {policy.owner}"
    more = ""
    if counts.pending:
        more = f" and {counts.pending} more {'is' if counts.pending == 1 else 'are'} on the way"
    if counts.opened_today + counts.pending >= per_day:
        n = counts.opened_today + counts.pending
        return (
            "rate_limit",
            f"ARCS has opened {counts.opened_today} pull requests in {repo} today{more} (limit {per_day} "
            f"{source}); skipping this repair",
            n,
            per_day,
        )
    if counts.open_now + counts.pending >= config.max_open_prs:
        n, limit = counts.open_now + counts.pending, config.max_open_prs
        return (
            "open_prs",
            f"ARCS has {counts.open_now} pull requests open in {repo}{more} (limit {limit} from .arcs.yml "
            "max_open_prs); skipping this repair",
            n,
            limit,
        )
    return None


def _budget_usd(command: Mapping[str, Any] | None) -> float | None:
    raw = (command or {}).get("budget_usd")
    return float(raw) if raw not in (None, "") else None


# --- the attempt being worked on -------------------------------------------------------------


class _Run:
    """One attempt in progress: state transitions, events and what the user is told."""

    def __init__(self, deps: Deps, gh: GitHubGateway, attempt: Attempt, job: JobRequest) -> None:
        self.deps = deps
        self.gh = gh
        self.attempt = attempt
        self.job = job
        self.policy: EffectivePolicy | None = None
        """The policy the repair was admitted under (set by :func:`_admit`)."""
        self.committed: dict[str, float] = {}
        """USD committed against each monthly cap when the repair was admitted."""
        self.granted_usd: float | None = None
        self.repairing = False
        """The repair service was called (its spend, if it fails, is unknown)."""

    @property
    def repo(self) -> str:
        return self.attempt.repo

    def update(self, **fields: Any) -> Attempt:
        self.attempt = self.deps.store.update_attempt(self.attempt.id, **fields)
        return self.attempt

    def event(self, kind: str, message: str, **data: Any) -> None:
        self.deps.store.record_event(
            kind,
            _one_line(message),
            attempt_id=self.attempt.id,
            delivery_id=self.attempt.delivery_id,
            installation_id=self.attempt.installation_id,
            repo=self.repo,
            data=data or None,
        )

    def start(self) -> None:
        self.update(status="running", started_at=self.deps.clock())
        log.info("attempt.start", trigger=self.attempt.trigger)

    def open_check_run(self, head_sha: str) -> None:
        if self.attempt.check_run_id is not None:
            return
        check_id = self.gh.create_check_run(
            self.repo,
            head_sha,
            CHECK_NAME,
            "ARCS is looking at this failure",
            f"Attempt #{self.attempt.id}: reproducing the failure and searching for a fix.",
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
    ) -> None:
        """Say it on the check run (CI) and in the status comment (issue/PR), whichever exist.

        ``check`` (a :func:`bot.github.payloads.check_run_output`) and ``comment_body`` replace
        the plain ``title``/``body`` where given. The comment carries the attempt's hidden marker,
        so a redelivered job edits the same comment. A failure to post is recorded as an event,
        not raised: the attempt's outcome stands.
        """
        if self.attempt.check_run_id is not None:
            output = dict(check) if check is not None else {"title": title, "summary": body}
            try:
                self.gh.update_check_run(
                    self.repo,
                    self.attempt.check_run_id,
                    conclusion=conclusion,
                    title=output["title"],
                    summary=output["summary"],
                    details=output.get("text"),
                )
            except Exception as exc:
                self._report_post_failure("check run", exc)
        if comment and self.attempt.issue_number is not None:
            text = comment_body if comment_body is not None else f"**{title}**\n\n{body}"
            if payloads.find_status_marker(text) is None:
                text += "\n\n" + payloads.status_marker(self.attempt.id)
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
        **fields: Any,
    ) -> str:
        self.update(status=status, reason=_one_line(reason), finished_at=self.deps.clock(), **fields)
        if event is not None:
            self.event(event, reason, **(event_data or {}))
        if title or body or check is not None or comment_body is not None:
            self.tell(
                title, body, conclusion=conclusion, comment=comment, check=check, comment_body=comment_body
            )
        set_outcome(status)
        log.info("attempt.finish", status=status, reason=_one_line(reason, 200))
        return status

    def refuse(self, reason: str, body: str) -> str:
        return self.finish(
            "refused", reason, title="ARCS did not run", body=body, conclusion="neutral", event="refusal"
        )

    def fail(self, exc: BaseException) -> None:
        what = f"{type(exc).__name__}: {exc}"
        log.error("attempt.error", error=_one_line(what, 300), exc_info=isinstance(exc, Exception))
        self.release_reservation()
        self.update(status="error", reason=_one_line(what), finished_at=self.deps.clock())
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

    def guard(self) -> _Guard:
        """Turn any exception into status ``error`` and a message; interrupts are re-raised."""
        return _Guard(self)


class _Guard:
    """``with run.guard():`` -- an exception becomes status ``error`` (and is swallowed);
    an interrupt (time limit, shutdown) is recorded the same way and re-raised."""

    def __init__(self, run: _Run) -> None:
        self.run = run

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc is None:
            return False
        self.run.fail(exc)
        return isinstance(exc, Exception)


# --- the repository's policy (.arcs.yml) ------------------------------------------------------


def _read_config(run: _Run, ref: str | None, *, head_sha: str | None = None) -> ArcsConfig | str:
    """The repository's config, or the attempt's final status when the file is malformed.

    A malformed file is never replaced by defaults the maintainer did not choose: no repair, a
    message naming the key (on the check run of ``head_sha`` for CI, else the status comment)
    and a ``refusal`` event.
    """
    try:
        return _load_config(run.gh, run.repo, ref)
    except ConfigError as exc:
        message = getattr(exc, "message", str(exc))
        key = getattr(exc, "key", None)
        text = payloads.config_error_comment(exc)
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


def _trigger_off(run: _Run, config: ArcsConfig, trigger: str, *, reply: bool) -> str | None:
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
        comment_body=payloads.refusal_comment("disabled", reason) if reply else None,
    )


def _updates_open_pr(store: Store, repo: str, branch: str) -> bool:
    """True when ARCS already has an open pull request for ``branch`` (a repair updates it)."""
    return any(a.pr_state == "open" for a in store.attempts(repo=repo, branch=branch, limit=50))


def _attempt_usd(config: ArcsConfig, fields: Mapping[str, Any]) -> float:
    """The attempt's own USD budget: the command's ``budget_usd``, else ``.arcs.yml``'s, else ARCS'."""
    from jobs.repair.budget import Budget

    asked = fields.get("budget_usd")
    return float(asked) if asked is not None else config.budget.apply(Budget()).usd


def _admit(
    run: _Run,
    config: ArcsConfig,
    branch: str,
    fields: dict[str, Any],
    *,
    head_sha: str | None = None,
    comment: bool = True,
) -> str | None:
    """The owner's policy and the pull-request limits, right before the repair starts.

    Returns the attempt's final status (refused, or ``deferred`` for quiet hours) or None when
    the repair may go on; then ``fields["usd_cap"]`` holds the USD the monthly caps granted
    (reserved in the store) when a cap applies. ``head_sha``: say it on a check run (CI);
    ``comment``: say it in the status comment.
    """
    deps = run.deps
    store = deps.store
    now = deps.clock()
    owner = run.attempt.owner or run.repo.split("/", 1)[0]
    owner_row, repo_row = store.policy_rows(owner, run.repo)
    policy = merge(owner, run.repo, owner_row, repo_row, config_max_prs_per_day=config.max_prs_per_day)
    since, _ = monthly_window(now, policy.tz)
    committed = {cap.name: store.usd_committed(owner, since, repo=cap.repo) for cap in policy.caps}
    decision = decide(policy, now, committed)
    if isinstance(decision, Refuse):
        return _policy_refusal(run, decision, head_sha=head_sha, comment=comment)
    if isinstance(decision, Defer):
        return _defer(run, decision, policy, head_sha=head_sha, comment=comment)
    limits = None
    if not _updates_open_pr(store, run.repo, branch):
        limits = PrLimits(since=now - PR_WINDOW, per_day=policy.max_prs_per_day, open=config.max_open_prs)
    admission = store.admit_repair(
        run.attempt.id,
        owner,
        run.repo,
        want_usd=_attempt_usd(config, fields),
        caps={cap.repo: cap.limit_usd for cap in policy.caps},
        since=since,
        pr_limits=limits,
    )
    if admission.refused is not None:
        prs = admission.prs
        counts = PrCounts(prs.opened_since, prs.open_now, prs.pending) if prs else PrCounts(0, 0)
        reached = pr_limit_reached(config, counts, run.repo, policy=policy) or (
            "rate_limit" if admission.refused == "max_prs_per_day" else "open_prs",
            f"ARCS has reached {admission.refused} in {run.repo}; skipping this repair",
            counts.opened_today + counts.pending,
            policy.max_prs_per_day or 0,
        )
        return _pr_refusal(run, reached, policy, head_sha=head_sha, comment=comment)
    if policy.caps and admission.granted_usd <= 0:
        # Another repair took what was left between the decision and the reservation.
        committed = {cap.name: store.usd_committed(owner, since, repo=cap.repo) for cap in policy.caps}
        bound = binding_cap(policy.caps, committed)
        assert bound is not None
        cap, used = bound
        refusal = Refuse(
            budget_used_reason(cap, used),
            "monthly_usd",
            {"scope": cap.scope, "limit": cap.limit_usd, "committed": round(used, 6)},
        )
        return _policy_refusal(run, refusal, head_sha=head_sha, comment=comment)
    run.policy, run.committed, run.granted_usd = policy, committed, admission.granted_usd
    if policy.caps:
        fields["usd_cap"] = admission.granted_usd
    return None


_POLICY_HINTS: Mapping[str, str] = {
    "paused": "An org admin can resume ARCS on the ARCS dashboard.",
    "monthly_usd": "The budget starts over next month; an org admin can raise it on the ARCS dashboard.",
    "quiet_hours": "Ask again with `/arcs fix` once the quiet hours are over.",
}
_POLICY_TITLES: Mapping[str, str] = {
    "paused": "Skipped: ARCS is paused",
    "monthly_usd": "Skipped: monthly budget used",
    "quiet_hours": "Skipped: quiet hours",
}


def _policy_refusal(run: _Run, refusal: Refuse, *, head_sha: str | None, comment: bool) -> str:
    """``refused`` for the owner's policy: a ``refusal`` event, the check run (CI) and/or the
    status comment say why and what can be done."""
    text = f"{refusal.reason}. {_POLICY_HINTS.get(refusal.policy, '')}".strip()
    if head_sha is not None:
        run.open_check_run(head_sha)
    return run.finish(
        "refused",
        refusal.reason,
        title="ARCS did not run",
        body=text,
        conclusion="skipped",
        event="refusal",
        event_data={"policy": refusal.policy, **refusal.data},
        comment=comment,
        check={"title": _POLICY_TITLES.get(refusal.policy, "Skipped"), "summary": text},
        comment_body=text,
    )


def _pr_refusal(
    run: _Run,
    reached: tuple[payloads.RefusalKind, str, int, int],
    policy: EffectivePolicy,
    *,
    head_sha: str | None,
    comment: bool,
) -> str:
    kind, message, count, limit = reached
    name = "max_prs_per_day" if kind == "rate_limit" else "max_open_prs"
    if kind == "rate_limit" and policy.max_prs_source == "policy":
        text = (
            f"ARCS has reached the number of pull requests a day an org admin allows for "
            f"{policy.owner}.\n\n{message}."
        )
    else:
        text = payloads.refusal_comment(kind, message + ".")
    if head_sha is not None:
        run.open_check_run(head_sha)
    return run.finish(
        "refused",
        message,
        title="ARCS did not run",
        body=text,
        conclusion="skipped",
        event="refusal",
        event_data={"policy": name, "count": count, "limit": limit},
        comment=comment,
        check={"title": f"Skipped: {name} reached", "summary": text},
        comment_body=text,
    )


def _max_age(actor: ActorName) -> dt.timedelta:
    """The actor's ``max_age``: how old a message may be when it starts."""
    from jobs.actors import ACTOR_OPTIONS

    return dt.timedelta(milliseconds=ACTOR_OPTIONS[actor].max_age)


def _defer(
    run: _Run, decision: Defer, policy: EffectivePolicy, *, head_sha: str | None, comment: bool
) -> str:
    """Quiet hours: back to ``queued``, the same job again once they end (a ``notice`` event and
    a word on the check run/status comment). Refused when it would start too late to run."""
    deps = run.deps
    now = deps.clock()
    until = decision.until
    at = f"{until:%H:%M} {policy.tz_name}"
    max_age = _max_age(run.job.actor)
    if until - run.attempt.created_at + DEFER_MARGIN > max_age:
        hours = max_age.total_seconds() / 3600
        refusal = Refuse(
            f"{decision.reason}; they end at {at}, after this request expires "
            f"({hours:g} h after it was made)",
            "quiet_hours",
            {"until": until.isoformat()},
        )
        return _policy_refusal(run, refusal, head_sha=head_sha, comment=comment)
    later = deps.enqueue_later
    if later is None:
        refusal = Refuse(
            f"{decision.reason}; this ARCS deployment cannot postpone a repair until {at}",
            "quiet_hours",
            {"until": until.isoformat()},
        )
        return _policy_refusal(run, refusal, head_sha=head_sha, comment=comment)
    run.attempt = deps.store.defer_attempt(run.attempt.id)
    run.event(
        "notice", f"deferred until {at}: {decision.reason}", policy="quiet_hours", until=until.isoformat()
    )
    text = f"⏸️ ARCS will start this repair at {at} ({decision.reason})."
    if head_sha is not None:
        run.open_check_run(head_sha)
    run.tell(
        f"Waiting for quiet hours to end ({at})",
        text,
        conclusion=None,
        comment=comment,
        check={"title": f"Waiting for quiet hours to end ({at})", "summary": text},
        comment_body=text,
    )
    job = run.job
    args = {**job.args, "deferred_attempt": run.attempt.id, "deferred_until": until.isoformat()}
    later(
        JobRequest(job.actor, args, context=dict(job.context), idempotency_key=run.attempt.idempotency_key),
        max(dt.timedelta(0), until - now),
    )
    set_outcome("deferred", until=until.isoformat())
    log.info("attempt.deferred", until=until.isoformat(), reason=decision.reason)
    return "deferred"


def _open_run(deps: Deps, attempt: Attempt, job: JobRequest) -> _Run | None:
    """The run of a claimed attempt; ``None`` (status ``error``, an event) when GitHub is unusable."""
    try:
        gh = deps.github(attempt.installation_id)
    except Exception as exc:
        # Without a gateway nobody can be told on GitHub: the store and the log must say it.
        what = f"no GitHub access for installation {attempt.installation_id}: {type(exc).__name__}: {exc}"
        log.error("attempt.error", error=_one_line(what, 300))
        deps.store.update_attempt(
            attempt.id, status="error", reason=_one_line(what), finished_at=deps.clock()
        )
        deps.store.record_event(
            "error",
            _one_line(what),
            attempt_id=attempt.id,
            delivery_id=attempt.delivery_id,
            installation_id=attempt.installation_id,
            repo=attempt.repo,
        )
        set_outcome("error")
        return None
    return _Run(deps, gh, attempt, job)


def ci_title(args: Mapping[str, Any]) -> str | None:
    """The dashboard's one-line title of a CI attempt ("CI failed on main"), if the job says."""
    what = args.get("workflow_name") or args.get("source")
    branch = args.get("head_branch")
    if not what or not branch:
        return None
    return _one_line(f"{what} failed on {branch}", 300)


def _claim(
    deps: Deps, job: JobRequest, key: str, message_id: str | None, **fields: Any
) -> tuple[Attempt, bool]:
    """Claim the attempt for ``key``: ``(attempt, go)``; ``go`` is False for a duplicate."""
    args = job.args
    fields.setdefault("installation_id", _int(args.get("installation_id")))
    fields.setdefault("delivery_id", args.get("delivery_id") or job.context.get("delivery_id"))
    if "title" not in fields and (title := ci_title(args)) is not None:
        fields["title"] = title
    attempt, created = deps.store.claim_attempt(key, repo=str(args["repo"]), message_id=message_id, **fields)
    bind_contextvars(attempt_id=str(attempt.id))
    if created:
        return attempt, True
    deferred = _int(args.get("deferred_attempt"))
    # The delayed message of an attempt that waited for quiet hours to end: exactly one
    # delivery of it takes the attempt over (a stopped attempt is no longer queued).
    if (
        deferred == attempt.id
        and attempt.status == "queued"
        and deps.store.take_deferred(attempt.id, message_id)
    ):
        log.info("attempt.resume_deferred", until=args.get("deferred_until"))
        refreshed = deps.store.get_attempt(attempt.id)
        return (refreshed or attempt), True
    same_message = message_id is not None and attempt.message_id == message_id
    if same_message and attempt.status in ("queued", "running"):
        # Our own message again (a retry, or a redelivery after a crash): resume.
        log.info("attempt.resume", status=attempt.status)
        return attempt, True
    if same_message and attempt.status == "fixed" and attempt.pr_number is None:
        # The fix is recorded but publishing was never queued (the broker failed): queue it.
        _enqueue_publish(deps, job, attempt)
    log.info("attempt.duplicate", key=key, status=attempt.status)
    set_outcome("duplicate")
    return attempt, False


def _enqueue_publish(deps: Deps, job: JobRequest, attempt: Attempt) -> None:
    context = {**job.context, "attempt_id": str(attempt.id)}
    deps.enqueue(
        JobRequest(
            actor="publish_result",
            args={
                "attempt_id": attempt.id,
                "repo": attempt.repo,
                "installation_id": attempt.installation_id,
                "delivery_id": attempt.delivery_id,
            },
            context=context,
            idempotency_key=f"publish:{attempt.idempotency_key}",
        )
    )


# --- the shared repair step ------------------------------------------------------------------


def _repair(run: _Run, request_fields: Mapping[str, Any], *, kind: str, head_sha: str) -> str:
    """Check out ``head_sha``, run the repair service, record the outcome, queue publishing."""
    deps = run.deps
    interrupt = StoreInterrupt(deps.store, run.attempt.id, run.attempt.owner, run.repo)
    with deps.scratch() as scratch:
        workdir = scratch / "repo"
        workdir.mkdir()
        run.gh.clone(run.repo, head_sha, workdir)
        request = RepairRequest(
            kind="issue" if kind == "issue" else "ci",
            repo=run.repo,
            workdir=workdir,
            head_sha=head_sha,
            attempt_id=run.attempt.id,
            trace_dir=deps.settings.traces_dir,
            interrupt=interrupt,
            **request_fields,
        )
        run.repairing = True  # from here on an error is charged its reservation (see _Run.fail)
        outcome = deps.repair.run(request)
    return _record_outcome(run, outcome)


def _policy_budget_stop(run: _Run, outcome: RepairOutcome) -> str | None:
    """``stopped at octo's monthly budget: …`` when the owner's (or repository's) monthly cap,
    not the attempt's own budget, was the limit the repair ran into; else None."""
    if outcome.verdict != "budget_exhausted" or outcome.stopped_by != "usd" or not outcome.usd_capped:
        return None
    if run.policy is None or run.granted_usd is None:
        return None
    bound = binding_cap(run.policy.caps, run.committed)
    if bound is None:
        return None
    return budget_stop_reason(bound[0], run.granted_usd, outcome.cost_usd)


def _stopped(run: _Run, outcome: RepairOutcome, common: Mapping[str, Any], spend: str) -> str:
    """An interrupted repair (``/arcs stop``, a pause): ``skipped``, a ``notice``, and the
    check run/status comment say who or what stopped it."""
    reason = outcome.reason or "stopped"
    run.update(**common)
    body = f"Attempt #{run.attempt.id} stopped: {reason}. Nothing was changed in the repository ({spend})."
    return run.finish(
        "skipped",
        f"interrupted: {reason}",
        title="ARCS stopped",
        body=body,
        conclusion="cancelled",
        event="notice",
        event_data={"policy": "interrupted"},
        check={"title": _one_line(f"Stopped: {reason}", 200), "summary": body},
    )


def _environment(run: _Run, outcome: RepairOutcome, common: Mapping[str, Any]) -> str:
    """The tests could not run at all (a missing command, runner or dependency, a failed setup):
    ``environment``, with the one line that says what is missing and which ``.arcs.yml`` key fixes
    it. Nothing was repaired and no model was called."""
    hint = outcome.reason or "the tests could not run in the sandbox"
    run.update(**common)
    summary = repair_summary(run.attempt, fixed=False, reason=hint)
    body = (
        f"Attempt #{run.attempt.id}: the tests could not run in ARCS' sandbox, so nothing was repaired "
        f"(no model was called): {_one_line(hint)}."
    )
    return run.finish(
        "environment",
        f"environment: {hint}",
        title="ARCS could not run the tests",
        body=body,
        conclusion="neutral",
        check=payloads.check_run_output("completed", summary, reason=hint),
    )


def _partial(run: _Run, outcome: RepairOutcome, common: Mapping[str, Any], spend: str) -> str:
    """The targets pass but the command still fails on tests that already failed before:
    ``partial``. A pull request only when ``.arcs.yml`` says ``open_pr_on_partial: true`` (then the
    repair service applied the patch and ``outcome.files`` holds it); it says so plainly."""
    reason = outcome.reason or "partial"
    if outcome.files:
        run.update(
            status="partial",
            reason=_one_line(reason),
            patch=outcome.patch,
            files=dict(outcome.files),
            finished_at=run.deps.clock(),
            **common,
        )
        run.tell(
            "ARCS found a partial fix",
            f"Attempt #{run.attempt.id} found a partial fix ({spend}): {_one_line(reason)}. "
            "Opening a pull request, as `.arcs.yml` asks (`open_pr_on_partial`); CI will still fail.",
            conclusion=None,
            comment=False,
        )
        _enqueue_publish(run.deps, run.job, run.attempt)
        set_outcome("partial")
        log.info("attempt.finish", status="partial", verdict=outcome.verdict)
        return "partial"
    run.update(**common)
    summary = repair_summary(run.attempt, fixed=False, reason=reason)
    return run.finish(
        "partial",
        f"partial: {reason}",
        title="ARCS found a partial fix (no pull request)",
        body=f"Attempt #{run.attempt.id} found only a partial fix ({spend}): {_one_line(reason)}. "
        "No pull request was opened: the test command would still fail (set `open_pr_on_partial: true` "
        "in `.arcs.yml` to get one anyway).",
        conclusion="neutral",
        check=payloads.check_run_output("completed", summary, reason=reason),
        patch=outcome.patch or None,
    )


def _record_outcome(run: _Run, outcome: RepairOutcome) -> str:
    common: dict[str, Any] = {
        "verdict": outcome.verdict,
        "tier": outcome.tier or None,
        "rounds": outcome.rounds,
        "tokens": outcome.tokens,
        "cost_usd": round(outcome.cost_usd, 6),
        "trace_path": outcome.trace_path,
        "trace": dict(outcome.trace_summary) or None,
        "explanation": outcome.explanation or None,
        "reserved_usd": None,  # the cost replaces the reservation
    }
    spend = f"tier {outcome.tier or '?'}, {outcome.rounds} round(s), ${outcome.cost_usd:.2f}"
    if outcome.fixed and outcome.files:
        run.update(
            status="fixed",
            reason=_one_line(outcome.reason),
            patch=outcome.patch,
            files=dict(outcome.files),
            finished_at=run.deps.clock(),
            **common,
        )
        run.tell(
            "ARCS found a fix",
            f"Attempt #{run.attempt.id} found a fix ({spend}); opening a pull request.",
            conclusion=None,
            comment=False,
        )
        _enqueue_publish(run.deps, run.job, run.attempt)
        set_outcome("fixed")
        log.info("attempt.finish", status="fixed", verdict=outcome.verdict)
        return "fixed"
    if outcome.verdict == "interrupted":
        return _stopped(run, outcome, common, spend)
    if outcome.verdict == "environment":
        return _environment(run, outcome, common)
    if outcome.verdict == "partial":
        return _partial(run, outcome, common, spend)
    reason = outcome.reason or outcome.verdict
    if outcome.fixed:
        reason = f"the repair reported a fix but changed no file ({reason})"
    capped = _policy_budget_stop(run, outcome)
    if capped is not None:
        reason = f"{capped} ({reason})"
    run.update(**common)
    summary = repair_summary(run.attempt, fixed=False, reason=reason)
    return run.finish(
        "no_fix",
        f"{outcome.verdict}: {reason}",
        title="ARCS did not find a fix",
        body=f"Attempt #{run.attempt.id} ended with `{outcome.verdict}`: {_one_line(reason)} ({spend})."
        + (f"\n\n{outcome.explanation}" if outcome.explanation else ""),
        conclusion="neutral",
        check=payloads.check_run_output("completed", summary, reason=f"{outcome.verdict}: {reason}"),
    )


# --- the jobs --------------------------------------------------------------------------------


def _red_build_at(deps: Deps, job: JobRequest) -> dt.datetime:
    """When CI went red: given by the web side, else when its webhook arrived, else now."""
    given = _parse_time(job.args.get("red_build_at"))
    if given is not None:
        return given
    delivery_id = job.args.get("delivery_id") or job.context.get("delivery_id")
    delivery = deps.store.get_delivery(str(delivery_id)) if delivery_id else None
    return delivery.received_at if delivery is not None else deps.clock()


def repair_ci_failure(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """A failed CI run on a branch of the repository: classify, repair, queue publishing."""
    args = job.args
    repo = str(args["repo"])
    head_sha = str(args["head_sha"])
    head_branch = args.get("head_branch")
    prs = [int(n) for n in args.get("pull_requests") or []]
    key = job.idempotency_key or f"ci:{repo}:{head_sha}"
    attempt, go = _claim(
        deps,
        job,
        key,
        message_id,
        trigger="ci",
        head_sha=head_sha,
        head_branch=head_branch,
        run_id=_int(args.get("run_id")),
        issue_number=prs[0] if prs else None,
        red_build_at=_red_build_at(deps, job),
    )
    if not go:
        return "duplicate"
    run = _open_run(deps, attempt, job)
    if run is None:
        return "error"
    with _closing(run.gh), run.guard():
        run.start()
        config = _read_config(run, head_sha, head_sha=head_sha)
        if isinstance(config, str):
            return config
        off = _trigger_off(run, config, "ci", reply=False)
        if off is not None:
            return off
        retry_of = args.get("retry_of")
        if not retry_of and not _branch_watched(config, head_branch):
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
            previous = [a for a in earlier if a.id != attempt.id]
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
        fields: dict[str, Any] = {}
        run_id = _int(args.get("run_id"))
        if run_id is not None:
            from runners.logs import analyze_log

            report = analyze_log(run.gh.download_failed_logs(repo, run_id))
            run.update(failure_class=report.failure_class)
            if not report.repairable:
                # Said on GitHub only when the repository asked (`notify_unrepairable`); always recorded.
                notify = config.notify_unrepairable
                if notify:
                    run.open_check_run(head_sha)
                text = payloads.unrepairable_summary(report.failure_class, report.reason)
                return run.finish(
                    "skipped",
                    f"{report.failure_class} failure: {report.reason}",
                    title=f"ARCS does not repair {report.failure_class} failures" if notify else "",
                    body=text if notify else "",
                    conclusion="skipped",
                    event="notice",
                    event_data={"policy": "unrepairable", "failure_class": report.failure_class},
                    comment=notify,
                    comment_body=payloads.refusal_comment("unrepairable", text) if notify else None,
                )
            fields = {
                "failure_class": report.failure_class,
                "failure_log": "\n".join(report.error_lines) or None,
                "test_ids": tuple(report.test_ids),
                "locations": tuple((ref.path, ref.line) for ref in report.locations[:MAX_LOG_LOCATIONS]),
                "test_command": report.step.command if report.step and not report.step.uses else None,
            }
        limited = _admit(run, config, branch, fields, head_sha=head_sha, comment=False)
        if limited is not None:
            return limited
        run.open_check_run(head_sha)
        return _repair(run, fields, kind="ci", head_sha=head_sha)
    return str(run.attempt.status)


def repair_issue(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """An issue labelled for ARCS: check who asked, repair on the default branch, queue publishing."""
    args = job.args
    repo = str(args["repo"])
    number = int(args["issue_number"])
    sender = str(args.get("sender") or "")
    key = job.idempotency_key or f"issue:{repo}#{number}"
    attempt, go = _claim(
        deps, job, key, message_id, trigger="issue", issue_number=number, requested_by=sender
    )
    if not go:
        return "duplicate"
    run = _open_run(deps, attempt, job)
    if run is None:
        return "error"
    with _closing(run.gh), run.guard():
        run.start()
        # The web side enqueues every label (only .arcs.yml knows which one asks ARCS): a label
        # that is not the repository's ARCS label ends here, silently (no comment, no event),
        # before anyone's permission is checked.
        added = str(args.get("label") or DEFAULT_LABEL)
        is_default = added.casefold() == DEFAULT_LABEL.casefold()
        try:
            head = run.gh.get_branch_head(repo, None)
            loaded: ArcsConfig | None = _load_config(run.gh, repo, head.sha)
        except ConfigError:
            loaded = None  # malformed: only the default label gets the error message below
        except Exception as exc:
            if is_default:
                raise
            return _not_our_label(run, added, f"could not read .arcs.yml: {type(exc).__name__}")
        wanted = loaded.label if loaded is not None else DEFAULT_LABEL
        if added.casefold() != wanted.casefold():
            return _not_our_label(run, added, f"this repository's ARCS label is {wanted!r}")
        refused = _check_permission(run, sender)
        if refused is not None:
            return refused
        config = loaded if loaded is not None else _read_config(run, head.sha)
        if isinstance(config, str):
            return config
        off = _trigger_off(run, config, "issues", reply=False)
        if off is not None:
            return off
        issue = run.gh.get_issue(repo, number)
        run.update(title=_one_line(issue.title, 300))
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
        fields: dict[str, Any] = {"issue_title": issue.title, "issue_body": issue.body}
        limited = _admit(run, config, branch, fields)
        if limited is not None:
            return limited
        run.tell(
            "ARCS is working on this issue",
            f"Attempt #{run.attempt.id}: reproducing the issue on `{head.name}` and searching for a fix.",
            conclusion=None,
        )
        return _repair(run, fields, kind="issue", head_sha=head.sha)
    return str(run.attempt.status)


def _not_our_label(run: _Run, label: str, why: str) -> str:
    """``skipped`` without a word on GitHub and without an event: most labels are not for ARCS."""
    return run.finish(
        "skipped",
        f"label {label!r} is not for ARCS: {why}",
        title="",
        body="",
        conclusion=None,
        comment=False,
    )


def _check_permission(run: _Run, user: str) -> str | None:
    """Refuse (politely, with an event) unless ``user`` may write to the repository."""
    permission = run.gh.get_permission(run.repo, user) if user else "none"
    if permission in WRITE_PERMISSIONS:
        return None
    return run.refuse(
        f"@{user or 'unknown'} has {permission} permission; write is needed",
        f"Thanks for asking, @{user or 'there'}! ARCS only takes requests from people with write access "
        "to this repository, so it will not act on this one. A maintainer can ask instead.",
    )


def handle_command(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """A ``/arcs`` comment: refuse, help, stop, or run a repair (fix/retry/revise)."""
    args = job.args
    repo = str(args["repo"])
    number = int(args["issue_number"])
    comment_id = _int(args.get("comment_id"))
    author = str(args.get("author") or "")
    command: Mapping[str, Any] | None = args.get("command")
    verb = str(command.get("verb")) if command else None
    key = job.idempotency_key or f"cmd:{repo}:{comment_id}"
    attempt, go = _claim(
        deps,
        job,
        key,
        message_id,
        trigger="revise" if verb == "revise" else "comment",
        issue_number=number,
        comment_id=comment_id,
        requested_by=author,
        options=dict(command) if command else None,
    )
    if not go:
        return "duplicate"
    run = _open_run(deps, attempt, job)
    if run is None:
        return "error"
    with _closing(run.gh), run.guard():
        run.start()
        if args.get("refusal") == "edited":
            return run.refuse(
                "edited comments are never executed",
                f"@{author}, ARCS does not run commands from edited comments (the text that was "
                "approved may not be the text that runs). Please post the command in a new comment.",
            )
        if args.get("error"):
            _react(run, comment_id, "confused")
            return run.refuse(f"not understood: {args['error']}", f"@{author}, {args['error']}")
        refused = _check_permission(run, author)
        if refused is not None:
            _react(run, comment_id, "confused")
            return refused
        config = _read_config(run, None)
        if isinstance(config, str):
            return config
        off = _trigger_off(run, config, "comments", reply=True)
        if off is not None:
            return off
        if verb is None or verb == "help":
            from bot.commands import HELP_TEXT

            return run.finish("skipped", "help", title="ARCS help", body=HELP_TEXT, conclusion=None)
        if verb == "stop":
            return _stop(run, number, author)
        _react(run, comment_id, "eyes")
        fields: dict[str, Any] = {
            "tier": str(command.get("tier") or "auto") if command else "auto",
            "budget_usd": _budget_usd(command),
            "iterations": _int(command.get("iterations")) if command else None,
        }
        if args.get("is_pull_request"):
            pr = run.gh.get_pull_request(repo, number)
            if pr.head_repo not in (None, repo):
                return run.refuse(
                    f"pull request #{number} comes from the fork {pr.head_repo}",
                    "ARCS does not run on pull requests from forks: their code is not run with this "
                    "repository's credentials.",
                )
            if verb == "revise":
                if not pr.head_branch.startswith(BRANCH_PREFIX):
                    return run.refuse(
                        f"#{number} is not an ARCS pull request",
                        "`/arcs revise` works on pull requests opened by ARCS.",
                    )
                # Revise: a new commit on the ARCS branch, the same pull request.
                branch, base = pr.head_branch, pr.base_branch
                fields["instructions"] = str(command.get("instructions") or "") if command else ""
            else:
                branch, base = branch_name("fix", pr.head_branch), pr.head_branch
            run.update(head_sha=pr.head_sha, head_branch=pr.head_branch, base_branch=base, branch=branch)
            limited = _admit(run, config, branch, fields)
            if limited is not None:
                return limited
            run.open_check_run(pr.head_sha)
            run.tell(
                "ARCS is working on this",
                f"Attempt #{run.attempt.id} (`/arcs {verb}` by @{author}) is running.",
                conclusion=None,
            )
            return _repair(run, fields, kind="ci", head_sha=pr.head_sha)
        issue = run.gh.get_issue(repo, number)
        head = run.gh.get_branch_head(repo, None)
        branch = branch_name("issue", str(number))
        run.update(head_sha=head.sha, base_branch=head.name, branch=branch)
        limited = _admit(run, config, branch, fields)
        if limited is not None:
            return limited
        run.tell(
            "ARCS is working on this issue",
            f"Attempt #{run.attempt.id} (`/arcs {verb}` by @{author}) is running on `{head.name}`.",
            conclusion=None,
        )
        fields.update(issue_title=issue.title, issue_body=issue.body)
        return _repair(run, fields, kind="issue", head_sha=head.sha)
    return str(run.attempt.status)


def _react(run: _Run, comment_id: int | None, content: str) -> None:
    if comment_id is None:
        return
    try:
        run.gh.add_reaction(run.repo, comment_id, content)
    except Exception as exc:  # a missing reaction is cosmetic; the reply still goes out
        log.warning("attempt.reaction_failed", error=f"{type(exc).__name__}: {exc}"[:300])


def _stop(run: _Run, number: int, author: str) -> str:
    """Cancel the queued attempts on this issue/PR (also those waiting for quiet hours) and ask
    the running ones to stop: their loop checks before every round, stops with verdict
    ``interrupted`` and their status comment says who stopped them."""
    store = run.deps.store
    now = run.deps.clock()
    why = f"stopped by @{author}"
    waiting = store.attempts(repo=run.repo, issue_number=number, statuses=("queued",))
    stopped = [a for a in waiting if a.id != run.attempt.id]
    for other in stopped:
        store.update_attempt(
            other.id,
            status="skipped",
            reason=why,
            finished_at=now,
            cancel_requested_at=now,
            cancel_reason=why,
        )
    running = [
        a
        for a in store.attempts(repo=run.repo, issue_number=number, statuses=("running",))
        if a.id != run.attempt.id
    ]
    for other in running:
        if other.cancel_requested_at is None:
            store.update_attempt(other.id, cancel_requested_at=now, cancel_reason=why)
    parts = [f"Cancelled {len(stopped)} queued attempt(s)."]
    if running:
        ids = ", ".join(f"#{a.id}" for a in running)
        parts.append(
            f"Asked attempt(s) {ids} to stop before their next round; their status will say when they stopped."
        )
    if not stopped and not running:
        parts = ["Nothing to stop: no ARCS attempt is queued or running here."]
    return run.finish(
        "skipped", f"stop by @{author}", title="ARCS stop", body=" ".join(parts), conclusion=None
    )


def publish_result(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """Push the fix of a ``fixed`` attempt to its branch and open (or update) its pull request."""
    attempt_id = int(job.args["attempt_id"])
    bind_contextvars(attempt_id=str(attempt_id))
    store = deps.store
    attempt = store.get_attempt(attempt_id)
    # `partial` attempts carry files only when `.arcs.yml` asked for a pull request (open_pr_on_partial).
    if attempt is None or attempt.status not in ("fixed", "partial") or not attempt.files:
        log.warning("publish.nothing", status=attempt.status if attempt else None)
        set_outcome("nothing_to_publish")
        return "nothing_to_publish"
    if attempt.publish_state == "published":
        log.info("publish.duplicate", pr_number=attempt.pr_number)
        set_outcome("duplicate")
        return "duplicate"
    if not store.begin_publish(attempt_id, stale_after=PUBLISH_STALE_AFTER):
        log.info("publish.in_progress_elsewhere")
        set_outcome("duplicate")
        return "duplicate"
    with _closing(deps.github(attempt.installation_id)) as gh:
        return _publish(_Run(deps, gh, attempt, job))


def _publish(run: _Run) -> str:
    store = run.deps.store
    attempt = run.attempt
    summary = repair_summary(attempt)
    branch = attempt.branch or branch_name("attempt", str(attempt.id))
    base = attempt.base_branch or attempt.head_branch
    try:
        if attempt.head_sha is None or base is None:
            raise ValueError("the attempt has no head commit or base branch to publish against")
        commit = run.gh.push_branch(
            attempt.repo, branch, attempt.head_sha, attempt.files or {}, _commit_message(attempt)
        )
        pr = run.gh.open_or_update_pr(
            attempt.repo, branch, base, payloads.pr_title(summary), payloads.pr_body(summary)
        )
        store.record_pr(
            repo=attempt.repo,
            number=pr.number,
            url=pr.url,
            branch=branch,
            attempt_id=attempt.id,
            head_sha=commit,
        )
        run.update(publish_state="published", pr_number=pr.number, pr_url=pr.url)
    except Exception as exc:
        run.update(publish_state="failed")
        run.event("error", f"publishing failed (will retry): {type(exc).__name__}: {exc}")
        log.error("publish.failed", error=f"{type(exc).__name__}: {exc}"[:300])
        run.tell(
            "ARCS found a fix but could not open the pull request yet",
            f"Attempt #{attempt.id}: publishing failed ({type(exc).__name__}); ARCS will try again.",
            conclusion="neutral",
        )
        raise
    verb = "opened" if pr.created else "updated"
    said = f"Attempt #{attempt.id} {verb} #{pr.number} ({pr.url}) on branch `{branch}`."
    check = payloads.check_run_output("completed", summary, pr_url=pr.url)
    check["summary"] = payloads.truncate(f"{said}\n\n{check['summary']}", payloads.MAX_CHECK_TEXT)
    run.tell(
        f"ARCS {verb} a pull request with a fix",
        said,
        conclusion="success",
        check=check,
        comment_body=payloads.status_comment(
            "pr_opened" if pr.created else "pr_updated",
            attempt_id=attempt.id,
            pr_url=f"#{pr.number} ({pr.url})",
        ),
    )
    set_outcome("published", pr_number=pr.number)
    log.info("publish.done", pr_number=pr.number, created=pr.created, branch=branch)
    return "published"


def _commit_message(attempt: Attempt) -> str:
    what = f"#{attempt.issue_number}" if attempt.trigger == "issue" else (attempt.failure_class or "CI")
    return f"ARCS: fix {what} failure\n\nAttempt #{attempt.id} ({attempt.verdict or 'fixed'}).\n"


def _tally(data: Any) -> payloads.TestTally | None:
    if not isinstance(data, Mapping):
        return None
    return payloads.TestTally(
        passed=int(data.get("passed") or 0),
        failed=int(data.get("failed") or 0),
        errors=int(data.get("errors") or 0),
        failing=tuple(str(t) for t in data.get("failing") or ()),
    )


def _is_issue(attempt: Attempt) -> bool:
    return attempt.trigger == "issue" or (attempt.trigger == "comment" and attempt.head_branch is None)


def _verification_line(record: object) -> str:
    """``python -m pytest -x: exit 0 in 1.2s (5 passed, 0 failed)`` from the trace summary."""
    if not isinstance(record, Mapping) or not record.get("command"):
        return ""
    from jobs.repair.trace import verification_line

    return verification_line(record)


def repair_summary(
    attempt: Attempt, *, fixed: bool | None = None, reason: str | None = None
) -> payloads.RepairSummary:
    """What :mod:`bot.github.payloads` needs about an attempt, from the store alone.

    The repair service leaves tests before/after, gates, target tests and the trace's Markdown
    in ``attempt.trace`` (see :mod:`jobs.repair_service`); absent keys read as "not recorded".
    """
    trace: Mapping[str, Any] = attempt.trace or {}
    issue = _is_issue(attempt)
    gates = tuple(
        (str(g.get("gate") or "?"), bool(g.get("passed")), str(g.get("detail") or ""))
        for g in trace.get("gates") or ()
        if isinstance(g, Mapping)
    )
    failure = ""
    if not issue:
        where = attempt.head_branch or attempt.base_branch or (attempt.head_sha or "")[:12]
        failure = f"CI failed on `{where}`" + (
            f" ({attempt.failure_class} failure)." if attempt.failure_class else "."
        )
    return payloads.RepairSummary(
        verdict=attempt.verdict or "",
        fixed=attempt.status == "fixed" if fixed is None else fixed,
        reason=reason if reason is not None else (attempt.reason or ""),
        kind="issue" if issue else "ci",
        failure_summary=failure,
        root_cause=attempt.explanation or "",
        diff=attempt.patch or "",
        target_tests=tuple(str(t) for t in trace.get("target_tests") or ()),
        tests_before=_tally(trace.get("tests_before")),
        tests_after=_tally(trace.get("tests_after")),
        pre_existing=tuple(str(t) for t in trace.get("pre_existing") or ()),
        verification=_verification_line(trace.get("verification")),
        gates=gates,
        tokens=attempt.tokens or 0,
        cost_usd=attempt.cost_usd or 0.0,
        rounds=attempt.rounds or 0,
        duration_s=float(trace.get("duration_s") or 0.0),
        tier=attempt.tier or "",
        trace_markdown=str(trace.get("markdown") or ""),
        issue_number=attempt.issue_number if issue else None,
        head_sha=attempt.head_sha or "",
        attempt_id=str(attempt.id),
    )


def record_pr_outcome(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """A pull request was closed: record merged/closed for the ones ARCS opened (idempotent)."""
    args = job.args
    repo = str(args["repo"])
    number = int(args["number"])
    merged = bool(args.get("merged"))
    when = _parse_time(args.get("merged_at") if merged else args.get("closed_at"))
    state = "merged" if merged else "closed"
    if not deps.store.set_pr_state(repo, number, state, at=when):
        log.info("pr.not_ours", number=number)
        set_outcome("not_ours")
        return "not_ours"
    log.info("pr.outcome", number=number, state=state)
    set_outcome(state)
    return state


def refresh_index(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """Refresh a repository's code index at the pushed commit (idempotent: no attempt row)."""
    if deps.index is None:
        log.info("index.disabled")
        set_outcome("skipped")
        return "skipped"
    args = job.args
    repo = str(args["repo"])
    with _closing(deps.github(_int(args.get("installation_id")))) as gh, deps.scratch() as scratch:
        sha = args.get("after") or gh.get_branch_head(repo, None).sha
        workdir = scratch / "repo"
        workdir.mkdir()
        gh.clone(repo, str(sha), workdir)
        stats = deps.index.refresh(repo, workdir, full=args.get("mode") == "full")
    log.info("index.refreshed", sha=str(sha)[:12], **{k: v for k, v in stats.items() if k != "event"})
    set_outcome("refreshed")
    return "refreshed"


DomainFunction = Callable[..., str]

FUNCTIONS: Mapping[str, DomainFunction] = {
    "refresh_index": refresh_index,
    "repair_ci_failure": repair_ci_failure,
    "repair_issue": repair_issue,
    "handle_command": handle_command,
    "record_pr_outcome": record_pr_outcome,
    "publish_result": publish_result,
}
"""The domain function of each actor."""


def dispatch(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """Run the domain function of ``job.actor`` (in-process: the CLI and tests)."""
    return FUNCTIONS[job.actor](deps, job, message_id=message_id)
