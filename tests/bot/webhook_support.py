"""Helpers for the webhook tests: fixtures from tests/fixtures/webhooks, signing, contexts."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.handlers.registry import build_router
from bot.handlers.views import read
from bot.routing import RouteContext
from bot.settings import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "webhooks"
SECRET = "test-webhook-secret"


def load(stem: str, **patches: Any) -> dict[str, Any]:
    """A fixture payload; ``patches`` map ``"a__b__0__c"`` paths (``__`` separated) to values."""
    data: dict[str, Any] = json.loads((FIXTURES / f"{stem}.json").read_text(encoding="utf-8"))
    for path, value in patches.items():
        node: Any = data
        parts = path.split("__")
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        last = parts[-1]
        if isinstance(node, list):
            node[int(last)] = copy.deepcopy(value)
        else:
            node[last] = copy.deepcopy(value)
    return data


def event_of(stem: str) -> str:
    """The X-GitHub-Event name of a fixture file stem."""
    return stem.split(".", 1)[0]


def model(stem: str, **patches: Any) -> Any:
    """A (patched) fixture read as the view of the handler its ``event.action`` is routed to."""
    data = load(stem, **patches)
    action = data.get("action")
    route = build_router().route_for(event_of(stem), action if isinstance(action, str) else None)
    assert route is not None, f"{stem} is not routed"
    return read(route.view, data)


def with_secret(settings: Settings, secret: str = SECRET) -> Settings:
    """``settings`` with a webhook secret."""
    return settings.model_copy(update={"webhook_secret": SecretStr(secret)})


def ctx(settings: Settings, stem: str, *, delivery_id: str = "delivery-1", **patches: Any) -> RouteContext:
    """The route context the endpoint would build for a fixture."""
    data = load(stem, **patches)
    inst = data.get("installation") or {}
    repo = data.get("repository") or {}
    return RouteContext(
        settings=settings,
        delivery_id=delivery_id,
        event=event_of(stem),
        installation_id=inst.get("id"),
        repo_full_name=repo.get("full_name"),
    )


def sign(body: bytes, secret: str = SECRET) -> str:
    """The X-Hub-Signature-256 header value."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def encode(payload: dict[str, Any]) -> bytes:
    """JSON bytes as GitHub sends them (compact)."""
    return json.dumps(payload, separators=(",", ":")).encode()


def headers(event: str, body: bytes, *, delivery: str = "delivery-1", secret: str = SECRET) -> dict[str, str]:
    """Headers of a signed delivery."""
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign(body, secret),
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/test",
    }
