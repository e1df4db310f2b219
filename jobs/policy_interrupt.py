"""The store-backed :class:`jobs.repair.ports.Interrupt` of a running repair.

The repair loop asks it before reproduction and before every round. It answers a reason when
someone asked this attempt to stop (``/arcs stop`` sets ``attempts.cancel_requested_at`` and
``cancel_reason``) or when an org admin paused the owner or the repository on the dashboard
(the merged policy of :func:`jobs.policy.merge`). Reading the store is the only effect; a store
that cannot be read is logged and answered with None (the next check tries again: a database
hiccup must not end a repair).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from jobs.policy import merge, paused_reason

if TYPE_CHECKING:
    from jobs.ports import AttemptStore

log = structlog.get_logger("arcs.policy")

STOP_REASON = "stopped on request"
"""The reason when ``cancel_requested_at`` is set without a ``cancel_reason``."""


class StoreInterrupt:
    """Stop when the attempt is cancelled or its owner/repository is paused (see the module)."""

    def __init__(self, store: AttemptStore, attempt_id: int, owner: str, repo: str) -> None:
        self.store = store
        self.attempt_id = attempt_id
        self.owner = owner
        self.repo = repo
        self.checks = 0

    def check(self) -> str | None:
        """``stopped by @alice`` / ``ARCS was paused for octo by an org admin`` / None."""
        self.checks += 1
        try:
            attempt = self.store.get_attempt(self.attempt_id)
            if attempt is not None and attempt.cancel_requested_at is not None:
                return attempt.cancel_reason or STOP_REASON
            owner_row, repo_row = self.store.policy_rows(self.owner, self.repo)
            policy = merge(self.owner, self.repo, owner_row, repo_row)
        except Exception as exc:  # a transient database problem: ask again next round
            log.warning("interrupt.check_failed", error=f"{type(exc).__name__}: {exc}"[:300])
            return None
        if policy.paused:
            return paused_reason(policy, during=True)
        return None


__all__ = ["STOP_REASON", "StoreInterrupt"]
