"""Asking for the repository dashboard issue to be refreshed (:mod:`jobs.dashboard_issue`): a
``refresh_dashboard`` job :data:`DEBOUNCE` after an attempt finished or was published.

Apart from :mod:`jobs.dashboard_issue` so that :mod:`jobs.run` can send it without importing the
job (which needs :mod:`jobs.run`); given the queue's callables, not the ``Deps``, for the same reason.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Final

import structlog

from jobs.messages import Envelope, RefreshDashboard

log = structlog.get_logger("arcs.pipeline")

__all__ = ["DEBOUNCE", "schedule_dashboard"]

DEBOUNCE: Final = dt.timedelta(seconds=60)
"""How long after a change the dashboard is re-rendered: the changes of that minute share one edit
(the job skips when a render after its change exists already)."""


def schedule_dashboard(
    enqueue: Callable[[Envelope], None],
    enqueue_later: Callable[[Envelope, dt.timedelta], None] | None,
    now: dt.datetime,
    context: Mapping[str, str],
    *,
    repo: str,
    installation_id: int | None,
) -> None:
    """Ask for the dashboard of ``repo`` to be refreshed :data:`DEBOUNCE` after ``now`` (right away
    on a worker that cannot delay: ``enqueue_later`` None). The job itself finds out whether
    ``.arcs.yml`` on the default branch wants a dashboard. A failure to send is logged: the
    attempt's own outcome stands."""
    message = RefreshDashboard(repo=repo, installation_id=installation_id, requested_at=now)
    job = Envelope.of(message, context=dict(context))
    try:
        if enqueue_later is not None:
            enqueue_later(job, DEBOUNCE)
        else:
            enqueue(job)
    except Exception as exc:
        log.warning("dashboard.not_scheduled", error=f"{type(exc).__name__}: {exc}"[:300])
