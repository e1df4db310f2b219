"""``ping`` (sent when the webhook is created): acknowledged, nothing to do."""

from __future__ import annotations

from bot.handlers.views import Ping
from bot.routing import Decision, RouteContext, Router, ignore

router = Router("ping")


@router.on("ping", view=Ping)
def ping(event: Ping, ctx: RouteContext) -> Decision:
    """Answer GitHub's ping (the zen line is echoed in the reason)."""
    zen = event.zen
    return ignore(f"pong: {zen}" if zen else "pong")
