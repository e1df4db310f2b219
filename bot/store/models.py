"""The ARCS database: deliveries, attempts, pull requests and events (SQLAlchemy 2, typed ORM).

The schema is created and evolved only by the Alembic migrations in ``bot/store/migrations``;
these classes describe it for queries. Every timestamp is stored in UTC and read back as an
aware ``datetime`` on SQLite too (:class:`UTCDateTime`).

- ``deliveries``: one row per GitHub webhook delivery (``delivery_id`` unique), the first line of
  idempotency for GitHub's at-least-once delivery.
- ``attempts``: one row per repair attempt; ``idempotency_key`` is unique so a redelivered job
  never yields a second attempt (and so never a second branch or pull request). The columns are
  what the dashboard shows: who, what triggered it, how it ended, what it cost, the PR.
- ``pull_requests``: the pull requests ARCS opened (``(repo, number)`` unique) and their fate.
- ``joined_runs`` (0005): the other failed workflow runs of the same commit whose failure has the
  attempt's signature (``(attempt_id, run_id)`` unique): one attempt per failure, every run recorded.
- ``events``: refusals, errors and notices, so that nothing fails silently.
- ``test_runs`` (0006): the test history, one row per test outcome ARCS saw (a CI failure, a
  reproduction or re-run, a candidate or verification run) at a commit in an environment;
  ``(repo, run_key, test_id)`` unique so a redelivered run or a retried job records it once. The
  flaky-test classifier (:mod:`jobs.repair.flaky`) reads it.
- ``policies``: what org admins decided (kill switch, monthly USD budgets, PRs per day, quiet
  hours), one row per owner (``repo = ''``) or per repository.
- ``dashboard_sessions``: who is logged in to the dashboard and what they may see (the cookie holds
  only a signed random id; the row holds no GitHub token).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal, get_args

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

AttemptStatus = Literal[
    "queued", "running", "fixed", "partial", "environment", "no_fix", "refused", "error", "skipped"
]
ATTEMPT_STATUSES: tuple[str, ...] = get_args(AttemptStatus)
TERMINAL_STATUSES: frozenset[str] = frozenset(
    {"fixed", "partial", "environment", "no_fix", "refused", "error", "skipped"}
)
"""Statuses after which an attempt never runs again."""

Trigger = Literal["ci", "issue", "comment", "revise", "fix", "demo", "action"]
"""The App's four; ``fix``, ``demo`` and ``action``: command-line runs on ``arcs dashboard``."""
TRIGGERS: tuple[str, ...] = get_args(Trigger)

PRState = Literal["open", "merged", "closed"]
PR_STATES: tuple[str, ...] = get_args(PRState)

PublishState = Literal["publishing", "published", "failed"]

DeliveryStatus = Literal["received", "enqueued", "ignored", "queued", "failed"]
"""``received``: recorded with its jobs, the broker has not confirmed them yet (the relay
re-enqueues a row left here too long); ``enqueued``: the broker took every job; ``ignored``:
nothing to do. ``queued`` and ``failed`` are written by ARCS before 0004 only (``queued`` means
enqueued; ``failed`` is re-claimable by a redelivery)."""
DELIVERY_STATUSES: tuple[str, ...] = get_args(DeliveryStatus)

DELIVERY_ID_MAX = 100
"""The longest ``X-GitHub-Delivery`` ARCS accepts (GitHub sends 36-character UUIDs): the webhook's
header check and every ``delivery_id`` column use this one limit."""

TestRunSource = Literal["ci", "reproduction", "candidate", "verification"]
TEST_RUN_SOURCES: tuple[str, ...] = get_args(TestRunSource)
TEST_ID_MAX = 600
"""Test ids are clipped to this (an index entry stays under PostgreSQL's btree limit)."""

EventKind = Literal["refusal", "error", "notice", "job_failed"]
EVENT_KINDS: tuple[str, ...] = get_args(EventKind)

# Stable constraint names, so later migrations can address them on every backend.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL gets 64-bit ids.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite drops the offset otherwise)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; pass an aware UTC datetime")
        return value.astimezone(dt.UTC)

    def process_result_value(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


class Base(DeclarativeBase):
    """Declarative base with a naming convention for constraints."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Delivery(Base):
    """One webhook delivery, recorded with its jobs (the outbox) before anything is enqueued."""

    __tablename__ = "deliveries"
    __table_args__ = (
        # 0004: the relay's scan for rows the broker never confirmed (partial: only those).
        Index(
            "ix_deliveries_received",
            "updated_at",
            postgresql_where=text("status = 'received'"),
            sqlite_where=text("status = 'received'"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    delivery_id: Mapped[str] = mapped_column(String(DELIVERY_ID_MAX), unique=True)
    event: Mapped[str] = mapped_column(String(64))
    action: Mapped[str | None] = mapped_column(String(64))
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    repo: Mapped[str | None] = mapped_column(String(255))
    payload_sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    received_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    latency_ms: Mapped[float | None] = mapped_column(Float)
    """How long the webhook request took to answer (added in 0002; for ``/metrics``)."""
    jobs: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON(none_as_null=True))
    """0004: the jobs to enqueue (``JobRequest.as_dict()``), written in the same statement as the
    row, so a delivery recorded as ``received`` can always be enqueued again (the outbox)."""


class Attempt(Base):
    """One repair attempt, claimed once by its idempotency key."""

    __tablename__ = "attempts"
    __table_args__ = (
        Index("ix_attempts_repo_created_at", "repo", "created_at"),
        Index("ix_attempts_status", "status"),
        Index("ix_attempts_owner", "owner"),
        # 0003, covering the dashboard's window aggregates and /metrics' duration histogram, so
        # they read the index instead of rows carrying patches and traces (bench/dashboard).
        Index("ix_attempts_window", "created_at", "repo", "status", "cost_usd", "failure_class", "trigger"),
        Index("ix_attempts_durations", "status", "started_at", "finished_at"),
        # 0005: which attempt a workflow run started (a redelivered run skips the log download).
        Index("ix_attempts_repo_run_id", "repo", "run_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    idempotency_key: Mapped[str] = mapped_column(String(255), unique=True)
    # who and what
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    repo: Mapped[str] = mapped_column(String(255))
    owner: Mapped[str] = mapped_column(String(255))
    """The organization or user owning ``repo`` (``repo`` is ``owner/name``)."""
    trigger: Mapped[str] = mapped_column(String(16))
    delivery_id: Mapped[str | None] = mapped_column(String(DELIVERY_ID_MAX))
    requested_by: Mapped[str | None] = mapped_column(String(255))
    head_sha: Mapped[str | None] = mapped_column(String(64))
    head_branch: Mapped[str | None] = mapped_column(String(255))
    base_branch: Mapped[str | None] = mapped_column(String(255))
    run_id: Mapped[int | None] = mapped_column(BigInteger)
    """The failed workflow run (``ci``)."""
    issue_number: Mapped[int | None] = mapped_column(Integer)
    """The issue or pull request the attempt answers (``issue``/``comment``/``revise``, or the PR of a CI run)."""
    comment_id: Mapped[int | None] = mapped_column(BigInteger)
    failure_class: Mapped[str | None] = mapped_column(String(32))
    options: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    """Requested tier/budget overrides (``/arcs fix tier=large budget=3``)."""
    # how it went
    status: Mapped[str] = mapped_column(String(16), default="queued")
    verdict: Mapped[str | None] = mapped_column(String(32))
    reason: Mapped[str | None] = mapped_column(Text)
    tier: Mapped[str | None] = mapped_column(String(32))
    rounds: Mapped[int | None] = mapped_column(Integer)
    tokens: Mapped[int | None] = mapped_column(BigInteger)
    cost_usd: Mapped[float | None] = mapped_column(Float)
    patch: Mapped[str | None] = mapped_column(Text)
    """The unified diff of the fix."""
    files: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    """New contents of the changed files (``path -> text``, ``None`` = deleted), for publishing."""
    explanation: Mapped[str | None] = mapped_column(Text)
    trace_path: Mapped[str | None] = mapped_column(Text)
    trace: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    """A trace summary (the full trace lives at ``trace_path``)."""
    # when
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    red_build_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    """When CI went red (time-to-fix is measured from here)."""
    # what it produced on GitHub
    branch: Mapped[str | None] = mapped_column(String(255))
    pr_number: Mapped[int | None] = mapped_column(Integer)
    pr_url: Mapped[str | None] = mapped_column(Text)
    pr_state: Mapped[str | None] = mapped_column(String(16))
    check_run_id: Mapped[int | None] = mapped_column(BigInteger)
    status_comment_id: Mapped[int | None] = mapped_column(BigInteger)
    # worker bookkeeping
    message_id: Mapped[str | None] = mapped_column(String(64))
    """The queue message that claimed the attempt: its own retry resumes, a duplicate does not."""
    publish_state: Mapped[str | None] = mapped_column(String(16))
    publish_started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # added in 0002
    title: Mapped[str | None] = mapped_column(Text)
    """A one-line title: the issue title, or the failing workflow and branch."""
    cancel_requested_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    """``/arcs stop`` (or an admin) asked a running attempt to stop at its next round."""
    cancel_reason: Mapped[str | None] = mapped_column(Text)
    reserved_usd: Mapped[float | None] = mapped_column(Float)
    """USD set aside from the monthly budget while the attempt runs (``cost_usd`` replaces it)."""
    # added in 0005
    failure_signature: Mapped[str | None] = mapped_column(String(64))
    """A CI attempt's failure signature (:mod:`jobs.failures`); part of its idempotency key."""
    admitted_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    """When admission let the repair start (a running attempt with it counts against
    ``ARCS_MAX_RUNNING_PER_REPO``); cleared when the attempt is deferred."""


class PullRequest(Base):
    """A pull request ARCS opened, and what became of it."""

    __tablename__ = "pull_requests"
    # One row per PR; re-recording the same PR updates it.
    __table_args__ = (
        Index("ix_pull_requests_attempt_id", "attempt_id"),
        UniqueConstraint("repo", "number"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    attempt_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("attempts.id", ondelete="SET NULL"), nullable=True
    )
    repo: Mapped[str] = mapped_column(String(255))
    number: Mapped[int] = mapped_column(Integer)
    url: Mapped[str] = mapped_column(Text)
    branch: Mapped[str] = mapped_column(String(255))
    head_sha: Mapped[str | None] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16), default="open")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    merged_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    closed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class JoinedRun(Base):
    """A failed workflow run that joined an attempt: same repository, commit and failure signature."""

    __tablename__ = "joined_runs"
    # The arbiter of "recorded once": a redelivered run, or two workers joining it at once.
    __table_args__ = (
        UniqueConstraint("attempt_id", "run_id"),
        Index("ix_joined_runs_repo_run_id", "repo", "run_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    attempt_id: Mapped[int] = mapped_column(BigId, ForeignKey("attempts.id", ondelete="CASCADE"))
    repo: Mapped[str] = mapped_column(String(255))
    run_id: Mapped[int] = mapped_column(BigInteger)
    workflow_name: Mapped[str | None] = mapped_column(String(255))
    delivery_id: Mapped[str | None] = mapped_column(String(DELIVERY_ID_MAX))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class TestRunRow(Base):
    """One test outcome: ``test_id`` failed or passed at ``sha`` in ``env``, seen by ``source``."""

    __tablename__ = "test_runs"
    __test__ = False  # not a pytest test class
    # The arbiter of "recorded once"; the index serves "the history of these tests, newest first".
    __table_args__ = (
        UniqueConstraint("repo", "run_key", "test_id"),
        Index("ix_test_runs_repo_test_id_created_at", "repo", "test_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(255))
    test_id: Mapped[str] = mapped_column(String(TEST_ID_MAX))
    sha: Mapped[str] = mapped_column(String(64))
    env: Mapped[str] = mapped_column(String(255))
    source: Mapped[str] = mapped_column(String(16))
    failed: Mapped[bool] = mapped_column(Boolean)
    run_key: Mapped[str] = mapped_column(String(128))
    attempt_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("attempts.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class Event(Base):
    """A refusal, an error or a notice, so that nothing fails silently."""

    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_attempt_id", "attempt_id"),
        Index("ix_events_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(32))
    message: Mapped[str] = mapped_column(Text)
    attempt_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("attempts.id", ondelete="SET NULL"), nullable=True
    )
    delivery_id: Mapped[str | None] = mapped_column(String(DELIVERY_ID_MAX))
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    repo: Mapped[str | None] = mapped_column(String(255))
    data: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class Policy(Base):
    """Repair policy of an owner (``repo == ''``) or of one repository (``repo = owner/name``).

    ``None`` means "not set here": a repository row overrides its owner's row field by field.
    Quiet hours are whole hours in ``timezone`` (``quiet_start == quiet_end`` means none; a
    window may wrap midnight, e.g. 22 → 6).
    """

    __tablename__ = "policies"
    __table_args__ = (UniqueConstraint("owner", "repo"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    owner: Mapped[str] = mapped_column(String(255))
    repo: Mapped[str] = mapped_column(String(255), default="")
    paused: Mapped[bool | None] = mapped_column(Boolean)
    monthly_usd: Mapped[float | None] = mapped_column(Float)
    max_prs_per_day: Mapped[int | None] = mapped_column(Integer)
    quiet_start: Mapped[int | None] = mapped_column(Integer)
    quiet_end: Mapped[int | None] = mapped_column(Integer)
    timezone: Mapped[str | None] = mapped_column(String(64))
    updated_by: Mapped[str | None] = mapped_column(String(255))
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class DashboardSession(Base):
    """A dashboard login. ``id_hash`` is the SHA-256 of the random id in the signed cookie."""

    __tablename__ = "dashboard_sessions"
    __table_args__ = (Index("ix_dashboard_sessions_expires_at", "expires_at"),)

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    login: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[int | None] = mapped_column(BigInteger)
    scope: Mapped[dict[str, Any]] = mapped_column(JSON)
    """What the user may see, read from GitHub at login: ``owners``, ``repos``, ``admin_of`` (lists)."""
    csrf: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
