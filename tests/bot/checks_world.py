"""One repository on the strict GitHub double, the real webhook endpoint and the worker's pipeline:
the end-to-end world of the check-run annotation, button and review-comment tests.

Deliveries are the pinned ``@octokit/webhooks-examples`` payloads pointed at the double's
repository, pull request and accounts, signed and posted to ``/webhooks/github``; the jobs they
enqueue (and the follow-up jobs those enqueue: publishing) run through :func:`jobs.pipeline.dispatch`
with the worker's GitHub wiring.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
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
from jobs.messages import Envelope
from jobs.pipeline import Deps
from tests.bot.test_octokit_sweep import examples
from tests.bot.webhook_support import SECRET, encode, headers
from tests.fakes.github_double import TEST_APP_ID, AppKey, FakeClock, GitHubDouble

REPO = "acme/widgets"
READER = "mallory"
WRITER = "maintainer"
APP_FILE = "".join(f"value_{i} = {i}\n" for i in range(1, 301))
TEST_FILE = "from app import value_1\n\n\ndef test_value():\n    assert value_1 == 2\n"

_DELIVERIES = itertools.count(1)


def published(event: str, action: str | None, *, index: int = 0) -> dict[str, Any]:
    """A copy of the ``index``-th github.com example of ``event.action`` in the pinned package."""
    found = [
        p
        for name, _, p in examples("api.github.com")
        if name == event and (action is None or p.get("action") == action)
    ]
    return copy.deepcopy(found[index])


@dataclass
class World:
    """The double, its repository and pull request, the web app and the pipeline."""

    double: GitHubDouble
    installation: int
    pull: int
    head_sha: str
    client: TestClient
    queue: ListEnqueuer
    deps: Deps
    store: Store
    repair: FakeRepairService
    settings: Settings
    ran: list[tuple[str, str]] = field(default_factory=list)
    """``(actor, outcome)`` of every job run, in order."""
    _done: int = 0

    def post(self, event: str, payload: dict[str, Any], *, delivery: str | None = None) -> Any:
        """Sign and post a delivery; the HTTP answer."""
        data = encode(payload)
        delivery = delivery or f"{event}-{next(_DELIVERIES)}"
        return self.client.post(
            "/webhooks/github", content=data, headers=headers(event, data, delivery=delivery)
        )

    def drain(self) -> list[tuple[str, str]]:
        """Run every job enqueued so far (and those they enqueue); their ``(actor, outcome)``."""
        out: list[tuple[str, str]] = []
        while self._done < len(self.queue.jobs):
            job: Envelope = self.queue.jobs[self._done]
            self._done += 1
            out.append((job.actor, pipeline.dispatch(self.deps, job)))
        self.ran.extend(out)
        return out

    def repo_payload(self, payload: dict[str, Any], sender: str) -> dict[str, Any]:
        """``payload`` pointed at the double's repository and installation, sent by ``sender``."""
        repo = self.double.repos[REPO]
        payload["repository"].update({"id": repo.id, "name": repo.name, "full_name": REPO})
        payload["installation"] = {"id": self.installation}
        payload["sender"].update(login=sender, type="Bot" if sender.endswith("[bot]") else "User")
        return payload

    def pr_comment(self, body: str, *, user: str) -> dict[str, Any]:
        """An ``issue_comment.created`` on the pull request."""
        comment_id = self.double.add_comment(REPO, self.pull, body, user=user)
        payload = self.repo_payload(published("issue_comment", "created"), user)
        payload["issue"].update(number=self.pull, pull_request={"url": "https://example.invalid/pull"})
        payload["comment"].update(id=comment_id, body=body, author_association="MEMBER")
        payload["comment"]["user"].update(login=user, type="User")
        return payload

    def pulls_json(self) -> list[dict[str, Any]]:
        """The pull request as a check run's ``pull_requests`` names it."""
        repo_id = self.double.repos[REPO].id
        return [
            {
                "number": self.pull,
                "head": {"ref": "feature", "sha": self.head_sha, "repo": {"id": repo_id}},
                "base": {"ref": "main", "sha": self.head_sha, "repo": {"id": repo_id}},
            }
        ]

    def click(
        self, check_id: int, identifier: str, *, user: str, app_id: int | None = None
    ) -> dict[str, Any]:
        """A ``check_run.requested_action``: ``user`` clicked button ``identifier`` of check run
        ``check_id`` (as GitHub sends it to the App that made the check run)."""
        check = self.double.repos[REPO].check_runs[check_id]
        payload = self.repo_payload(published("check_run", "requested_action"), user)
        run = payload["check_run"]
        run.update(
            id=check_id,
            head_sha=check["head_sha"],
            name=check["name"],
            external_id=check.get("external_id") or "",
            pull_requests=self.pulls_json(),
        )
        run["app"].update(id=app_id if app_id is not None else int(TEST_APP_ID), slug=self.double.app_slug)
        payload["requested_action"] = {"identifier": identifier}
        return payload

    def checks(self) -> list[dict[str, Any]]:
        """The repository's check runs, oldest first."""
        return list(self.double.repos[REPO].check_runs.values())

    def review_comment(
        self, body: str, *, user: str, reply_to: int | None = None, pull: int | None = None
    ) -> dict[str, Any]:
        """A ``pull_request_review_comment.created`` by ``user`` on the pull request (a reply in
        the thread of ``reply_to`` when given), the comment made on the double first."""
        number = pull if pull is not None else self.pull
        comment_id = self.double.add_review_comment(REPO, number, body, user=user, in_reply_to=reply_to)
        payload = self.repo_payload(published("pull_request_review_comment", "created"), user)
        pr = self.double.repos[REPO].pulls[number]
        repo_id = self.double.repos[REPO].id
        payload["pull_request"].update(number=number)
        payload["pull_request"]["user"].update(login=pr["user"]["login"], type=pr["user"].get("type", "User"))
        payload["pull_request"]["head"]["repo"].update(id=repo_id, full_name=REPO)
        payload["comment"].update(
            id=comment_id, body=body, in_reply_to_id=reply_to, author_association="MEMBER"
        )
        payload["comment"]["user"].update(login=user, type="User")
        return payload

    def writes(self, since: int = 0) -> list[tuple[str, str]]:
        """``(method, path)`` of the repository writes the double accepted from ``since``."""
        return [(m.method, m.path) for m in self.double.mutations[since:] if m.path.startswith("/repos/")]


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
    double.add_repo(REPO, {"app.py": APP_FILE, "tests/test_app.py": TEST_FILE}, installation=inst)
    double.grant(WRITER, REPO, "write")
    double.grant(READER, REPO, "read")
    head_sha = double.commit(
        REPO, {"app.py": APP_FILE.replace("value_1 = 1", "value_1 = 3")}, branch="feature"
    )
    pull = double.add_pull(REPO, "feature", "main", user=WRITER)
    configured = settings.model_copy(
        update={
            "app_id": TEST_APP_ID,
            "private_key": SecretStr(test_app_key.private_pem),
            "github_api_url": double.api_url,
            "webhook_secret": SecretStr(SECRET),
            "bot_login": double.bot_login,
        }
    )
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    queue = ListEnqueuer()
    app = GitHubApp.from_settings(
        configured, clock=fake_clock.time, monotonic=fake_clock.monotonic, sleep=fake_clock.sleep
    )
    repair = FakeRepairService()
    deps = Deps(
        settings=configured,
        store=store,
        github=gateway_factory(configured, app=app),
        repair=repair,
        enqueue=queue.enqueue,
    )
    with TestClient(create_app(configured, store=store, enqueuer=queue, dashboard=False)) as client:
        yield World(double, inst.id, pull, head_sha, client, queue, deps, store, repair, configured)
    app.close()
    store.close()
