"""check_run.requested_action -> handle_command (a button on ARCS's check run is a command)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.handlers.check_run_action import requested_action
from bot.handlers.views import CheckRunRequestedAction, PayloadInvalid, read
from bot.routing import Decision
from bot.settings import Settings
from jobs.messages import Command, HandleCommand
from tests.bot.webhook_support import ctx, load, model

OURS = "check_run.requested_action.arcs"
FOREIGN = "check_run.requested_action"


@pytest.fixture
def arcs(settings: Settings) -> Settings:
    return settings.model_copy(update={"app_id": "4242"})


def decide(settings: Settings, stem: str = OURS, **patches: Any) -> Decision:
    return requested_action(model(stem, **patches), ctx(settings, stem, **patches))


def test_rerun_is_a_fix_command_by_the_person_who_clicked(arcs: Settings) -> None:
    (job,) = decide(arcs).jobs
    payload = load(OURS)
    run = payload["check_run"]
    assert job.actor == "handle_command"
    assert job.message == HandleCommand(
        repo=payload["repository"]["full_name"],
        installation_id=payload["installation"]["id"],
        delivery_id="delivery-1",
        number=run["pull_requests"][0]["number"],
        is_pull_request=True,
        author=payload["sender"]["login"],
        command=Command(verb="fix"),
        source="check_run",
        attempt_id=1,
    )
    assert job.idempotency_key == f"action:{payload['repository']['full_name']}:{run['id']}:arcs-rerun"


@pytest.mark.parametrize(("identifier", "verb"), [("arcs-fix", "fix"), ("arcs-apply", "apply")])
def test_the_other_buttons(arcs: Settings, identifier: str, verb: str) -> None:
    (job,) = decide(arcs, requested_action__identifier=identifier).jobs
    command = job.expect(HandleCommand).command
    assert command is not None and command.verb == verb
    assert job.idempotency_key is not None and job.idempotency_key.endswith(f":{identifier}")


def test_another_apps_check_run_is_ignored(arcs: Settings) -> None:
    decision = decide(arcs, FOREIGN)  # as published: electron-cation's "lgtm" button
    assert not decision.queued and "another App" in (decision.reason or "")
    assert not decide(arcs, check_run__app__id=25811).queued


def test_without_an_app_id_the_slug_decides(settings: Settings) -> None:
    assert decide(settings).queued  # bot_login arcs[bot]: slug arcs, as the fixture's app
    assert not decide(settings, check_run__app__slug="other").queued


@pytest.mark.parametrize(
    ("login", "user_type"), [("arcs[bot]", "Bot"), ("dependabot[bot]", "Bot"), ("some-app", "Bot")]
)
def test_bots_never_click(arcs: Settings, login: str, user_type: str) -> None:
    decision = decide(arcs, sender__login=login, sender__type=user_type)
    assert not decision.queued and "bot" in (decision.reason or "")


def test_unknown_button_no_pull_request_and_forks(arcs: Settings) -> None:
    assert "unknown button" in (decide(arcs, requested_action__identifier="lgtm|1").reason or "")
    assert "no pull request" in (decide(arcs, check_run__pull_requests=[]).reason or "")
    fork = load(OURS)["check_run"]["pull_requests"][0]
    fork["head"]["repo"]["id"] = 1
    assert "fork" in (decide(arcs, check_run__pull_requests=[fork]).reason or "")


def test_external_id_that_is_not_an_attempt(arcs: Settings) -> None:
    (job,) = decide(arcs, check_run__external_id="not-a-number").jobs
    assert job.expect(HandleCommand).attempt_id is None


def test_malformed_deliveries(arcs: Settings) -> None:
    decision = requested_action(model(OURS, requested_action=None), ctx(arcs, OURS))
    assert not decision.queued and "without requested_action" in (decision.reason or "")
    data = load(OURS)
    del data["check_run"]["id"]
    with pytest.raises(PayloadInvalid, match=r"check_run\.id is missing"):
        read(CheckRunRequestedAction, data)
