"""The webhook fixtures: real payloads (pinned npm package) that githubkit's parser accepts."""

from __future__ import annotations

import json

import pytest
from githubkit.webhooks import parse_obj

from tests.bot.webhook_support import FIXTURES, event_of

STEMS = sorted(p.name.removesuffix(".json") for p in FIXTURES.glob("*.json"))


@pytest.mark.slow  # githubkit's per-event unions take seconds to import on first use
@pytest.mark.parametrize("stem", STEMS)
def test_fixture_validates_with_githubkits_parser(stem: str) -> None:
    parse_obj(event_of(stem), json.loads((FIXTURES / f"{stem}.json").read_text(encoding="utf-8")))


def test_readme_documents_every_fixture_and_the_pinned_version() -> None:
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert "@octokit/webhooks-examples" in readme and "pinned to 7.6.1" in readme
    for stem in STEMS:
        assert f"`{stem}.json`" in readme
