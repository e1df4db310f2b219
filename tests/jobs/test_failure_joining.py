"""One attempt per failure (:mod:`jobs.failures`) and the per-repository cap on running repairs.

The signature is pure and tested on the CI log fixtures; joining, the cap and its deferral run
through the pipeline on the fake gateway and the SQL store (the harness of
``test_pipeline_policy``); the store's arbiters are raced by threads on SQLite and PostgreSQL.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.settings import Settings
from bot.store.store import Store
from jobs import admission, pipeline
from jobs.failures import failure_key, failure_signature, job_stem
from jobs.fakes import FakeGitHubGateway, FakeRepairService
from jobs.messages import JobRequest
from jobs.pipeline import Deps
from runners.logs import FailedStep, FailureReport, FileRef, analyze_log
from tests.conftest import CreateDb
from tests.jobs.test_pipeline import REPO, SHA, ci_job, command_job
from tests.jobs.test_pipeline_policy import Clock, Harness

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


@pytest.fixture
def h(settings: Settings, tmp_path: Path, migrated_db: Path) -> Iterator[Harness]:
    """The harness of ``test_pipeline_policy``: fake GitHub, the SQL store, one clock."""
    clock = Clock()
    shutil.copyfile(migrated_db, tmp_path / "arcs.db")
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}", upgrade=False, clock=clock)
    gh = FakeGitHubGateway()
    gh.logs[555] = log("python_pytest_assert")
    repair = FakeRepairService()
    queued: list[JobRequest] = []
    later: list[tuple[JobRequest, dt.timedelta]] = []
    deps = Deps(
        settings=settings,
        store=store,
        github=lambda _installation: gh,
        repair=repair,
        enqueue=queued.append,
        clock=clock,
        enqueue_later=lambda job, delay: later.append((job, delay)),
    )
    yield Harness(deps, gh, repair, store, clock, queued, later)
    store.close()


def log(name: str) -> str:
    return (LOGS / f"{name}.log").read_text(encoding="utf-8")


# --- the signature --------------------------------------------------------------------------------


def test_the_same_failing_tests_are_one_failure_whatever_the_job_or_workflow() -> None:
    text = log("python_pytest_assert")
    a = failure_signature(analyze_log(text), workflow="CI")
    b = failure_signature(analyze_log(text.replace("3.12", "3.9")), workflow="Nightly")
    assert a.basis == "tests" and a == b and len(a.digest) == 24


def test_different_failing_tests_are_different_failures() -> None:
    report = analyze_log(log("python_pytest_assert"))
    assert report.test_ids
    one = failure_signature(report, workflow="CI")
    other = failure_signature(
        dataclasses.replace(report, test_ids=(*report.test_ids, "tests/t.py::x")), workflow="CI"
    )
    fewer = failure_signature(
        dataclasses.replace(report, test_ids=(*report.test_ids[:1], "t::y")), workflow="CI"
    )
    assert len({one.digest, other.digest, fewer.digest}) == 3
    # Order and repeats do not matter; whitespace inside an id is collapsed.
    shuffled = dataclasses.replace(report, test_ids=tuple(reversed(report.test_ids)) + report.test_ids[:1])
    assert failure_signature(shuffled, workflow="x") == one


def test_a_step_failure_folds_matrix_digits_but_keeps_files_and_tools() -> None:
    base = FailureReport(
        failure_class="lint",
        repairable=True,
        reason="ruff reported problems",
        step=FailedStep(title="tox -e py311-lint", command="tox -e py311-lint"),
        tool="ruff",
        locations=(FileRef("src/app.py", 3),),
    )
    other_python = dataclasses.replace(base, step=FailedStep(title="t", command="tox  -e py312-lint"))
    assert failure_signature(base, workflow="CI").basis == "step"
    assert failure_signature(base, workflow="CI") == failure_signature(other_python, workflow="Lint")
    other_file = dataclasses.replace(base, locations=(FileRef("src/other.py", 3),))
    other_tool = dataclasses.replace(base, tool="flake8")
    digests = {failure_signature(r, workflow="CI").digest for r in (base, other_file, other_tool)}
    assert len(digests) == 3


def test_without_a_step_or_tests_the_workflow_and_job_names_decide() -> None:
    report = analyze_log("nothing useful here\n")
    assert report.step is None and not report.test_ids
    sig = failure_signature(dataclasses.replace(report, job="test (3.11, ubuntu-latest)"), workflow="CI 2")
    same = failure_signature(dataclasses.replace(report, job="test (3.12, macos-14)"), workflow="CI 3")
    other = failure_signature(dataclasses.replace(report, job="lint"), workflow="CI 2")
    assert sig.basis == "jobs" and sig == same and sig != other
    assert job_stem("build (node 18)") == "build" and job_stem(None) == ""


@pytest.mark.parametrize(
    "name", ["go_test_fail", "node_jest", "node_tsc", "python_mypy", "java_javac_error", "infra_disk_full"]
)
def test_every_fixture_log_has_a_stable_signature(name: str) -> None:
    report = analyze_log(log(name))
    first = failure_signature(report, workflow="CI")
    assert first == failure_signature(analyze_log(log(name)), workflow="CI")
    key = failure_key(REPO, SHA, first)
    assert key == f"ci:{REPO}:{SHA}:failure:{first.digest}" and len(key) <= 255


# --- joining through the pipeline -------------------------------------------------------------------


def test_a_second_run_with_the_same_failure_joins_the_first_attempt(h: Harness) -> None:
    h.gh.logs[556] = h.gh.logs[555]
    assert pipeline.repair_ci_failure(h.deps, ci_job(555), message_id="m-1") == "fixed"
    clones = len(h.gh.calls_to("clone"))
    assert pipeline.repair_ci_failure(h.deps, ci_job(556), message_id="m-2") == "joined"
    attempt = h.only_attempt()
    assert attempt.run_id == 555 and attempt.failure_signature is not None
    assert [r.run_id for r in h.store.joined_runs(attempt.id)] == [556]
    assert len(h.repair.requests) == 1 and len(h.gh.calls_to("clone")) == clones
    # Redeliveries: the joined run is recorded once; the leading run is a duplicate, and neither
    # downloads its logs again.
    downloads = len(h.gh.calls_to("download_failed_logs"))
    assert pipeline.repair_ci_failure(h.deps, ci_job(556), message_id="m-3") == "joined"
    assert pipeline.repair_ci_failure(h.deps, ci_job(555), message_id="m-4") == "duplicate"
    assert [r.run_id for r in h.store.joined_runs(attempt.id)] == [556]
    assert len(h.gh.calls_to("download_failed_logs")) == downloads


def test_runs_that_join_while_the_attempt_waits_are_named_on_its_check_run(h: Harness) -> None:
    h.deps.settings = h.deps.settings.model_copy(update={"max_running_per_repo": 1})
    running_elsewhere(h, 1)
    for run_id in (556, 557):
        h.gh.logs[run_id] = h.gh.logs[555]
    assert pipeline.repair_ci_failure(h.deps, ci_job(555), message_id="m-1") == "deferred"
    for run_id in (556, 557):
        assert pipeline.repair_ci_failure(h.deps, ci_job(run_id)) == "joined"
    other = next(a for a in h.store.attempts() if a.idempotency_key == "other-0")
    h.store.update_attempt(other.id, status="no_fix", finished_at=h.clock.now)
    ((job, _),) = h.later
    assert pipeline.repair_ci_failure(h.deps, job, message_id="m-2") == "fixed"
    mine = next(a for a in h.store.attempts() if a.run_id == 555)
    summary = h.gh.check_runs[mine.check_run_id]["summary"]
    assert "Also failing the same way on this commit (one attempt for all): run 556, run 557." in summary
    assert len(h.repair.requests) == 1


def test_a_different_failure_on_the_same_commit_gets_its_own_attempt(h: Harness) -> None:
    h.gh.logs[556] = log("node_jest")
    assert pipeline.repair_ci_failure(h.deps, ci_job(555)) == "fixed"
    assert pipeline.repair_ci_failure(h.deps, ci_job(556)) == "fixed"
    attempts = h.store.attempts()
    assert len(attempts) == 2 and len({a.failure_signature for a in attempts}) == 2
    assert len(h.repair.requests) == 2


def test_the_same_failure_on_another_commit_gets_its_own_attempt(h: Harness) -> None:
    h.gh.logs[556] = h.gh.logs[555]
    assert pipeline.repair_ci_failure(h.deps, ci_job(555)) == "fixed"
    assert pipeline.repair_ci_failure(h.deps, ci_job(556, head_sha="e" * 40)) == "fixed"
    assert len(h.store.attempts()) == 2


def test_a_run_whose_logs_cannot_be_read_gets_an_attempt_of_its_own(h: Harness) -> None:
    # The logs cannot be downloaded: the run is not triaged, its own attempt records the error.
    h.gh.fail["download_failed_logs"] = ConnectionError("GitHub is down")
    assert pipeline.repair_ci_failure(h.deps, ci_job(777)) == "error"
    attempt = h.only_attempt()
    assert attempt.idempotency_key == f"ci:{REPO}:workflow_run:777" and attempt.failure_signature is None
    assert pipeline.repair_ci_failure(h.deps, ci_job(777), message_id="m-x") == "duplicate"


# --- the cap on running repairs -------------------------------------------------------------------


def running_elsewhere(h: Harness, count: int) -> None:
    """``count`` admitted repairs of the repository running right now (other commits)."""
    for i in range(count):
        attempt, _ = h.store.claim_attempt(f"other-{i}", repo=REPO, trigger="ci", status="running")
        h.store.update_attempt(attempt.id, started_at=h.clock.now, admitted_at=h.clock.now)


def test_over_the_cap_a_repair_is_deferred_and_requeued_then_runs(h: Harness) -> None:
    h.deps.settings = h.deps.settings.model_copy(update={"max_running_per_repo": 2})
    running_elsewhere(h, 2)
    assert pipeline.repair_ci_failure(h.deps, ci_job(555), message_id="m-1") == "deferred"
    mine = next(a for a in h.store.attempts() if a.run_id == 555)
    assert mine.status == "queued" and h.repair.requests == [] and h.gh.calls_to("clone") == []
    (event,) = h.store.events(kind="notice")
    assert event.data["policy"] == "max_running" and event.data["running"] == 2 and event.data["limit"] == 2
    check = h.gh.check_runs[mine.check_run_id]
    assert (
        check["conclusion"] is None
        and check["title"] == "Waiting: other repairs of this repository are running"
    )
    ((job, delay),) = h.later
    assert delay == admission.BUSY_RETRY and job.idempotency_key == mine.idempotency_key
    # Still busy five minutes later: deferred again, said in an event only (not on GitHub again).
    h.clock.now += delay
    updates = len(h.gh.calls_to("update_check_run"))
    assert pipeline.repair_ci_failure(h.deps, job, message_id="m-2") == "deferred"
    assert len(h.store.events(kind="notice")) == 2 and len(h.gh.calls_to("update_check_run")) == updates
    # One of the others finishes: the re-queued job runs the same attempt.
    other = next(a for a in h.store.attempts() if a.idempotency_key == "other-0")
    h.store.update_attempt(other.id, status="no_fix", finished_at=h.clock.now)
    (_, (again, _)) = h.later
    h.clock.now += delay
    assert pipeline.repair_ci_failure(h.deps, again, message_id="m-3") == "fixed"
    assert h.store.get_attempt(mine.id).status == "fixed" and len(h.repair.requests) == 1


def test_the_cap_counts_only_admitted_repairs_of_the_same_repository(h: Harness) -> None:
    h.deps.settings = h.deps.settings.model_copy(update={"max_running_per_repo": 1})
    # Running but not admitted yet (reading its config), an old one whose worker died, another repo.
    h.store.claim_attempt("pre", repo=REPO, trigger="ci", status="running", started_at=h.clock.now)
    stale, _ = h.store.claim_attempt("stale", repo=REPO, trigger="ci", status="running")
    h.store.update_attempt(stale.id, started_at=h.clock.now - dt.timedelta(hours=7), admitted_at=h.clock.now)
    elsewhere, _ = h.store.claim_attempt("elsewhere", repo="octo/other", trigger="ci", status="running")
    h.store.update_attempt(elsewhere.id, started_at=h.clock.now, admitted_at=h.clock.now)
    assert pipeline.repair_ci_failure(h.deps, ci_job(555)) == "fixed"


def test_over_the_cap_without_a_delayed_queue_the_refusal_says_why(h: Harness) -> None:
    h.deps.settings = h.deps.settings.model_copy(update={"max_running_per_repo": 1})
    h.deps.enqueue_later = None
    running_elsewhere(h, 1)
    assert pipeline.handle_command(h.deps, command_job("fix")) == "refused"
    mine = next(a for a in h.store.attempts() if a.trigger == "comment")
    assert "1 repairs of octo/app are running (at most 1 at once" in (mine.reason or "")
    (body,) = h.comments()
    assert "cannot postpone a repair" in body


def test_a_repair_that_would_wait_past_its_expiry_is_refused(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h.deps.settings = h.deps.settings.model_copy(update={"max_running_per_repo": 1})
    monkeypatch.setattr(admission, "_max_age", lambda _actor: dt.timedelta(minutes=12))
    running_elsewhere(h, 1)
    assert pipeline.repair_ci_failure(h.deps, ci_job(555)) == "refused"
    mine = next(a for a in h.store.attempts() if a.run_id == 555)
    assert "no slot would free before this request expires" in (mine.reason or "")
    assert h.later == [] and h.repair.requests == []


# --- the store's arbiters under concurrency ----------------------------------------------------------

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def raced_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'arcs.db'}"
    else:
        create: CreateDb = request.getfixturevalue("pg_create_db")
        url = create()
    Store.open(url).close()
    opened: list[Store] = []

    def open_one() -> Store:
        store = Store.open(url, upgrade=False)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


def _race(workers: int, body: Callable[[int], object]) -> list[object]:
    barrier = threading.Barrier(workers)
    results: list[object] = [None] * workers
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = body(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return results


def test_concurrent_admissions_never_exceed_the_cap(raced_store: Callable[[], Store]) -> None:
    setup = raced_store()
    now = dt.datetime.now(dt.UTC)
    ids = []
    for i in range(8):
        attempt, _ = setup.claim_attempt(f"k{i}", repo=REPO, trigger="ci", status="running", started_at=now)
        ids.append(attempt.id)
    stores = [raced_store() for _ in ids]  # one per worker process
    admissions = _race(
        len(ids),
        lambda i: stores[i].admit_repair(
            ids[i], "octo", REPO, want_usd=1.0, caps={}, since=now - dt.timedelta(days=1), max_running=2
        ),
    )
    refused = [a for a in admissions if getattr(a, "refused", None) == "max_running"]
    assert len(refused) == 6 and {getattr(a, "running", None) for a in refused} == {2}


def test_concurrent_joins_of_one_run_record_it_once(raced_store: Callable[[], Store]) -> None:
    setup = raced_store()
    attempt, _ = setup.claim_attempt("lead", repo=REPO, trigger="ci", run_id=1, failure_signature="f" * 24)
    stores = [raced_store() for _ in range(6)]
    fresh = _race(6, lambda i: stores[i].join_attempt(attempt.id, repo=REPO, run_id=2, workflow_name="CI"))
    assert sorted(map(bool, fresh)) == [False] * 5 + [True]
    assert [r.run_id for r in setup.joined_runs(attempt.id)] == [2]
    assert setup.attempt_of_run(REPO, 2) is not None and setup.attempt_of_run(REPO, 3) is None
