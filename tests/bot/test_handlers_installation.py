"""installation / installation_repositories -> a full index refresh, or an index drop, per repo."""

from __future__ import annotations

import gzip
import json
from functools import cache
from typing import Any

from bot.handlers.installation import created, deleted, repositories_added, repositories_removed
from bot.handlers.views import InstallationDeleted, InstallationRepositoriesRemoved, read
from bot.routing import RouteContext
from bot.settings import Settings
from jobs.messages import DropIndex, RefreshIndex
from tests.bot.webhook_support import FIXTURES, ctx, load, model


def test_installation_created_indexes_every_repository(settings: Settings) -> None:
    stem = "installation.created"
    repos = [
        {**load(stem)["repositories"][0], "full_name": "Codertocat/b", "name": "b", "id": 2},
        load(stem)["repositories"][0],
    ]
    decision = created(model(stem, repositories=repos), ctx(settings, stem))
    installation_id = load(stem)["installation"]["id"]
    assert [job.message for job in decision.jobs] == [
        RefreshIndex(
            repo=name,
            installation_id=installation_id,
            delivery_id="delivery-1",
            mode="full",
            reason="installation created",
        )
        for name in ("Codertocat/Hello-World", "Codertocat/b")
    ]
    for job in decision.jobs:
        assert job.actor == "refresh_index"
        assert job.context["repo"] == job.message.repo
        assert job.idempotency_key == f"index:{job.message.repo}:full:delivery-1"


def test_installation_without_repositories(settings: Settings) -> None:
    stem = "installation.created"
    decision = created(model(stem, repositories=[]), ctx(settings, stem))
    assert not decision.queued and "no repositories" in (decision.reason or "")


def test_repositories_added(settings: Settings) -> None:
    stem = "installation_repositories.added"
    (job,) = repositories_added(model(stem), ctx(settings, stem)).jobs
    message = job.expect(RefreshIndex)
    assert message.repo == "Codertocat/Space" and message.mode == "full"
    assert message.reason == "repositories added to the installation"


# --- drops: examples from the vendored @octokit/webhooks-examples bundle (github.com) -------------


@cache
def _examples(event: str) -> list[dict[str, Any]]:
    data = json.loads(gzip.decompress((FIXTURES / "octokit-webhooks-examples.json.gz").read_bytes()))
    (entry,) = [e for e in data["flavours"]["api.github.com"] if e["name"] == event]
    examples: list[dict[str, Any]] = entry["examples"]
    return examples


def _example(event: str, action: str) -> dict[str, Any]:
    return next(p for p in _examples(event) if p["action"] == action)


def _ctx(settings: Settings, event: str, payload: dict[str, Any]) -> RouteContext:
    return RouteContext(settings, "delivery-9", event, installation_id=payload["installation"]["id"])


def test_an_uninstalled_app_drops_the_index_of_every_listed_repository(settings: Settings) -> None:
    payload = _example("installation", "deleted")
    payload["repositories"] = [*payload["repositories"], {**payload["repositories"][0], "full_name": "o/b"}]
    decision = deleted(read(InstallationDeleted, payload), _ctx(settings, "installation", payload))
    assert [job.message for job in decision.jobs] == [
        DropIndex(repo=name, installation_id=2, delivery_id="delivery-9", reason="uninstalled")
        for name in ("o/b", "octocat/Hello-World")
    ]
    assert [job.idempotency_key for job in decision.jobs] == [
        "index-drop:o/b:delivery-9",
        "index-drop:octocat/Hello-World:delivery-9",
    ]
    assert all(job.actor == "drop_index" and job.context["repo"] == job.message.repo for job in decision.jobs)


def test_an_uninstall_without_repositories_drops_nothing(settings: Settings) -> None:
    # GitHub Enterprise Server's examples list no repositories.
    payload = {**_example("installation", "deleted"), "repositories": None}
    decision = deleted(read(InstallationDeleted, payload), _ctx(settings, "installation", payload))
    assert not decision.queued and "no repositories" in (decision.reason or "")


def test_removed_repositories_drop_their_index(settings: Settings) -> None:
    payload = _example("installation_repositories", "removed")
    event = read(InstallationRepositoriesRemoved, payload)
    (job,) = repositories_removed(event, _ctx(settings, "installation_repositories", payload)).jobs
    assert job.message == DropIndex(
        repo="octocat/Hello-World", installation_id=2, delivery_id="delivery-9", reason="removed"
    )
