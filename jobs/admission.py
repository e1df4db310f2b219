"""Admission: may this repair start now? The owner's policy, the monthly USD caps and the
pull-request limits, checked right before anything is cloned or repaired.

* paused (owner or repository): ``refused``, a ``refusal`` event, the message on the check run
  (CI) or the status comment (issues, commands);
* a monthly USD budget used up: the same, with the numbers;
* quiet hours: the attempt goes back to ``queued`` and the job is re-sent with a delay until the
  window ends (a ``notice`` event; the check run/status comment says when it will start). A window
  that ends after the actor's ``max_age`` (counted from when the attempt was created) is refused
  instead: the request would be stale;
* ``ARCS_MAX_RUNNING_PER_REPO`` repairs of the repository already running: deferred the same way
  and tried again every :data:`BUSY_RETRY` (never dropped: a ``notice`` event each time, the check
  run/status comment says it waits), refused with that reason when no slot freed before the
  request expires;
* ``ARCS_USER_DAILY_USD`` (a deployment setting): the USD the repairs one person asked for
  (``requested_by``: a command's author, a button's clicker, an issue label's sender, a failed
  workflow run's triggering actor) may commit in the last 24 hours across the owner's
  repositories; a repair whose reservation would pass what is left is ``refused`` with the
  numbers and when spend frees up. Runs a bot started, other checks apps' suites (no person is
  known behind them) and requests by bot accounts count against nobody;
* ``max_prs_per_day`` (of the policy and of ``.arcs.yml``: the stricter wins; ARCS pull requests
  opened in the repository in the last 24 hours) and ``max_open_prs`` (ARCS pull requests still
  open), both counted from the store: ``refused``, a ``refusal`` event and a message naming the
  limit and the numbers. A repair that would update an open ARCS pull request (a retry on, or
  ``/arcs revise`` of, an ARCS branch) opens nothing new and is not limited.

Admission is one store transaction under a per-owner lock (:meth:`AttemptStore.admit_repair`):
the pull-request limits count the pull requests admitted repairs may still open, and USD is
reserved (at most what every monthly cap still allows). The reservation asks for the attempt's
own USD budget, computed by :func:`jobs.plan.own_budget` from the same ``.arcs.yml`` read the
repair runs with, so the reservation and the loop's budget are one number. The attempt's USD
budget is lowered to the grant, so the loop's guard keeps the spend within the cap.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import structlog

from jobs import render
from jobs.config import ArcsConfig
from jobs.logctx import set_outcome
from jobs.messages import ACTOR_OPTIONS, ActorName, Envelope, Resume
from jobs.plan import own_budget
from jobs.policy import (
    USER_WINDOW,
    Defer,
    EffectivePolicy,
    Refuse,
    binding_cap,
    budget_used_reason,
    decide,
    merge,
    monthly_window,
    user_cap_reason,
    user_cap_resets,
)
from jobs.ports import Admission, AttemptStore, PrLimits, UserCap
from jobs.run import AttemptRun

log = structlog.get_logger("arcs.pipeline")

PR_WINDOW = dt.timedelta(hours=24)
"""``max_prs_per_day`` counts the pull requests ARCS opened in this trailing window."""
DEFER_MARGIN = dt.timedelta(minutes=10)
"""A deferred job must start at least this long before its actor's ``max_age`` runs out."""
BUSY_RETRY = dt.timedelta(minutes=5)
"""How long a repair deferred by ``ARCS_MAX_RUNNING_PER_REPO`` waits before it asks again."""


@dataclass(frozen=True, slots=True)
class PrCounts:
    """ARCS pull requests of one repository, from the store."""

    opened_today: int
    """Opened in the last :data:`PR_WINDOW`."""
    open_now: int
    """Still open."""
    pending: int = 0
    """Admitted repairs that may still open one (running, or fixed and not published yet)."""


def count_arcs_prs(store: AttemptStore, repo: str, now: dt.datetime) -> PrCounts:
    """How many pull requests ARCS opened in ``repo`` in the last 24 hours, and how many are open
    (COUNT queries over ``pull_requests``: one row per pull request, however many attempts
    updated it)."""
    tally = store.count_prs(repo, now - PR_WINDOW)
    return PrCounts(opened_today=tally.opened_since, open_now=tally.open_now)


def pr_limit_reached(
    config: ArcsConfig, counts: PrCounts, repo: str, *, policy: EffectivePolicy | None = None
) -> tuple[render.RefusalKind, str, int, int] | None:
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


def updates_open_pr(store: AttemptStore, repo: str, branch: str) -> bool:
    """True when ARCS already has an open pull request for ``branch`` (a repair updates it)."""
    return any(a.pr_state == "open" for a in store.attempts(repo=repo, branch=branch, limit=50))


@dataclass(frozen=True, slots=True)
class Admitted:
    """The repair may start: what admission granted it."""

    usd_cap: float | None = None
    """The USD the monthly caps granted (reserved in the store); None when no cap applies."""


def admit(
    run: AttemptRun,
    config: ArcsConfig,
    branch: str,
    *,
    budget_usd: float | None = None,
    iterations: int | None = None,
    head_sha: str | None = None,
    comment: bool = True,
) -> Admitted | str:
    """The owner's policy and the pull-request limits, right before the repair starts.

    Returns :class:`Admitted` when the repair may go on, else the attempt's final status
    (refused, or ``deferred`` for quiet hours). ``budget_usd``/``iterations``: what the request
    asks for (a command's options; the reservation is the attempt's own budget, as the loop's).
    ``head_sha``: say it on a check run (CI); ``comment``: say it in the status comment.
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
        return policy_refusal(run, decision, head_sha=head_sha, comment=comment)
    if isinstance(decision, Defer):
        return defer(run, decision, policy, head_sha=head_sha, comment=comment)
    limits = None
    if not updates_open_pr(store, run.repo, branch):
        limits = PrLimits(since=now - PR_WINDOW, per_day=policy.max_prs_per_day, open=config.max_open_prs)
    # The same rule, from the same config, as the loop's budget (jobs.plan): one number.
    own = own_budget(config, budget_usd=budget_usd, iterations=iterations)
    admission = store.admit_repair(
        run.attempt.id,
        owner,
        run.repo,
        want_usd=own.usd,
        caps={cap.repo: cap.limit_usd for cap in policy.caps},
        since=since,
        pr_limits=limits,
        max_running=deps.settings.max_running_per_repo,
        user_cap=user_cap(run, now),
    )
    if admission.refused == "max_running":
        return busy(run, admission.running or 0, head_sha=head_sha, comment=comment)
    if admission.refused == "user_daily_usd":
        want = admission.user_wanted if admission.user_wanted is not None else own.usd
        return user_refusal(run, admission, want, now, head_sha=head_sha, comment=comment)
    if admission.refused is not None:
        prs = admission.prs
        counts = PrCounts(prs.opened_since, prs.open_now, prs.pending) if prs else PrCounts(0, 0)
        reached = pr_limit_reached(config, counts, run.repo, policy=policy) or (
            "rate_limit" if admission.refused == "max_prs_per_day" else "open_prs",
            f"ARCS has reached {admission.refused} in {run.repo}; skipping this repair",
            counts.opened_today + counts.pending,
            policy.max_prs_per_day or 0,
        )
        return pr_refusal(run, reached, policy, head_sha=head_sha, comment=comment)
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
        return policy_refusal(run, refusal, head_sha=head_sha, comment=comment)
    run.policy, run.committed, run.granted_usd = policy, committed, admission.granted_usd
    return Admitted(usd_cap=admission.granted_usd if policy.caps else None)


def triggering_user(login: str | None) -> str | None:
    """The person a repair counts against for ``ARCS_USER_DAILY_USD``: ``login``, or None for a
    bot account (``…[bot]``: the human behind it is not known) or no login (a checks app's CI)."""
    login = (login or "").strip()
    if not login or login.lower().endswith("[bot]"):
        return None
    return login


def user_cap(run: AttemptRun, now: dt.datetime) -> UserCap | None:
    """The triggering user's daily cap for this attempt (None: no cap set, or nobody to count)."""
    limit = float(run.deps.settings.user_daily_usd)
    login = triggering_user(run.attempt.requested_by)
    if limit <= 0 or login is None:
        return None
    return UserCap(login=login, limit_usd=limit, since=now - USER_WINDOW)


def user_refusal(
    run: AttemptRun,
    admission: Admission,
    want: float,
    now: dt.datetime,
    *,
    head_sha: str | None,
    comment: bool,
) -> str:
    """``refused`` for the triggering user's daily cap, with the numbers and when it frees up."""
    cap = user_cap(run, now)
    assert cap is not None  # only asked for with a cap
    used = admission.user_committed or 0.0
    resets = user_cap_resets(now, admission.user_oldest)
    refusal = Refuse(
        user_cap_reason(cap.login, cap.limit_usd, used, want, resets),
        "user_daily_usd",
        {
            "user": cap.login,
            "limit": cap.limit_usd,
            "committed": round(used, 6),
            "want": round(want, 6),
            "resets": resets.isoformat(),
        },
    )
    return policy_refusal(run, refusal, head_sha=head_sha, comment=comment)


_POLICY_HINTS: Mapping[str, str] = {
    "paused": "An org admin can resume ARCS on the ARCS dashboard.",
    "monthly_usd": "The budget starts over next month; an org admin can raise it on the ARCS dashboard.",
    "quiet_hours": "Ask again with `/arcs fix` once the quiet hours are over.",
    "max_running": "Ask again with `/arcs fix` when fewer repairs are running.",
    "user_daily_usd": "Ask again then, or with a smaller `budget=`; the ARCS operator sets the cap.",
}
_POLICY_TITLES: Mapping[str, str] = {
    "paused": "Skipped: ARCS is paused",
    "monthly_usd": "Skipped: monthly budget used",
    "quiet_hours": "Skipped: quiet hours",
    "max_running": "Skipped: too many repairs running",
    "user_daily_usd": "Skipped: daily budget per user used",
}


def policy_refusal(run: AttemptRun, refusal: Refuse, *, head_sha: str | None, comment: bool) -> str:
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


def pr_refusal(
    run: AttemptRun,
    reached: tuple[render.RefusalKind, str, int, int],
    policy: EffectivePolicy,
    *,
    head_sha: str | None,
    comment: bool,
) -> str:
    """``refused`` for a pull-request limit, naming the limit and the numbers."""
    kind, message, count, limit = reached
    name = "max_prs_per_day" if kind == "rate_limit" else "max_open_prs"
    if kind == "rate_limit" and policy.max_prs_source == "policy":
        text = (
            f"ARCS has reached the number of pull requests a day an org admin allows for "
            f"{policy.owner}.\n\n{message}."
        )
    else:
        text = render.refusal_comment(kind, message + ".")
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
    return dt.timedelta(milliseconds=ACTOR_OPTIONS[actor].max_age)


def defer(
    run: AttemptRun, decision: Defer, policy: EffectivePolicy, *, head_sha: str | None, comment: bool
) -> str:
    """Quiet hours: back to ``queued``, the same job again once they end (a ``notice`` event and
    a word on the check run/status comment). Refused when it would start too late to run."""
    until = decision.until
    at = f"{until:%H:%M} {policy.tz_name}"
    return _postpone(
        run,
        until,
        reason=decision.reason,
        policy="quiet_hours",
        title=f"Waiting for quiet hours to end ({at})",
        text=f"⏸️ ARCS will start this repair at {at} ({decision.reason}).",
        when=at,
        too_late=f"{decision.reason}; they end at {at}, after this request expires",
        cannot=f"{decision.reason}; this ARCS deployment cannot postpone a repair until {at}",
        head_sha=head_sha,
        comment=comment,
    )


def busy(run: AttemptRun, running: int, *, head_sha: str | None, comment: bool) -> str:
    """``ARCS_MAX_RUNNING_PER_REPO`` reached: back to ``queued``, the same job again after
    :data:`BUSY_RETRY` (the first time said on the check run/status comment, every time in a
    ``notice`` event). Refused, with that reason, when it would start too late to run."""
    limit = run.deps.settings.max_running_per_repo
    reason = (
        f"{running} repairs of {run.repo} are running (at most {limit} at once, ARCS_MAX_RUNNING_PER_REPO)"
    )
    minutes = int(BUSY_RETRY.total_seconds() // 60)
    until = run.deps.clock() + BUSY_RETRY
    return _postpone(
        run,
        until,
        reason=reason,
        policy="max_running",
        title="Waiting: other repairs of this repository are running",
        text=f"⏸️ {reason}; ARCS will try this one again in {minutes} minutes.",
        when=f"{until:%H:%M} UTC",
        too_late=f"{reason}, and no slot would free before this request expires",
        cannot=f"{reason}; this ARCS deployment cannot postpone a repair",
        head_sha=head_sha,
        comment=comment,
        tell=run.job.resume is None,  # said once; each later wait is an event only
        data={"running": running, "limit": limit},
    )


def _postpone(
    run: AttemptRun,
    until: dt.datetime,
    *,
    reason: str,
    policy: Literal["quiet_hours", "max_running"],
    title: str,
    text: str,
    when: str,
    too_late: str,
    cannot: str,
    head_sha: str | None,
    comment: bool,
    tell: bool = True,
    data: Mapping[str, object] | None = None,
) -> str:
    """Put the attempt back to ``queued`` and re-send its job to start at ``until`` (a ``notice``
    event; ``tell``: the check run/status comment say ``text``). Refused (``too_late``) when
    ``until`` comes after the actor's ``max_age``, or (``cannot``) when the deployment cannot
    delay a job: a repair is never dropped without a word."""
    deps = run.deps
    now = deps.clock()
    max_age = _max_age(run.job.actor)
    extra = dict(data or {})
    if until - run.attempt.created_at + DEFER_MARGIN > max_age:
        hours = max_age.total_seconds() / 3600
        refusal = Refuse(
            f"{too_late} ({hours:g} h after it was made)", policy, {"until": until.isoformat(), **extra}
        )
        return policy_refusal(run, refusal, head_sha=head_sha, comment=comment)
    later = deps.enqueue_later
    if later is None:
        return policy_refusal(
            run,
            Refuse(cannot, policy, {"until": until.isoformat(), **extra}),
            head_sha=head_sha,
            comment=comment,
        )
    run.attempt = deps.store.defer_attempt(run.attempt.id)
    run.event("notice", f"deferred until {when}: {reason}", policy=policy, until=until.isoformat(), **extra)
    if tell:
        if head_sha is not None:
            run.open_check_run(head_sha)
        run.tell(
            title,
            text,
            conclusion=None,
            comment=comment,
            check={"title": title, "summary": text},
            comment_body=text,
        )
    job = run.job
    later(
        Envelope.of(
            job.message,
            context=job.context,
            idempotency_key=run.attempt.idempotency_key,
            resume=Resume(attempt_id=run.attempt.id, until=until),
        ),
        max(dt.timedelta(0), until - now),
    )
    set_outcome("deferred", until=until.isoformat())
    log.info("attempt.deferred", until=until.isoformat(), reason=reason, policy=policy)
    return "deferred"
