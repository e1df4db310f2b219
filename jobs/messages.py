"""Messages: what the web side enqueues and the workers execute (typed, versioned, JSON).

One frozen dataclass per actor (:data:`MESSAGES`), carried by an :class:`Envelope` on the queue
and in the delivery's outbox (``deliveries.jobs``)::

    {"actor": "repair_issue", "v": 1, "context": {...}, "idempotency_key": "issue:o/r#3:d-1",
     "body": {"repo": "o/r", "issue_number": 3, ...}, "resume": null}

``v`` is the version of the body's schema; this code writes 1 and reads 1 (:data:`VERSIONS`).
:meth:`Envelope.from_json` validates everything: an unknown ``v``, a missing or unknown field and
a value of the wrong type raise :class:`MessageInvalid`, whose text names the field. A worker
rejects such a message without retrying it (a ``job_failed`` event).

The shape before typed messages (``{"actor", "args", "context", "idempotency_key"}``) is still in
queues and outboxes when this code is deployed, so for one release it is decoded as v1, with the
tolerance of the worker that read it: a key it read with ``args.get`` may be missing, keys it
never read are ignored. The application functions read the typed message
(:meth:`Envelope.expect`, :meth:`Envelope.typed`) and build follow-up jobs with :meth:`Envelope.of`;
for the same release :attr:`Envelope.args` (that v1 dict) remains as a view for failure reports
of messages that do not decode (:meth:`Envelope.from_dict`), and ``JobRequest(actor, args, ...)``
still builds an envelope from one (tests, in-process callers); such an envelope is written in the
old shape and decoded when a worker takes it.

Fields with a default are the ones the worker copes without; every field is written. Besides
``repo``, every message carries ``installation_id`` and ``delivery_id`` (``None`` when unknown).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar, Literal, Self, TypeVar

from jobs.jsoncodec import MessageInvalid as MessageInvalid  # re-exported: the error of from_json
from jobs.jsoncodec import decode, encode_fields, what

ActorName = Literal[
    "refresh_index",
    "drop_index",
    "repair_ci_failure",
    "repair_issue",
    "handle_command",
    "record_pr_outcome",
    "publish_result",
    "watch_checks",
    "refresh_dashboard",
]

CONTEXT_KEYS = ("delivery_id", "event", "installation_id", "repo", "attempt_id")
"""Log context carried from the webhook into the worker (rebound there with structlog)."""

VERSION = 1
"""The message version this code writes."""
VERSIONS = frozenset({1})
"""The message versions this code reads."""

Verb = Literal["fix", "retry", "stop", "help", "revise", "apply"]
Tier = Literal["0", "small", "medium", "large", "auto"]
CiSource = Literal["workflow_run", "check_suite", "check_run"]
IndexMode = Literal["incremental", "full"]
DropReason = Literal["removed", "uninstalled"]
Refusal = Literal["edited"]
ChecksState = Literal["waiting", "passed", "failed", "other", "probe"]
"""What the checks on ARCS's pushed head do: wait for approval (``action_required``), or ended;
``probe``: the grace period after ARCS's push ended, ask GitHub whether anything started."""
CommandSource = Literal["comment", "check_run", "review_comment"]
"""Where a command was given: an issue/PR comment, a check run's button, a review thread."""


# --- actor options -------------------------------------------------------------------------------

_MINUTE_MS = 60_000
_HOUR_MS = 60 * _MINUTE_MS


@dataclass(frozen=True, slots=True)
class ActorOptions:
    """The queue and the retry, time and age limits of one actor (milliseconds, as dramatiq counts):
    declared once, on the actor's message class (:attr:`Message.OPTIONS`)."""

    queue: str
    """Long repairs, index refreshes and quick GitHub writes do not wait on each other (a worker can
    also be started for some queues only)."""
    max_retries: int
    time_limit: int
    max_age: int
    min_backoff: int = 15_000
    max_backoff: int = 15 * _MINUTE_MS
    retry_on_time_limit: bool = False
    """Whether hitting the time limit is worth another try (never for a repair)."""


# --- values carried by messages --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed ``/arcs`` command (:func:`bot.commands.parse_command`). Options are ``None`` when
    not given (the repository's policy decides)."""

    verb: Verb
    tier: Tier | None = None
    budget_usd: Decimal | None = None
    iterations: int | None = None
    instructions: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (the budget as a string, so no float rounding creeps in)."""
        return encode_fields(self)

    @classmethod
    def from_json(cls, data: object) -> Command:
        """Inverse of :meth:`as_dict` (:class:`MessageInvalid` names a bad field)."""
        return decode(cls, data, "command")


@dataclass(frozen=True, slots=True, kw_only=True)
class CiRef:
    """Where a CI failure was reported. For the record only: the worker reads none of it."""

    run_attempt: int | None = None
    workflow_id: int | None = None
    check_suite_id: int | None = None
    check_run_id: int | None = None
    check_name: str | None = None
    app_id: int | None = None
    app_slug: str | None = None
    html_url: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Resume:
    """The attempt a delayed message takes over (quiet hours ended), and when it was due."""

    attempt_id: int
    until: dt.datetime


# --- the messages ----------------------------------------------------------------------------


class Message:
    """Base of the messages: one frozen dataclass per actor (:attr:`ACTOR`)."""

    __slots__ = ()
    ACTOR: ClassVar[ActorName]
    OPTIONS: ClassVar[ActorOptions]
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    repo: str | None
    installation_id: int | None
    delivery_id: str | None

    def to_json(self) -> dict[str, Any]:
        """The body's JSON form (every field, times in ISO 8601, amounts as strings)."""
        return encode_fields(self)

    @classmethod
    def from_json(cls, data: object, *, v: int = VERSION) -> Self:
        """Inverse of :meth:`to_json` for schema version ``v`` (:class:`MessageInvalid` if bad)."""
        if isinstance(v, bool) or v not in VERSIONS:
            raise MessageInvalid(
                f"{cls.ACTOR}: unknown message version {v!r} (this code reads {sorted(VERSIONS)})"
            )
        return decode(cls, data, cls.ACTOR)


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshIndex(Message):
    """Refresh a repository's code index (a push to the default branch, an installation)."""

    ACTOR: ClassVar[ActorName] = "refresh_index"
    OPTIONS: ClassVar[ActorOptions] = ActorOptions(
        queue="arcs-index", max_retries=3, time_limit=30 * _MINUTE_MS, max_age=6 * _HOUR_MS
    )
    repo: str
    installation_id: int | None = None
    delivery_id: str | None = None
    after: str | None = None
    """The pushed commit; ``None``: the default branch's head (read by the worker)."""
    mode: IndexMode = "incremental"
    """``full`` rebuilds; ``incremental`` diffs against the last indexed commit."""
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DropIndex(Message):
    """Drop a repository's index: removed from the installation, or the app was uninstalled."""

    ACTOR: ClassVar[ActorName] = "drop_index"
    # Dropping is idempotent and cheap; a late drop still frees the space.
    OPTIONS: ClassVar[ActorOptions] = ActorOptions(
        queue="arcs-index", max_retries=3, time_limit=10 * _MINUTE_MS, max_age=7 * 24 * _HOUR_MS
    )
    repo: str
    reason: DropReason
    installation_id: int | None = None
    delivery_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairCiFailure(Message):
    """A failed CI run on a branch of the repository (GitHub Actions or another checks app)."""

    ACTOR: ClassVar[ActorName] = "repair_ci_failure"
    OPTIONS: ClassVar[ActorOptions] = ActorOptions(
        queue="arcs-repair", max_retries=2, time_limit=60 * _MINUTE_MS, max_age=24 * _HOUR_MS
    )
    repo: str
    head_sha: str
    installation_id: int | None = None
    delivery_id: str | None = None
    source: CiSource | None = None
    head_branch: str | None = None
    run_id: int | None = None
    """The Actions run whose logs are analysed (``None`` for other checks apps)."""
    workflow_name: str | None = None
    pull_requests: tuple[int, ...] = ()
    retry_of: str | None = None
    """The ``arcs/*`` branch when CI failed on ARCS's own branch (the worker caps retries)."""
    red_build_at: dt.datetime | None = None
    """When CI went red (``None``: when the webhook arrived, as the worker finds it)."""
    ci: CiRef = field(default_factory=CiRef)
    actor: str | None = None
    """The person whose run failed (``workflow_run.triggering_actor``, else ``actor``; ``None``: a
    bot's run or a checks app's suite): the repair counts against their daily cap."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairIssue(Message):
    """An issue labelled (the worker decides whether the label asks ARCS)."""

    ACTOR: ClassVar[ActorName] = "repair_issue"
    OPTIONS: ClassVar[ActorOptions] = ActorOptions(
        queue="arcs-repair", max_retries=2, time_limit=60 * _MINUTE_MS, max_age=24 * _HOUR_MS
    )
    repo: str
    issue_number: int
    installation_id: int | None = None
    delivery_id: str | None = None
    label: str | None = None
    """``None``: the default label."""
    sender: str | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HandleCommand(Message):
    """A ``/arcs`` comment: the parsed command, or the parse error, or a refusal to run it."""

    ACTOR: ClassVar[ActorName] = "handle_command"
    OPTIONS: ClassVar[ActorOptions] = ActorOptions(
        queue="arcs-repair", max_retries=2, time_limit=60 * _MINUTE_MS, max_age=24 * _HOUR_MS
    )
    repo: str
    number: int
    """The issue or pull request commented on."""
    installation_id: int | None = None
    delivery_id: str | None = None
    is_pull_request: bool = False
    comment_id: int | None = None
    author: str | None = None
    author_association: str | None = None
    """Informational only: the worker checks the permission through the API."""
    command: Command | None = None
    error: str | None = None
    """A parse error to post as the reply."""
    refusal: Refusal | None = None
    """``edited``: reply politely, run nothing."""
    source: CommandSource = "comment"
    """``check_run``: a button (``requested_action``) clicked by ``author``; ``review_comment``: a
    comment in a pull request review thread (``comment_id`` is the review comment, replied to in
    its thread)."""
    attempt_id: int | None = None
    """The attempt whose check run carried the button (its ``external_id``), when known."""
    thread_id: int | None = None
    """``review_comment``: the first comment of the review thread, where ARCS replies."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishResult(Message):
    """Push a ``fixed`` attempt's change and open or update its pull request."""

    ACTOR: ClassVar[ActorName] = "publish_result"
    OPTIONS: ClassVar[ActorOptions] = ActorOptions(
        queue="arcs-github",
        max_retries=6,
        time_limit=10 * _MINUTE_MS,
        max_age=72 * _HOUR_MS,
        retry_on_time_limit=True,
    )
    attempt_id: int
    repo: str | None = None
    installation_id: int | None = None
    delivery_id: str | None = None
    dashboard: bool = False
    """The repair's ``.arcs.yml`` asks for the dashboard issue: refresh it once published."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordPrOutcome(Message):
    """An ARCS pull request was merged or closed."""

    ACTOR: ClassVar[ActorName] = "record_pr_outcome"
    OPTIONS: ClassVar[ActorOptions] = ActorOptions(
        queue="arcs-github",
        max_retries=6,
        time_limit=2 * _MINUTE_MS,
        max_age=7 * 24 * _HOUR_MS,
        retry_on_time_limit=True,
    )
    repo: str
    number: int
    installation_id: int | None = None
    delivery_id: str | None = None
    merged: bool = False
    head_ref: str | None = None
    head_sha: str | None = None
    closed_at: dt.datetime | None = None
    merged_at: dt.datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshDashboard(Message):
    """An attempt of the repository finished or published: re-render its dashboard issue
    (``.arcs.yml`` ``dashboard_issue``), unless a render since ``requested_at`` covers it."""

    ACTOR: ClassVar[ActorName] = "refresh_dashboard"
    # Re-rendering one issue from the store: cheap; a later refresh covers a dropped one.
    OPTIONS: ClassVar[ActorOptions] = ActorOptions(
        queue="arcs-github", max_retries=3, time_limit=2 * _MINUTE_MS, max_age=6 * _HOUR_MS
    )
    repo: str
    installation_id: int | None = None
    delivery_id: str | None = None
    requested_at: dt.datetime | None = None
    """When the change to show happened (``None``: always render)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchChecks(Message):
    """The checks on the head of an ARCS pull request changed state (a workflow run or a check
    suite waits for approval, or completed): its status comment says so, in place."""

    ACTOR: ClassVar[ActorName] = "watch_checks"
    # Editing one comment line: cheap, and stale once a newer event came (max_age).
    OPTIONS: ClassVar[ActorOptions] = ActorOptions(
        queue="arcs-github", max_retries=4, time_limit=2 * _MINUTE_MS, max_age=24 * _HOUR_MS
    )
    repo: str
    head_sha: str
    head_branch: str
    state: ChecksState
    installation_id: int | None = None
    delivery_id: str | None = None
    pull_requests: tuple[int, ...] = ()
    """The pull requests the event names (may be empty: a run started before the PR existed)."""
    source: CiSource | None = None
    name: str | None = None
    """The workflow or checks app."""
    html_url: str | None = None
    """The run (its page carries the "Approve and run" button)."""
    conclusion: str | None = None


M = TypeVar("M", bound=Message)

MESSAGES: Mapping[ActorName, type[Message]] = {
    cls.ACTOR: cls
    for cls in (
        RefreshIndex,
        DropIndex,
        RepairCiFailure,
        RepairIssue,
        HandleCommand,
        PublishResult,
        RecordPrOutcome,
        WatchChecks,
        RefreshDashboard,
    )
}
"""The message class of each actor."""

ACTOR_OPTIONS: Mapping[ActorName, ActorOptions] = {name: cls.OPTIONS for name, cls in MESSAGES.items()}
"""Every actor states its queue, retry, time and age limits: repairs are long and expensive, so they are
retried rarely and never after hitting their time limit; GitHub writes are short and retried more
(GitHub has bad minutes); a repair request older than a day is stale and dropped with an event."""


# --- the pre-typed shape (v1 dicts), for one release ----------------------------------------

_V1_RENAMED: Mapping[ActorName, Mapping[str, str]] = {"handle_command": {"issue_number": "number"}}
"""v1 ``args`` key -> message field, where they differ."""
_CI_KEYS = tuple(f.name for f in dataclasses.fields(CiRef))


def _from_v1_args(actor: ActorName, args: Mapping[str, Any]) -> tuple[Message, Resume | None]:
    """Decode a pre-typed ``args`` dict (see the module docstring)."""
    data = {_V1_RENAMED.get(actor, {}).get(k, k): v for k, v in args.items()}
    resume = None
    if data.get("deferred_attempt") is not None:
        when = {"attempt_id": data["deferred_attempt"], "until": data.get("deferred_until")}
        resume = decode(Resume, when, f"{actor}.deferred")
    cls = MESSAGES[actor]
    if cls is RepairCiFailure:
        data["ci"] = {k: data[k] for k in _CI_KEYS if k in data}
    return decode(cls, data, actor, legacy=True), resume


def _v1_args(message: Message, resume: Resume | None) -> dict[str, Any]:
    """The pre-typed ``args`` dict of ``message`` (:attr:`Envelope.args`)."""
    data = message.to_json()
    ci = data.pop("ci", None)
    if isinstance(ci, dict):
        data.update(ci)
    renamed = {new: old for old, new in _V1_RENAMED.get(message.ACTOR, {}).items()}
    data = {renamed.get(k, k): v for k, v in data.items()}
    if resume is not None:
        data["deferred_attempt"] = resume.attempt_id
        data["deferred_until"] = resume.until.isoformat()
    return data


@dataclass(frozen=True, slots=True)
class LegacyArgs:
    """An envelope's body given as a pre-typed ``args`` dict (``JobRequest(actor, args)``, one
    release). Not validated until a worker decodes it (:attr:`Envelope.message`)."""

    args: Mapping[str, Any]


# --- the envelope ------------------------------------------------------------------------------


def _context(raw: object) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise MessageInvalid(f"context: expected an object, got {what(raw)}")
    return {str(k): str(v) for k, v in raw.items() if v is not None}


def _key(raw: object) -> str | None:
    if raw is not None and not isinstance(raw, str):
        raise MessageInvalid(f"idempotency_key: expected a string, got {what(raw)}")
    return raw


def _actor(raw: object) -> ActorName:
    for name in MESSAGES:
        if raw == name:
            return name
    raise MessageInvalid(f"actor: unknown actor {raw!r}")


_ENVELOPE_KEYS = frozenset({"actor", "v", "context", "idempotency_key", "body", "resume"})


@dataclass(frozen=True, slots=True, init=False)
class Envelope:
    """One unit of background work: the message and what travels with it.

    ``context`` holds the structlog context (see :data:`CONTEXT_KEYS`); ``idempotency_key``
    identifies the attempt so at-least-once delivery never produces two attempts (stored with a
    unique constraint by the worker); ``resume`` names the attempt a delayed message takes over.

    Build one with :meth:`of`. ``Envelope(actor, args, context, idempotency_key)`` (the old
    ``JobRequest`` call) still takes a pre-typed ``args`` dict for one release.
    """

    actor: ActorName
    body: Message | LegacyArgs
    v: int
    context: Mapping[str, str]
    idempotency_key: str | None
    resume: Resume | None

    def __init__(
        self,
        actor: ActorName,
        args: Mapping[str, Any] | None = None,
        context: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
        *,
        body: Message | None = None,
        v: int = VERSION,
        resume: Resume | None = None,
    ) -> None:
        if body is not None and args is not None:
            raise ValueError("give a message body or pre-typed args, not both")
        if body is not None and actor != body.ACTOR:
            raise ValueError(f"a {type(body).__name__} is not a {actor} message")
        put = object.__setattr__  # frozen: __init__ is the only writer
        put(self, "actor", actor)
        put(self, "body", body if body is not None else LegacyArgs(dict(args or {})))
        put(self, "v", v)
        put(self, "context", dict(context or {}))
        put(self, "idempotency_key", idempotency_key)
        put(self, "resume", resume)

    @classmethod
    def of(
        cls,
        message: Message,
        *,
        context: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
        resume: Resume | None = None,
    ) -> Envelope:
        """The envelope of ``message`` (its actor is the message's)."""
        return cls(
            message.ACTOR, context=context, idempotency_key=idempotency_key, body=message, resume=resume
        )

    @property
    def message(self) -> Message:
        """The typed message (a pre-typed body is decoded here: :class:`MessageInvalid`)."""
        if isinstance(self.body, LegacyArgs):
            return _from_v1_args(self.actor, self.body.args)[0]
        return self.body

    def expect(self, cls: type[M]) -> M:
        """The typed message, which must be a ``cls`` (:class:`MessageInvalid` otherwise)."""
        message = self.message
        if not isinstance(message, cls):
            raise MessageInvalid(f"{self.actor}: expected a {cls.__name__}, got a {type(message).__name__}")
        return message

    def typed(self) -> Envelope:
        """This envelope with a typed body: a pre-typed one is decoded, its ``deferred_*`` keys
        becoming :attr:`resume` (:class:`MessageInvalid` if bad). A typed envelope is itself."""
        if not isinstance(self.body, LegacyArgs):
            return self
        message, resume = _from_v1_args(self.actor, self.body.args)
        return Envelope.of(message, context=self.context, idempotency_key=self.idempotency_key, resume=resume)

    @property
    def args(self) -> dict[str, Any]:
        """The pre-typed v1 ``args`` dict (one release: a view for failure reports and tests;
        the application functions read :attr:`message`)."""
        if isinstance(self.body, LegacyArgs):
            return dict(self.body.args)
        return _v1_args(self.body, self.resume)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-able form (the queue message and the outbox row)."""
        if isinstance(self.body, LegacyArgs):
            # The shape a worker decodes as v1 (it validates it then).
            return {
                "actor": self.actor,
                "args": dict(self.body.args),
                "context": dict(self.context),
                "idempotency_key": self.idempotency_key,
            }
        return {
            "actor": self.actor,
            "v": self.v,
            "context": dict(self.context),
            "idempotency_key": self.idempotency_key,
            "body": self.body.to_json(),
            "resume": encode_fields(self.resume) if self.resume is not None else None,
        }

    def as_dict(self) -> dict[str, Any]:
        """Same as :meth:`to_json` (the old name)."""
        return self.to_json()

    @classmethod
    def from_json(cls, data: object) -> Envelope:
        """Decode and validate a message; a pre-typed one as v1 (:class:`MessageInvalid` if bad)."""
        if not isinstance(data, Mapping):
            raise MessageInvalid(f"a message is a JSON object, not {what(data)}")
        actor = _actor(data.get("actor"))
        context = _context(data.get("context"))
        key = _key(data.get("idempotency_key"))
        if "args" in data and "body" not in data and "v" not in data:
            args = data["args"] if data["args"] is not None else {}
            if not isinstance(args, Mapping):
                raise MessageInvalid(f"{actor}: args: expected an object, got {what(args)}")
            message, resume = _from_v1_args(actor, args)
            return cls.of(message, context=context, idempotency_key=key, resume=resume)
        unknown = sorted(str(k) for k in data if k not in _ENVELOPE_KEYS)
        if unknown:
            raise MessageInvalid(f"{actor}: unknown envelope field(s) {', '.join(unknown)}")
        for needed in ("v", "body"):
            if needed not in data:
                raise MessageInvalid(f"{actor}: {needed} is missing")
        v = data["v"]
        if not isinstance(v, int) or isinstance(v, bool):
            raise MessageInvalid(f"{actor}: v: expected an integer, got {what(v)}")
        message = MESSAGES[actor].from_json(data["body"], v=v)
        raw_resume = data.get("resume")
        resume = decode(Resume, raw_resume, f"{actor}.resume") if raw_resume is not None else None
        return cls(actor, context=context, idempotency_key=key, body=message, v=v, resume=resume)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Envelope:
        """A best-effort view for logs and failure reports (never to run): :meth:`from_json`, or,
        for a message that does not validate, its fields undecoded (:attr:`args`)."""
        try:
            return cls.from_json(data)
        except MessageInvalid:
            actor = _actor(data.get("actor"))
            raw = data.get("args") if "args" in data else data.get("body")
            args = raw if isinstance(raw, Mapping) else {}
            return cls(actor, args, _context(data.get("context")), _key(data.get("idempotency_key")))


JobRequest = Envelope
"""The old name (jobs/broker.py, the application functions' signatures, bot/web ports), for one release."""
