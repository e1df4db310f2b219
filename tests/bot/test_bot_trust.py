"""A bot never gains trust (issue #22, item 5): an account whose login ends in ``[bot]`` or whose
type is ``Bot`` cannot start a repair, whatever permission or association it carries — a triage
App labels what strangers wrote, and its write access is not a maintainer's reading."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.action.env import read_action_env
from bot.action.event import target_for
from bot.handlers.issues import labeled
from bot.settings import Settings
from bot.store.store import Store
from jobs import pipeline
from jobs.fakes import FakeGitHubGateway, FakeRepairService
from jobs.messages import JobRequest
from jobs.pipeline import Deps
from jobs.ports import is_bot_account
from tests.bot.action.conftest import event
from tests.bot.action.test_env_event import _environ
from tests.bot.webhook_support import ctx, model

STEM = "issues.labeled"
REPO = "octo/ages"


@pytest.mark.parametrize(
    ("login", "user_type", "bot"),
    [
        ("triage-app[bot]", "Bot", True),
        ("Renovate[BOT]", "User", True),  # the login alone decides, whatever the payload's type says
        ("some-app", "Bot", True),
        ("octocat", "User", False),
        ("bot-lover", None, False),
        (None, None, False),
    ],
)
def test_what_counts_as_a_bot(login: str | None, user_type: str | None, bot: bool) -> None:
    assert is_bot_account(login, user_type) is bot


@pytest.mark.parametrize(
    ("login", "user_type"), [("triage-app[bot]", "Bot"), ("labeler[bot]", "User"), ("some-app", "Bot")]
)
def test_an_issue_label_added_by_a_bot_starts_nothing(settings: Settings, login: str, user_type: str) -> None:
    patches: dict[str, Any] = {"sender__login": login, "sender__type": user_type}
    decision = labeled(model(STEM, **patches), ctx(settings, STEM, **patches))
    assert not decision.queued and "bot" in (decision.reason or "")


def test_a_bot_with_admin_permission_is_refused_without_asking_github(
    settings: Settings, tmp_path: Path
) -> None:
    """Belt and braces in the worker: the permission a bot's App holds does not count."""
    gh = FakeGitHubGateway(permissions={"triage-app[bot]": "admin"})
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    try:
        repair = FakeRepairService()
        deps = Deps(
            settings=settings, store=store, github=lambda _i: gh, repair=repair, enqueue=lambda _j: None
        )
        job = JobRequest(
            "repair_issue",
            {"repo": REPO, "installation_id": 7, "issue_number": 42, "title": "t", "label": "arcs",
             "sender": "triage-app[bot]"},
            idempotency_key=f"issue:{REPO}#42:d-1",
        )  # fmt: skip
        assert pipeline.repair_issue(deps, job) == "refused"
        assert not repair.requests and not gh.calls_to("get_permission")
    finally:
        store.close()


def test_the_action_ignores_a_bot_by_its_login_too(tmp_path: Path) -> None:
    payload = event("issue_comment")
    payload["comment"].update(body="/arcs fix", author_association="OWNER")
    payload["comment"]["user"].update(login="helper-app[bot]", type="User")
    target = target_for(read_action_env(_environ(tmp_path, "issue_comment", payload)))
    assert target.decision == "skip" and "bot" in target.reason
