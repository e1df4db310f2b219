"""The actors on an in-process StubBroker with a real dramatiq Worker and fake ports."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dramatiq
import pytest
import structlog
from dramatiq.middleware import TimeLimitExceeded

from bot.settings import Settings
from bot.store.store import Store
from jobs.actors import declare_actors
from jobs.broker import QUEUES, BrokerEnqueuer, make_broker, make_message
from jobs.fakes import FakeGitHubGateway, FakeRepairService
from jobs.messages import ACTOR_OPTIONS, DropIndex, Envelope, JobRequest, MessageInvalid
from jobs.pipeline import Deps
from jobs.worker import setup

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"
REPO = "octo/app"


@dataclass
class Rig:
    broker: Any
    worker: dramatiq.Worker
    enqueuer: BrokerEnqueuer
    deps: Deps
    gh: FakeGitHubGateway
    repair: FakeRepairService
    store: Store

    def run_all(self) -> None:
        """Process until every queue is empty (follow-up jobs included)."""
        for _ in range(3):
            for queue in sorted(set(QUEUES.values())):
                self.broker.join(queue, fail_fast=False)
            self.worker.join()


@pytest.fixture(scope="module")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "arcs.db"
    Store.open(f"sqlite:///{path}").close()
    return path


@pytest.fixture
def rig(settings: Settings, tmp_path: Path, migrated_db: Path) -> Iterator[Rig]:
    shutil.copyfile(migrated_db, tmp_path / "arcs.db")
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}", upgrade=False)
    gh = FakeGitHubGateway()
    gh.logs[555] = (LOGS / "python_pytest_assert.log").read_text(encoding="utf-8")
    repair = FakeRepairService()
    broker = make_broker(settings)
    enqueuer = BrokerEnqueuer(broker)
    deps = Deps(settings=settings, store=store, github=lambda _i: gh, repair=repair, enqueue=enqueuer.enqueue)
    previous = dramatiq.broker.global_broker
    setup(broker, lambda _broker: lambda: deps)
    worker = dramatiq.Worker(broker, worker_timeout=50, worker_threads=2)
    worker.start()
    yield Rig(broker, worker, enqueuer, deps, gh, repair, store)
    worker.stop()
    broker.close()
    store.close()
    dramatiq.broker.global_broker = previous


def ci_job(delivery_id: str = "d-1") -> JobRequest:
    return JobRequest(
        "repair_ci_failure",
        {
            "repo": REPO,
            "installation_id": 7,
            "delivery_id": delivery_id,
            "run_id": 555,
            "head_sha": "c" * 40,
            "head_branch": "main",
            "pull_requests": [],
        },
        context={"delivery_id": delivery_id, "event": "workflow_run", "installation_id": "7", "repo": REPO},
        idempotency_key=f"ci:{REPO}:workflow_run:555",
    )


def test_every_actor_states_its_limits_and_queue(settings: Settings) -> None:
    broker = make_broker(settings)
    actors = declare_actors(broker, lambda: pytest.fail("no message is processed here"))
    assert set(actors) == set(QUEUES) == set(ACTOR_OPTIONS)
    for name, actor in actors.items():
        options = ACTOR_OPTIONS[name]  # type: ignore[index]
        assert actor.queue_name == QUEUES[name]  # type: ignore[index]
        assert actor.options["max_retries"] == options.max_retries
        assert actor.options["time_limit"] == options.time_limit > 0
        assert actor.options["max_age"] == options.max_age > 0
        # A repair that ran out of time is not retried; GitHub writes are.
        throws = actor.options["throws"]
        timed_out_retried = TimeLimitExceeded not in throws
        assert timed_out_retried == (name in {"publish_result", "record_pr_outcome"})
        # A message that does not decode is never retried.
        assert MessageInvalid in throws
    # Each message class declares its queue: long repairs, index work and GitHub writes apart.
    by_queue: dict[str, set[str]] = {}
    for name, queue in QUEUES.items():
        by_queue.setdefault(queue, set()).add(name)
    assert by_queue == {
        "arcs-repair": {"repair_ci_failure", "repair_issue", "handle_command"},
        "arcs-index": {"refresh_index", "drop_index"},
        "arcs-github": {"publish_result", "record_pr_outcome", "watch_checks", "refresh_dashboard"},
    }
    # Declaring binds to the given broker only; dramatiq's global broker is left alone.
    assert dramatiq.broker.global_broker is not broker


def test_a_job_runs_its_domain_function_once_then_publishes(rig: Rig) -> None:
    rig.enqueuer.enqueue(ci_job())
    rig.run_all()
    assert len(rig.repair.requests) == 1
    (attempt,) = rig.store.attempts()
    assert attempt.status == "fixed" and attempt.pr_number == 100 and attempt.message_id
    assert len(rig.gh.calls_to("open_or_update_pr")) == 1


def test_a_duplicate_message_does_nothing_the_second_time(rig: Rig) -> None:
    rig.enqueuer.enqueue(ci_job("d-1"))
    rig.run_all()
    calls = len(rig.gh.calls)
    rig.enqueuer.enqueue(ci_job("d-1-redelivered"))  # same idempotency key, new message
    rig.run_all()
    assert len(rig.repair.requests) == 1
    assert len(rig.store.attempts()) == 1
    assert len(rig.gh.calls) == calls
    assert len(rig.gh.opened) == 1


@pytest.fixture
def captured() -> Iterator[list[MutableMapping[str, Any]]]:
    entries: list[MutableMapping[str, Any]] = []

    def capture(_logger: Any, method: str, event: MutableMapping[str, Any]) -> Any:
        entries.append({**event, "level": method})
        raise structlog.DropEvent

    structlog.configure(processors=[structlog.contextvars.merge_contextvars, capture])
    yield entries
    structlog.reset_defaults()


def test_the_log_context_is_rebound_in_the_worker(rig: Rig, captured: list[MutableMapping[str, Any]]) -> None:
    rig.enqueuer.enqueue(ci_job("d-ctx"))
    rig.run_all()
    (attempt,) = rig.store.attempts()
    start = next(e for e in captured if e["event"] == "attempt.start")
    assert (start["delivery_id"], start["repo"], start["installation_id"], start["job"]) == (
        "d-ctx",
        REPO,
        "7",
        "repair_ci_failure",
    )
    assert start["attempt_id"] == str(attempt.id)
    done = {e["job"]: e for e in captured if e["event"] == "job.done"}
    assert done["repair_ci_failure"]["outcome"] == "fixed"
    assert done["repair_ci_failure"]["delivery_id"] == "d-ctx"
    assert isinstance(done["repair_ci_failure"]["duration_ms"], float)
    # The follow-up job carries the context on, with the attempt id; nothing leaks beyond it.
    publish = done["publish_result"]
    assert (publish["outcome"], publish["delivery_id"], publish["attempt_id"]) == (
        "published",
        "d-ctx",
        str(attempt.id),
    )
    assert publish["pr_number"] == 100


def test_a_message_that_exhausts_its_retries_is_recorded(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> bool:
        raise KeyError("the store lost a column")

    monkeypatch.setattr(rig.store, "set_pr_state", broken)
    job = JobRequest(
        "record_pr_outcome", {"repo": REPO, "delivery_id": "d-bad", "number": 3}, context={"repo": REPO}
    )
    rig.broker.enqueue(make_message(job).copy(options={"max_retries": 0}))
    rig.run_all()
    (event,) = rig.store.events(kind="job_failed")
    assert event.message.startswith("record_pr_outcome will not run again: KeyError")
    assert (event.repo, event.delivery_id) == (REPO, "d-bad")


def test_a_message_that_does_not_decode_fails_at_once_with_a_reason(rig: Rig) -> None:
    # The pre-typed shape without the `number` the worker needs: never retried (6 retries otherwise).
    broken = JobRequest("record_pr_outcome", {"repo": REPO, "delivery_id": "d-bad"}, context={"repo": REPO})
    rig.broker.enqueue(make_message(broken))
    unknown = Envelope.of(DropIndex(repo=REPO, reason="removed"), context={"delivery_id": "d-v9"})
    rig.broker.enqueue(make_message(unknown).copy(args=({**unknown.to_json(), "v": 9},)))
    rig.run_all()
    events = {e.delivery_id: e for e in rig.store.events(kind="job_failed")}
    assert set(events) == {"d-bad", "d-v9"}
    assert events["d-bad"].message == (
        "record_pr_outcome will not run again: MessageInvalid: record_pr_outcome.number is missing"
    )
    assert events["d-bad"].repo == REPO
    assert "unknown message version 9" in events["d-v9"].message
    assert rig.store.attempts() == []


def test_a_message_too_old_to_run_is_recorded(rig: Rig) -> None:
    old = make_message(ci_job()).copy(message_timestamp=int(time.time() * 1000) - 3 * 24 * 3600 * 1000)
    rig.broker.enqueue(old)
    rig.run_all()
    assert rig.repair.requests == []
    (event,) = rig.store.events(kind="job_failed")
    assert "max_age" in event.message and event.repo == REPO


@dataclass
class DroppingIndex:
    """An index port that drops (records the repositories)."""

    dropped: list[str]

    def refresh(self, repo: str, workdir: Path, *, full: bool) -> dict[str, Any]:
        raise AssertionError("not refreshed here")

    def drop(self, repo: str) -> bool:
        self.dropped.append(repo)
        return True


def test_drop_index_hands_the_typed_message_to_the_index_jobs(
    rig: Rig, captured: list[MutableMapping[str, Any]]
) -> None:
    index = DroppingIndex([])
    rig.deps.index = index
    message = DropIndex(repo=REPO, installation_id=7, delivery_id="d-drop", reason="uninstalled")
    rig.enqueuer.enqueue(
        Envelope.of(message, context={"delivery_id": "d-drop", "repo": REPO}, idempotency_key="k")
    )
    rig.run_all()
    assert index.dropped == [REPO]
    done = next(e for e in captured if e["event"] == "job.done")
    assert (done["job"], done["outcome"], done["delivery_id"]) == ("drop_index", "dropped", "d-drop")
