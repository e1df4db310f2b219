"""The app's router: one router per concern (:mod:`bot.handlers`), composed.

Here rather than in :mod:`bot.routing`, which every handler imports (for ``Router`` and
``Decision``): composing the handlers there made routing and the handlers a cycle.
"""

from __future__ import annotations

from bot.handlers import (
    check_run_action,
    check_suite,
    installation,
    issue_comment,
    issues,
    ping,
    pull_request,
    push,
    review_comment,
    workflow_run,
)
from bot.routing import Router

CONCERNS = (
    workflow_run,
    check_suite,
    check_run_action,
    issues,
    issue_comment,
    review_comment,
    installation,
    push,
    pull_request,
    ping,
)
"""The handler modules, each with its ``router``."""


def build_router() -> Router:
    """Compose one router per concern into the app's router (overlapping routes are a bug)."""
    app = Router("arcs")
    for module in CONCERNS:
        app.include(module.router)
    return app
