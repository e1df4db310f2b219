"""``GET /metrics``: Prometheus text read from the store at scrape time.

A custom collector aggregates in SQL on every scrape (a handful of ``GROUP BY`` / ``SUM``
queries, bounded whatever the table sizes), so every gunicorn worker and every host answers the
same numbers: nothing is counted in process memory. No label carries an org or a repository name.

Metrics:

* ``arcs_attempts_total{status}`` (counter): finished repair attempts by outcome
  (``fixed``, ``no_fix``, ``refused``, ``error``, ``skipped``).
* ``arcs_attempts_reverted_total`` (counter): of the ``no_fix`` attempts, those that opened a
  revert pull request of the culprit commit (``on_no_fix: revert``; already counted in
  ``arcs_attempts_total{status="no_fix"}``, never as a fix).
* ``arcs_attempts_in_progress{status}`` (gauge): attempts ``queued`` or ``running``.
* ``arcs_queue_depth`` (gauge): messages waiting in the broker when the enqueuer can tell
  (:class:`bot.web.ports.QueueDepth`, or dramatiq's Redis/stub broker), else the queued attempts;
  the help text of each scrape says which.
* ``arcs_job_duration_seconds`` (histogram): ``finished_at - started_at`` of finished attempts.
* ``arcs_llm_tokens_total``, ``arcs_llm_usd_total`` (counters): LLM use of every attempt.
* ``arcs_webhook_latency_seconds`` (histogram): time to answer each recorded webhook delivery.
* ``arcs_pull_requests{state}`` (gauge: a pull request moves from ``open`` to ``merged`` or
  ``closed``): the pull requests ARCS opened, by current state. It was ``arcs_prs_total`` in 0.1.0,
  renamed because a gauge must not carry a counter's ``_total`` suffix (``promtool check metrics``).

Every name follows Prometheus' naming rules (counters end in ``_total``, nothing else does; base
units; help text): ``tests/bot/dashboard/test_metric_names.py`` checks them as promtool would.

With ``ARCS_METRICS_TOKEN`` set, a scrape needs ``Authorization: Bearer <token>`` (else 401).
A database error answers 503 (the scrape fails visibly rather than reporting zeros).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from sqlalchemy import ColumnElement, case, extract, func, select
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bot.dashboard.queries import REVERT_BRANCH_PREFIX
from bot.settings import Settings
from bot.store.models import TERMINAL_STATUSES, Attempt, Delivery, PullRequest
from bot.web.ports import QueueDepth

if TYPE_CHECKING:
    from bot.store.store import Store

log = structlog.get_logger("arcs.dashboard.metrics")

JOB_DURATION_BUCKETS: tuple[float, ...] = (5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)
"""Seconds: a tier-0 fix takes seconds, an LLM repair with test runs minutes."""
WEBHOOK_LATENCY_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""Seconds: GitHub gives up on a webhook after 10."""
IN_PROGRESS = ("queued", "running")
PR_STATES = ("open", "merged", "closed")

QueueDepthProbe = Callable[[], int | None]


def queue_depth_probe(enqueuer: object | None) -> QueueDepthProbe | None:
    """How to ask ``enqueuer`` for its queue depth, or ``None`` when it cannot tell.

    An enqueuer implementing :class:`~bot.web.ports.QueueDepth` answers itself (the broker
    enqueuer does: Redis and the in-process broker count ready messages; RabbitMQ answers
    ``None`` and the fallback applies).
    """
    if enqueuer is None:
        return None
    if isinstance(enqueuer, QueueDepth):
        return enqueuer.queue_depth
    return None


def _duration_s(dialect: str) -> ColumnElement[Any]:
    if dialect == "sqlite":
        return (func.julianday(Attempt.finished_at) - func.julianday(Attempt.started_at)) * 86400.0
    return extract("epoch", Attempt.finished_at - Attempt.started_at)


def _histogram(
    conn: Any, value: ColumnElement[Any], where: Sequence[ColumnElement[bool]], buckets: Sequence[float]
) -> tuple[list[tuple[str, float]], float]:
    """Cumulative bucket counts (``le``, count) ending with ``+Inf``, and the sum, in one query."""
    columns: list[ColumnElement[Any]] = [
        func.count(),
        func.coalesce(func.sum(value), 0.0),
        *(func.coalesce(func.sum(case((value <= bound, 1), else_=0)), 0) for bound in buckets),
    ]
    row = conn.execute(select(*columns).where(*where)).one()
    count, total, *cumulative = row
    samples = [(str(float(bound)), float(n)) for bound, n in zip(buckets, cumulative, strict=True)]
    samples.append(("+Inf", float(count)))
    return samples, float(total)


class StoreCollector:
    """A prometheus_client collector that reads the store at each scrape."""

    def __init__(self, store: Store, *, queue_depth: QueueDepthProbe | None = None) -> None:
        self.store = store
        self.queue_depth = queue_depth

    def describe(self) -> Iterable[Metric]:
        """Nothing: registering must not query the database."""
        return []

    def _broker_depth(self) -> int | None:
        if self.queue_depth is None:
            return None
        try:
            return self.queue_depth()
        except Exception as exc:  # the broker is down: report the database's view instead
            log.warning("metrics_queue_depth_failed", error=repr(exc))
            return None

    def collect(self) -> Iterable[Metric]:
        """Query the store (raises when the database is unavailable)."""
        engine = self.store.engine
        with engine.connect() as conn:
            by_status = dict(
                conn.execute(select(Attempt.status, func.count()).group_by(Attempt.status)).all()
            )
            reverted = conn.execute(
                select(func.count()).where(
                    Attempt.status == "no_fix", Attempt.branch.like(REVERT_BRANCH_PREFIX + "%")
                )
            ).scalar_one()
            tokens, usd = conn.execute(
                select(
                    func.coalesce(func.sum(Attempt.tokens), 0), func.coalesce(func.sum(Attempt.cost_usd), 0.0)
                )
            ).one()
            durations = _histogram(
                conn,
                _duration_s(engine.dialect.name),
                [
                    Attempt.status.in_(sorted(TERMINAL_STATUSES)),
                    Attempt.started_at.is_not(None),
                    Attempt.finished_at.is_not(None),
                    Attempt.finished_at >= Attempt.started_at,
                ],
                JOB_DURATION_BUCKETS,
            )
            latencies = _histogram(
                conn,
                Delivery.latency_ms / 1000.0,
                [Delivery.latency_ms.is_not(None)],
                WEBHOOK_LATENCY_BUCKETS,
            )
            prs = dict(
                conn.execute(select(PullRequest.state, func.count()).group_by(PullRequest.state)).all()
            )

        finished = CounterMetricFamily(
            "arcs_attempts", "Repair attempts that finished, by outcome (status).", labels=["status"]
        )
        for status in sorted(TERMINAL_STATUSES):
            finished.add_metric([status], float(by_status.get(status, 0)))
        yield finished
        yield CounterMetricFamily(
            "arcs_attempts_reverted",
            "Of the no_fix attempts: those that opened a revert pull request of the culprit commit.",
            value=float(reverted or 0),
        )

        running = GaugeMetricFamily(
            "arcs_attempts_in_progress",
            "Repair attempts not finished yet: queued or running.",
            labels=["status"],
        )
        for status in IN_PROGRESS:
            running.add_metric([status], float(by_status.get(status, 0)))
        yield running

        depth = self._broker_depth()
        if depth is None:
            yield GaugeMetricFamily(
                "arcs_queue_depth",
                "Repair attempts waiting for a worker (queued attempts in the database: the broker "
                "cannot tell its queue length).",
                value=float(by_status.get("queued", 0)),
            )
        else:
            yield GaugeMetricFamily(
                "arcs_queue_depth",
                "Job messages waiting in the broker's queues (ready, not yet taken by a worker).",
                value=float(depth),
            )

        buckets, total = durations
        yield HistogramMetricFamily(
            "arcs_job_duration_seconds",
            "How long finished repair attempts ran (finished_at - started_at).",
            buckets=buckets,
            sum_value=total,
        )
        yield CounterMetricFamily(
            "arcs_llm_tokens", "LLM tokens used by repair attempts.", value=float(tokens or 0)
        )
        yield CounterMetricFamily(
            "arcs_llm_usd", "Estimated LLM spend of repair attempts, in US dollars.", value=float(usd or 0.0)
        )

        buckets, total = latencies
        yield HistogramMetricFamily(
            "arcs_webhook_latency_seconds",
            "Time to answer each recorded webhook delivery (from arrival to the response).",
            buckets=buckets,
            sum_value=total,
        )

        pulls = GaugeMetricFamily(
            "arcs_pull_requests",
            "Pull requests ARCS opened, by current state (a gauge: open ones become merged or closed).",
            labels=["state"],
        )
        for state in PR_STATES:
            pulls.add_metric([state], float(prs.get(state, 0)))
        yield pulls


class MetricsEndpoint:
    """``GET /metrics`` (see the module docstring)."""

    def __init__(
        self, settings: Settings, store: Store, *, queue_depth: QueueDepthProbe | None = None
    ) -> None:
        token = settings.metrics_token
        self._token = (
            token.get_secret_value().encode("utf-8")
            if token is not None and token.get_secret_value()
            else None
        )
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(StoreCollector(store, queue_depth=queue_depth))

    def _authorized(self, request: Request) -> bool:
        if self._token is None:
            return True
        scheme, _, credential = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not credential:
            return False
        return hmac.compare_digest(credential.strip().encode("utf-8"), self._token)

    async def handle(self, request: Request) -> Response:
        """Answer a scrape."""
        if not self._authorized(request):
            return PlainTextResponse(
                "unauthorized: send Authorization: Bearer <ARCS_METRICS_TOKEN>\n",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="arcs-metrics"'},
            )
        try:
            body = await run_in_threadpool(generate_latest, self.registry)
        except Exception as exc:
            log.error("metrics_unavailable", error=repr(exc))
            return PlainTextResponse("metrics unavailable: the database did not answer\n", status_code=503)
        return Response(body, media_type=CONTENT_TYPE_PLAIN_0_0_4, headers={"Cache-Control": "no-store"})
