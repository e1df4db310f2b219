"""The rows the dashboard lists: attempts, a page of them, one attempt's detail, PRs, events, policies.

Part of :mod:`bot.dashboard.queries` (which re-exports it); the queries that fill these rows are
in :mod:`bot.dashboard.queries_detail`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.dashboard.queries_results import _iso


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """An attempt as listed (no patch, files or trace)."""

    id: int
    repo: str
    owner: str
    trigger: str
    status: str
    verdict: str | None
    reason: str | None
    failure_class: str | None
    title: str | None
    tier: str | None
    rounds: int | None
    tokens: int | None
    cost_usd: float | None
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    red_build_at: dt.datetime | None
    run_id: int | None
    issue_number: int | None
    head_branch: str | None
    head_sha: str | None
    requested_by: str | None
    pr_number: int | None
    pr_url: str | None
    pr_state: str | None
    culprit_sha: str | None = None
    """The culprit commit the repair named (from the stored report), when known."""
    reverted: bool = False
    """A ``no_fix`` attempt that opened a revert pull request (its branch is ``arcs/revert/…``)."""

    @property
    def culprit_short(self) -> str:
        """The culprit's abbreviated sha ('' when unknown)."""
        return (self.culprit_sha or "")[:7]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "id": self.id,
            "repo": self.repo,
            "owner": self.owner,
            "trigger": self.trigger,
            "status": self.status,
            "verdict": self.verdict,
            "reason": self.reason,
            "failure_class": self.failure_class,
            "title": self.title,
            "tier": self.tier,
            "rounds": self.rounds,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "created_at": _iso(self.created_at),
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "red_build_at": _iso(self.red_build_at),
            "run_id": self.run_id,
            "issue_number": self.issue_number,
            "head_branch": self.head_branch,
            "head_sha": self.head_sha,
            "requested_by": self.requested_by,
            "pr_number": self.pr_number,
            "pr_url": self.pr_url,
            "pr_state": self.pr_state,
            "culprit_sha": self.culprit_sha,
            "reverted": self.reverted,
        }


@dataclass(frozen=True, slots=True)
class AttemptPage:
    """One page of a repository's attempts, newest first."""

    repo: str
    rows: tuple[AttemptRow, ...]
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        """Number of pages (at least 1)."""
        return max(1, -(-self.total // self.per_page))

    @property
    def has_next(self) -> bool:
        """A later (older) page exists."""
        return self.page < self.pages

    @property
    def has_prev(self) -> bool:
        """An earlier (newer) page exists."""
        return self.page > 1


@dataclass(frozen=True, slots=True)
class PullRequestRow:
    """A pull request ARCS opened."""

    repo: str
    number: int
    url: str
    branch: str
    head_sha: str | None
    state: str
    created_at: dt.datetime
    updated_at: dt.datetime
    merged_at: dt.datetime | None
    closed_at: dt.datetime | None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "repo": self.repo,
            "number": self.number,
            "url": self.url,
            "branch": self.branch,
            "head_sha": self.head_sha,
            "state": self.state,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "merged_at": _iso(self.merged_at),
            "closed_at": _iso(self.closed_at),
        }


@dataclass(frozen=True, slots=True)
class EventRow:
    """A recorded event (refusal, error, notice, job failure)."""

    id: int
    kind: str
    message: str
    repo: str | None
    attempt_id: int | None
    created_at: dt.datetime
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "id": self.id,
            "kind": self.kind,
            "message": self.message,
            "repo": self.repo,
            "attempt_id": self.attempt_id,
            "created_at": _iso(self.created_at),
            "data": dict(self.data),
        }


@dataclass(frozen=True, slots=True)
class JoinedRunRow:
    """A failed workflow run that joined the attempt (same commit, same failure)."""

    run_id: int
    workflow_name: str | None
    created_at: dt.datetime

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "run_id": self.run_id,
            "workflow_name": self.workflow_name,
            "joined_at": _iso(self.created_at),
        }


@dataclass(frozen=True, slots=True)
class AttemptDetail:
    """One attempt with what it produced: patch, explanation, trace summary, PR, events.

    The ``files`` column (new file contents, for publishing) is never read.
    """

    row: AttemptRow
    base_branch: str | None
    branch: str | None
    patch: str | None
    explanation: str | None
    trace_path: str | None
    trace_summary: Mapping[str, Any] | None
    options: Mapping[str, Any] | None
    pr: PullRequestRow | None
    events: tuple[EventRow, ...]
    joined_runs: tuple[JoinedRunRow, ...] = ()
    """Other runs of the commit that failed the same way (``also failing``), first joined first."""
    failure_signature: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready (the trace summary without the rendered markdown and the file contents)."""
        summary = None
        if self.trace_summary is not None:
            # "markdown": the v1 summary; "trace_markdown"/"files": a RepairReport (v2).
            left_out = ("markdown", "trace_markdown", "files")
            summary = {k: v for k, v in self.trace_summary.items() if k not in left_out}
        return {
            **self.row.to_json(),
            "base_branch": self.base_branch,
            "branch": self.branch,
            "patch": self.patch,
            "explanation": self.explanation,
            "options": None if self.options is None else dict(self.options),
            "trace": summary,
            "pull_request": None if self.pr is None else self.pr.to_json(),
            "events": [e.to_json() for e in self.events],
            "failure_signature": self.failure_signature,
            "joined_runs": [r.to_json() for r in self.joined_runs],
        }


@dataclass(frozen=True, slots=True)
class Problem:
    """A refusal or an error: an event, or an attempt that ended ``refused``/``error`` without one."""

    kind: str
    """``refusal``, ``error``, ``job_failed`` (events), or the attempt status ``refused``/``error``."""
    message: str
    repo: str | None
    attempt_id: int | None
    created_at: dt.datetime
    source: str
    """``event`` or ``attempt``."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "kind": self.kind,
            "message": self.message,
            "repo": self.repo,
            "attempt_id": self.attempt_id,
            "created_at": _iso(self.created_at),
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class OrgDefaultsRow:
    """The organisation defaults (``extends``) the repository's ``.arcs.yml`` applied, as the
    last attempt that read it recorded them."""

    extends: str
    file: str
    """``acme/.github:.github/arcs.yml``."""
    inherited: tuple[str, ...]
    """The keys taken from the defaults (dotted in a section), the ones the repository leaves unset."""
    attempt_id: int | None
    read_at: dt.datetime


@dataclass(frozen=True, slots=True)
class PolicyRow:
    """A policy row: the owner's (``repo == ''``) or a repository's."""

    owner: str
    repo: str
    paused: bool | None
    monthly_usd: float | None
    max_prs_per_day: int | None
    quiet_start: int | None
    quiet_end: int | None
    timezone: str | None
    updated_by: str | None
    updated_at: dt.datetime

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "owner": self.owner,
            "repo": self.repo,
            "paused": self.paused,
            "monthly_usd": self.monthly_usd,
            "max_prs_per_day": self.max_prs_per_day,
            "quiet_start": self.quiet_start,
            "quiet_end": self.quiet_end,
            "timezone": self.timezone,
            "updated_by": self.updated_by,
            "updated_at": _iso(self.updated_at),
        }
