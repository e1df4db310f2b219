"""push to the default branch -> incremental index refresh."""

from __future__ import annotations

from typing import Any

from bot.handlers.push import pushed
from bot.routing import Decision
from bot.settings import Settings
from jobs.messages import RefreshIndex
from tests.bot.webhook_support import ctx, load, model


def decide(settings: Settings, **patches: Any) -> Decision:
    return pushed(model("push", **patches), ctx(settings, "push", **patches))


BEFORE = "a" * 40


def test_push_to_default_branch(settings: Settings) -> None:
    payload = load("push")
    (job,) = decide(settings, created=False, before=BEFORE).jobs
    assert job.actor == "refresh_index"
    assert job.message == RefreshIndex(
        repo="Codertocat/Hello-World",
        installation_id=payload.get("installation", {}).get("id"),
        delivery_id="delivery-1",
        after=payload["after"],
        mode="incremental",
        reason="push to the default branch",
    )
    assert job.idempotency_key == f"index:Codertocat/Hello-World:incremental:{payload['after']}"


def test_other_branches_and_tags_are_ignored(settings: Settings) -> None:
    assert "not the default branch" in (decide(settings, ref="refs/heads/feature").reason or "")
    assert not decide(settings, ref="refs/tags/v1").queued


def test_deleted_default_branch(settings: Settings) -> None:
    assert "deleted" in (decide(settings, deleted=True, after="0" * 40).reason or "")


def test_created_branch_has_no_usable_before(settings: Settings) -> None:
    (job,) = decide(settings).jobs  # the fixture as published: the branch was just created
    assert job.expect(RefreshIndex).mode == "full"
