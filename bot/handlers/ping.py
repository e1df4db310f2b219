"""``ping`` (sent when the webhook is created): acknowledged, nothing to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.handlers import present
from bot.routing import Decision, RouteContext, Router, ignore

if TYPE_CHECKING:
    from githubkit_schemas.latest.models import WebhookPing

router = Router("ping")


@router.on("ping")
def ping(event: WebhookPing, ctx: RouteContext) -> Decision:
    """Answer GitHub's ping (the zen line is echoed in the reason)."""
    zen = present(event.zen)
    return ignore(f"pong: {zen}" if zen else "pong")
