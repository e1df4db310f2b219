"""Every example payload of the pinned ``@octokit/webhooks-examples``, signed and posted: all 2xx.

The package's examples (github.com and GitHub Enterprise Server 3.1-3.5) are vendored in
tests/fixtures/webhooks/octokit-webhooks-examples.json.gz (scripts/update-webhook-fixtures; the
version and sha256 digests are in the README next to it). GitHub does not retry a refused
delivery by itself: a 400 for a field the bot never reads loses the event.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from starlette.testclient import TestClient

from bot.handlers.registry import build_router
from bot.settings import Settings
from bot.web.app import create_app
from bot.web.fakes import ListEnqueuer, MemoryDeliveryStore
from tests.bot.webhook_support import FIXTURES, encode, headers, with_secret

BUNDLE = FIXTURES / "octokit-webhooks-examples.json.gz"
VERSION = "7.6.1"
COUNTS = {
    "api.github.com": 329,
    "ghes-31": 49,
    "ghes-32": 49,
    "ghes-33": 50,
    "ghes-34": 124,
    "ghes-35": 125,
}
"""Examples per flavour in 7.6.1: 726 in all (a missing or truncated bundle fails the count)."""


@cache
def bundle() -> dict[str, Any]:
    """The vendored package (parsed once per session)."""
    data: dict[str, Any] = json.loads(gzip.decompress(BUNDLE.read_bytes()))
    return data


def examples(flavour: str) -> list[tuple[str, int, dict[str, Any]]]:
    """``(event, index, payload)`` of every example of ``flavour``."""
    return [
        (entry["name"], i, payload)
        for entry in bundle()["flavours"][flavour]
        for i, payload in enumerate(entry["examples"])
    ]


def test_the_bundle_is_the_pinned_package_as_recorded() -> None:
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    recorded = re.search(r"`octokit-webhooks-examples\.json\.gz` sha256: `([0-9a-f]{64})`", readme)
    assert recorded is not None
    assert hashlib.sha256(BUNDLE.read_bytes()).hexdigest() == recorded.group(1)
    data = bundle()
    assert (data["package"], data["version"]) == ("@octokit/webhooks-examples", VERSION)
    assert f"pinned to {VERSION}" in readme and data["tarball_sha256"] in readme
    assert {name: len(examples(name)) for name in data["flavours"]} == COUNTS
    assert sum(COUNTS.values()) == 726


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    app = create_app(with_secret(settings), store=MemoryDeliveryStore(), enqueuer=ListEnqueuer())
    with TestClient(app) as test_client:
        yield test_client


@pytest.mark.parametrize("flavour", sorted(COUNTS))
def test_every_example_is_accepted(client: TestClient, flavour: str) -> None:
    router = build_router()
    refused: list[str] = []
    unread: list[str] = []
    answered = 0
    for event, index, payload in examples(flavour):
        body = encode(payload)
        reply = client.post(
            "/webhooks/github",
            content=body,
            headers=headers(event, body, delivery=f"{flavour}-{event}-{index}"),
        )
        answered += 1
        action = payload.get("action")
        what = f"{event}.{action} #{index}"
        if not 200 <= reply.status_code < 300:
            refused.append(f"{what}: {reply.status_code} {reply.json().get('reason')}")
            continue
        answer = reply.json()
        assert answer["status"] in ("queued", "ignored"), (what, answer)
        # A routed event.action reached its handler (its own reason), not the catch-all.
        routed = router.route_for(event, action if isinstance(action, str) else None) is not None
        if routed and answer["status"] == "ignored" and "is not handled" in (answer["reason"] or ""):
            unread.append(f"{what}: {answer['reason']}")
    assert refused == []
    assert unread == []
    assert answered == COUNTS[flavour]
