"""Nobody without write access can make ARCS talk (issue #22, "Smaller holes").

A reader of the repository posts ``/arcs`` comments of every kind: a command, a command ARCS does
not understand, ``help``, ``stop`` and an edited comment with a command. Each is a signed
``issue_comment`` delivery (the pinned ``@octokit/webhooks-examples`` payloads pointed at the
strict GitHub double) through the real webhook endpoint; the jobs it enqueues run through the
worker's pipeline with the worker's GitHub wiring. GitHub must see no write at all (no comment,
no reaction, no check run); each refusal is recorded for the dashboard. A maintainer's garbled
command, the control, is still answered.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from bot.github.client import GitHubApp
from bot.github.gateway import gateway_factory
from bot.settings import Settings
from bot.store.store import Store
from bot.web.app import create_app
from bot.web.fakes import ListEnqueuer
from jobs import pipeline
from jobs.fakes import FakeRepairService
from jobs.pipeline import Deps
from tests.bot.test_octokit_sweep import examples
from tests.bot.webhook_support import SECRET, encode, headers
from tests.fakes.github_double import TEST_APP_ID, AppKey, FakeClock, GitHubDouble

REPO = "acme/widgets"
READER = "mallory"
WRITER = "maintainer"


@dataclass
class World:
    double: GitHubDouble
    installation: int
    issue: int
    client: TestClient
    queue: ListEnqueuer
    deps: Deps
    store: Store

    def comment(self, body: str, *, user: str, action: str = "created") -> list[str]:
        """Post the delivery of a comment by ``user``; run its jobs; their outcomes."""
        comment_id = self.double.add_comment(REPO, self.issue, body, user=user)
        payload = _payload(self.double, self.installation, self.issue, comment_id, body, user, action)
        data = encode(payload)
        delivery = f"comment-{next(_DELIVERIES)}"
        reply = self.client.post(
            "/webhooks/github", content=data, headers=headers("issue_comment", data, delivery=delivery)
        )
        assert reply.status_code == 202 and reply.json()["status"] == "queued", reply.text
        jobs = [job for job in self.queue.jobs if job.context.get("delivery_id") == delivery]
        return [pipeline.dispatch(self.deps, job) for job in jobs]


_DELIVERIES = itertools.count(1)


def _payload(
    double: GitHubDouble, installation: int, issue: int, comment_id: int, body: str, user: str, action: str
) -> dict[str, Any]:
    (published,) = [
        p for event, _, p in examples("api.github.com") if event == "issue_comment" and p["action"] == action
    ][:1]
    payload = copy.deepcopy(published)
    repo = double.repos[REPO]
    payload["repository"].update({"id": repo.id, "name": repo.name, "full_name": REPO})
    payload["issue"].update(number=issue, pull_request=None)
    payload["issue"].pop("pull_request", None)
    payload["comment"].update(id=comment_id, body=body, author_association="NONE")
    payload["comment"]["user"].update(login=user, type="User")
    payload["sender"].update(login=user, type="User")
    payload["installation"] = {"id": installation}
    return payload


@pytest.fixture
def world(
    github_double: GitHubDouble,
    settings: Settings,
    test_app_key: AppKey,
    fake_clock: FakeClock,
    tmp_path: Path,
) -> Iterator[World]:
    double = github_double
    inst = double.add_installation("acme")
    double.add_repo(REPO, {"app.py": "x = 1\n"}, installation=inst)
    double.grant(WRITER, REPO, "write")
    double.grant(READER, REPO, "read")
    issue = double.add_issue(REPO, "Totals are wrong", "1 + 1 = 3", user=READER)
    configured = settings.model_copy(
        update={
            "app_id": TEST_APP_ID,
            "private_key": SecretStr(test_app_key.private_pem),
            "github_api_url": double.api_url,
            "webhook_secret": SecretStr(SECRET),
        }
    )
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    queue = ListEnqueuer()
    app = GitHubApp.from_settings(
        configured, clock=fake_clock.time, monotonic=fake_clock.monotonic, sleep=fake_clock.sleep
    )
    deps = Deps(
        settings=configured,
        store=store,
        github=gateway_factory(configured, app=app),
        repair=FakeRepairService(),
        enqueue=queue.enqueue,
    )
    with TestClient(create_app(configured, store=store, enqueuer=queue, dashboard=False)) as client:
        yield World(double, inst.id, issue, client, queue, deps, store)
    app.close()
    store.close()


@pytest.mark.parametrize(
    ("body", "action"),
    [
        ("/arcs fix", "created"),
        ("/arcs fix tier=enormous", "created"),  # not understood
        ("/arcs help", "created"),
        ("/arcs stop", "created"),
        ("please\n/arcs retry", "edited"),
    ],
    ids=["fix", "garbled", "help", "stop", "edited"],
)
def test_a_reader_gets_no_reply_at_all(world: World, body: str, action: str) -> None:
    before = len(world.double.mutations)
    assert world.comment(body, user=READER, action=action) == ["refused"]
    # Tokens are minted and revoked (the permission check reads the API); nothing is written to
    # the repository, its issues or its commits.
    written = [m for m in world.double.mutations[before:] if m.path.startswith("/repos/")]
    assert written == [], [(m.method, m.path) for m in written]
    (attempt,) = world.store.attempts()
    assert attempt.status == "refused" and "read permission" in (attempt.reason or "")
    (event,) = world.store.events(kind="refusal")
    assert event.attempt_id == attempt.id


def test_a_writer_is_still_answered(world: World) -> None:
    assert world.comment("/arcs fix tier=enormous", user=WRITER) == ["refused"]
    replies = [m for m in world.double.mutations if m.method == "POST" and m.path.endswith("/comments")]
    reactions = [m for m in world.double.mutations if m.path.endswith("/reactions")]
    assert len(replies) == 1 and "tier" in str(replies[0].body) and len(reactions) == 1
