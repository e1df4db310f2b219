"""Job requests: what the web side enqueues and the workers execute (JSON-serializable values)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ActorName = Literal[
    "refresh_index",
    "repair_ci_failure",
    "repair_issue",
    "handle_command",
    "record_pr_outcome",
    "publish_result",
]

CONTEXT_KEYS = ("delivery_id", "event", "installation_id", "repo", "attempt_id")
"""Log context carried from the webhook into the worker (rebound there with structlog)."""


@dataclass(frozen=True, slots=True)
class JobRequest:
    """One unit of background work.

    ``args`` must be JSON-serializable; ``context`` holds the structlog context (see
    :data:`CONTEXT_KEYS`); ``idempotency_key`` identifies the attempt so at-least-once delivery
    never produces two attempts (stored with a unique constraint by the worker).
    """

    actor: ActorName
    args: Mapping[str, Any] = field(default_factory=dict)
    context: Mapping[str, str] = field(default_factory=dict)
    idempotency_key: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (the message body)."""
        return {
            "actor": self.actor,
            "args": dict(self.args),
            "context": dict(self.context),
            "idempotency_key": self.idempotency_key,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobRequest:
        """Inverse of :meth:`as_dict`."""
        return cls(
            actor=data["actor"],
            args=dict(data.get("args") or {}),
            context={str(k): str(v) for k, v in (data.get("context") or {}).items()},
            idempotency_key=data.get("idempotency_key"),
        )
