"""One module per webhook concern; each exposes ``router`` (see :mod:`bot.routing`).

Handlers read the payload through the views of :mod:`bot.handlers.views` (only the fields they use;
informational fields a payload lacks are passed on as null).

Handlers return typed messages (:mod:`jobs.messages`, the contract with ``jobs.actors``) in
envelopes built by :meth:`bot.routing.RouteContext.job`: the envelope's ``context`` holds the
structlog keys and its ``idempotency_key`` identifies the attempt (the worker stores it with a
unique constraint). :func:`bot.handlers.registry.build_router` composes the routers.

``RepairCiFailure`` (:mod:`~bot.handlers.workflow_run`, :mod:`~bot.handlers.check_suite`)
    Key: ``ci:{repo}:workflow_run:{run_id}`` or ``ci:{repo}:checks:{app_id}:{head_sha}`` (a failed
    check run and its failed suite coalesce).
``RepairIssue`` (:mod:`~bot.handlers.issues`)
    Key: ``issue:{repo}#{number}:{delivery_id}`` (labelling again is a new request).
``HandleCommand`` (:mod:`~bot.handlers.issue_comment`, :mod:`~bot.handlers.check_run_action`,
:mod:`~bot.handlers.review_comment`)
    Key: ``cmd:{repo}:{comment_id}`` (``…:edited`` for refusals); a check run's button
    ``action:{repo}:{check_run_id}:{identifier}``; a review comment ``review:{repo}:{comment_id}``.
``RefreshIndex`` (:mod:`~bot.handlers.installation`, :mod:`~bot.handlers.push`)
    Key: ``index:{repo}:full:{delivery_id}`` or ``index:{repo}:incremental:{after}``.
``DropIndex`` (:mod:`~bot.handlers.installation`)
    Key: ``index-drop:{repo}:{delivery_id}``.
``RecordPrOutcome`` (:mod:`~bot.handlers.pull_request`)
    Key: ``pr-outcome:{repo}#{number}:{closed_at}``.
``WatchChecks`` (:mod:`~bot.handlers.checks_watch`, from ``workflow_run`` and ``check_suite``)
    Key: ``checks:{repo}:{source}:{run or suite id}:{state}``.
"""

from __future__ import annotations

from datetime import datetime


def iso(value: datetime | None) -> str | None:
    """A timestamp as ISO 8601 (JSON-able), or ``None``."""
    return value.isoformat() if value is not None else None


def app_slug(bot_login: str) -> str:
    """The App's slug from its bot account (``arcs[bot]`` -> ``arcs``): the ``@`` handle people
    mention it by and the name its check runs carry."""
    return bot_login.strip().removesuffix("[bot]")
