"""One module per webhook concern; each exposes ``router`` (see :mod:`bot.routing`).

Handlers read the payload through the views of :mod:`bot.handlers.views` (only the fields they use;
informational fields a payload lacks are passed on as null).

Job arguments (the contract with ``jobs.actors``). Every job carries ``repo`` (``owner/name``),
``installation_id`` (int or null) and ``delivery_id``; its ``context`` holds the structlog keys and
its ``idempotency_key`` identifies the attempt (the worker stores it with a unique constraint).

``repair_ci_failure`` (:mod:`~bot.handlers.workflow_run`, :mod:`~bot.handlers.check_suite`)
    ``source`` (``workflow_run`` | ``check_suite`` | ``check_run``), ``head_sha``, ``head_branch``
    (null when GitHub omits it), ``conclusion``, ``html_url``, ``pull_requests`` (numbers),
    ``retry_of`` (the ``arcs/*`` branch when the failure is on ARCS's own branch, else null: the
    worker enforces the retry cap), ``watched_branches_checked`` (always false: the worker reads
    ``.arcs.yml``), and per source ``run_id``/``run_attempt``/``workflow_id``/``workflow_name``
    (workflow_run), ``check_suite_id``/``app_id``/``app_slug`` (check_suite, check_run) and
    ``check_run_id``/``check_name`` (check_run). Key: ``ci:{repo}:workflow_run:{run_id}`` or
    ``ci:{repo}:checks:{app_id}:{head_sha}`` (a failed check run and its failed suite coalesce).
``repair_issue`` (:mod:`~bot.handlers.issues`)
    ``issue_number``, ``title``, ``label``, ``sender``, ``html_url``. Key:
    ``issue:{repo}#{number}:{delivery_id}`` (labelling again is a new request).
``handle_command`` (:mod:`~bot.handlers.issue_comment`)
    ``issue_number``, ``is_pull_request``, ``issue_author``, ``comment_id``, ``comment_url``,
    ``author``, ``author_association`` (informational only: the worker checks the permission
    through the API), ``command`` (:meth:`bot.commands.Command.as_dict` or null), ``error`` (a
    message to post, or null), ``refusal`` (``edited`` or null: reply politely, run nothing).
    Key: ``cmd:{repo}:{comment_id}`` (``…:edited`` for refusals).
``refresh_index`` (:mod:`~bot.handlers.installation`, :mod:`~bot.handlers.push`)
    ``mode`` (``full`` | ``incremental``), ``ref``, ``before``, ``after`` (null for full), ``reason``.
    Key: ``index:{repo}:full:{delivery_id}`` or ``index:{repo}:incremental:{after}``.
``record_pr_outcome`` (:mod:`~bot.handlers.pull_request`)
    ``number``, ``merged``, ``head_ref``, ``head_sha``, ``closed_at``,
    ``merged_at`` (ISO 8601 or null). Key: ``pr-outcome:{repo}#{number}:{closed_at}``.
"""

from __future__ import annotations

from datetime import datetime


def iso(value: datetime | None) -> str | None:
    """A timestamp as ISO 8601 (JSON-able), or ``None``."""
    return value.isoformat() if value is not None else None
