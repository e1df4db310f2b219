"""The README's advice on the Action's push token (issue #28, item 4): the steps parse, mint a
GitHub App token with ``actions/create-github-app-token`` pinned by commit sha, and pass it to the
action's real ``github-token`` input; the text says why ``GITHUB_TOKEN`` is not enough."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _action_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## GitHub Action\n")
    return text[start : text.index("\n## ", start + 5)]


def _token_steps() -> list[dict[str, Any]]:
    (block,) = re.findall(r"```yml\n(.*?)```", _action_section(), re.DOTALL)
    steps: list[dict[str, Any]] = yaml.safe_load(block)
    return steps


def test_the_token_steps_pin_the_app_token_action_and_feed_the_real_input() -> None:
    mint, arcs = _token_steps()
    assert re.fullmatch(r"actions/create-github-app-token@[0-9a-f]{40}", mint["uses"])  # pinned by sha
    assert set(mint["with"]) == {"client-id", "private-key"}
    assert "secrets." in mint["with"]["private-key"]
    inputs = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"]
    assert set(arcs["with"]) <= set(inputs)
    assert arcs["with"]["github-token"] == f"${{{{ steps.{mint['id']}.outputs.token }}}}"


def test_the_section_says_why() -> None:
    text = " ".join(_action_section().split())
    assert "Which token to give (`github-token`)" in text
    assert "GitHub starts no workflow for a push or a pull request made with it" in text
    assert "personal access token" in text
