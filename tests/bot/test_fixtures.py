"""The webhook fixtures: real payloads (pinned npm package), each readable by its handler's view."""

from __future__ import annotations

import json

import pytest

from bot.handlers.registry import build_router
from bot.handlers.views import read
from tests.bot.webhook_support import FIXTURES, event_of

STEMS = sorted(p.name.removesuffix(".json") for p in FIXTURES.glob("*.json"))


@pytest.mark.parametrize("stem", STEMS)
def test_fixture_is_read_by_the_view_of_its_route(stem: str) -> None:
    payload = json.loads((FIXTURES / f"{stem}.json").read_text(encoding="utf-8"))
    action = payload.get("action")
    route = build_router().route_for(event_of(stem), action if isinstance(action, str) else None)
    if route is None:
        assert stem == "issues.opened"  # the one unrouted example (the ignored path)
        return
    read(route.view, payload)  # raises PayloadInvalid when a field the handler needs is absent


def test_readme_documents_every_fixture_and_the_pinned_version() -> None:
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert "@octokit/webhooks-examples" in readme and "pinned to 7.6.1" in readme
    for stem in STEMS:
        assert f"`{stem}.json`" in readme
    assert "`octokit-webhooks-examples.json.gz` sha256:" in readme
