"""Webhook routing: ``(event, action)`` -> a pure handler -> the jobs to enqueue.

Each concern has its own module under :mod:`bot.handlers` with its own :class:`Router`;
:func:`bot.handlers.registry.build_router` composes them (this module imports no handler: they
import it). Each route names the view its handler reads
(:mod:`bot.handlers.views`: only the fields the handler uses); :meth:`Router.route` reads the
payload as that view (:class:`~bot.handlers.views.PayloadInvalid` names a needed field that is
missing or mistyped) and calls the handler with it and a :class:`RouteContext`. Handlers return a
:class:`Decision`: the :class:`~jobs.messages.Envelope` s (typed messages) to enqueue, or why
nothing is enqueued. They do no I/O, so they are unit-testable without HTTP, a database or a broker.

What handlers deliberately do *not* decide (it needs the GitHub API, which the request path never
calls): the repository's ``.arcs.yml`` (watched branches, the trigger label), the retry cap on
``arcs/*`` branches and the permission of a commenter. Handlers use the defaults (every branch)
and enqueue every issue label (a repository may name its own); the worker re-checks: a label that
is not the repository's returns silently, other refusals get a message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bot.handlers.views import View, read
from bot.settings import Settings
from jobs.messages import Envelope, Message

DEFAULT_LABEL = "arcs"
"""The issue label that asks ARCS for a fix unless a repository's ``.arcs.yml`` names another one
(the worker decides; the web side enqueues every label)."""

ARCS_BRANCH_PREFIX = "arcs/"
"""Branches ARCS pushes its fixes to; CI failures there are retries, capped by the worker."""


@dataclass(frozen=True, slots=True)
class RouteContext:
    """What a handler knows besides the event: settings and the delivery's identity."""

    settings: Settings
    delivery_id: str
    event: str
    installation_id: int | None = None
    repo_full_name: str | None = None

    def log_context(self) -> dict[str, str]:
        """The structlog context carried into the worker (see ``jobs.messages.CONTEXT_KEYS``)."""
        ctx = {"delivery_id": self.delivery_id, "event": self.event}
        if self.installation_id is not None:
            ctx["installation_id"] = str(self.installation_id)
        if self.repo_full_name:
            ctx["repo"] = self.repo_full_name
        return ctx

    def job(self, message: Message, *, key: str) -> Envelope:
        """The envelope of ``message``: its idempotency ``key`` and the log context (with the
        message's repository, which may differ from the delivery's: installation events)."""
        context = self.log_context()
        if message.repo:
            context["repo"] = message.repo
        return Envelope.of(message, context=context, idempotency_key=key)


@dataclass(frozen=True, slots=True)
class Decision:
    """A handler's answer: jobs to enqueue, or an empty tuple and the reason nothing is done."""

    jobs: tuple[Envelope, ...] = ()
    reason: str | None = None

    @property
    def queued(self) -> bool:
        """Whether there is anything to enqueue."""
        return bool(self.jobs)


def enqueue(*jobs: Envelope) -> Decision:
    """A decision that enqueues ``jobs``."""
    return Decision(jobs=tuple(jobs))


def ignore(reason: str) -> Decision:
    """A decision that acknowledges the event and does nothing (``reason`` is recorded)."""
    return Decision(reason=reason)


Handler = Callable[[Any, RouteContext], Decision]
V = TypeVar("V", bound=View)


@dataclass(frozen=True, slots=True)
class Route:
    """A handler and the view of the payload it reads."""

    handler: Handler
    view: type[View]


@dataclass
class Router:
    """Maps ``(event, action)`` to a handler; ``action=None`` matches every action of the event."""

    name: str
    _routes: dict[tuple[str, str | None], Route] = field(default_factory=dict)

    def on(
        self, event: str, *actions: str, view: type[V]
    ) -> Callable[[Callable[[V, RouteContext], Decision]], Callable[[V, RouteContext], Decision]]:
        """Decorator: route ``event`` (the given ``actions``, or all) to a handler of ``view``."""

        def register(fn: Callable[[V, RouteContext], Decision]) -> Callable[[V, RouteContext], Decision]:
            for action in actions or (None,):
                key = (event, action)
                if key in self._routes:
                    raise ValueError(f"{self.name}: {event}.{action or '*'} is already routed")
                self._routes[key] = Route(fn, view)
            return fn

        return register

    def include(self, other: Router) -> None:
        """Add every route of ``other`` (a concern's router) to this one; overlaps are a bug."""
        for key, found in other._routes.items():
            if key in self._routes:
                raise ValueError(f"{self.name}: {key[0]}.{key[1] or '*'} routed by two routers")
            self._routes[key] = found

    def events(self) -> frozenset[str]:
        """Every event name with at least one handler."""
        return frozenset(event for event, _ in self._routes)

    def routes(self) -> Iterator[tuple[str, str | None]]:
        """Every registered ``(event, action)`` pair."""
        return iter(sorted(self._routes, key=lambda k: (k[0], k[1] or "")))

    def route_for(self, event: str, action: str | None) -> Route | None:
        """The route of ``event.action`` (an exact action first, then the event's catch-all)."""
        return self._routes.get((event, action)) or self._routes.get((event, None))

    def handler_for(self, event: str, action: str | None) -> Handler | None:
        """The handler of ``event.action`` (``None``: not routed)."""
        found = self.route_for(event, action)
        return found.handler if found is not None else None

    def route(
        self, event: str, action: str | None, payload: Mapping[str, Any], ctx: RouteContext
    ) -> Decision:
        """Read ``payload`` as the matching handler's view and run it; ignore unrouted events.

        Raises :class:`~bot.handlers.views.PayloadInvalid` when a field the handler needs is
        missing or of the wrong type (nothing else of the payload is looked at).
        """
        found = self.route_for(event, action)
        if found is None:
            what = f"{event}.{action}" if action else event
            return ignore(f"{what} is not handled")
        return found.handler(read(found.view, payload), ctx)
