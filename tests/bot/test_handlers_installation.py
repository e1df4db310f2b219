"""installation created / installation_repositories added -> one full index refresh per repo."""

from __future__ import annotations

from bot.handlers.installation import created, repositories_added
from bot.settings import Settings
from tests.bot.webhook_support import ctx, load, model


def test_installation_created_indexes_every_repository(settings: Settings) -> None:
    stem = "installation.created"
    repos = [
        {**load(stem)["repositories"][0], "full_name": "Codertocat/b", "name": "b", "id": 2},
        load(stem)["repositories"][0],
    ]
    decision = created(model(stem, repositories=repos), ctx(settings, stem))
    assert [job.args["repo"] for job in decision.jobs] == ["Codertocat/Hello-World", "Codertocat/b"]
    for job in decision.jobs:
        assert job.actor == "refresh_index"
        assert job.args["mode"] == "full"
        assert job.args["installation_id"] == load(stem)["installation"]["id"]
        assert job.context["repo"] == job.args["repo"]
        assert job.idempotency_key == f"index:{job.args['repo']}:full:delivery-1"


def test_installation_without_repositories(settings: Settings) -> None:
    stem = "installation.created"
    decision = created(model(stem, repositories=[]), ctx(settings, stem))
    assert not decision.queued and "no repositories" in (decision.reason or "")


def test_repositories_added(settings: Settings) -> None:
    stem = "installation_repositories.added"
    (job,) = repositories_added(model(stem), ctx(settings, stem)).jobs
    assert job.args["repo"] == "Codertocat/Space"
    assert job.args["reason"] == "repositories added to the installation"
