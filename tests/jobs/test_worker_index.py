"""The worker's repairs read the repository's own index (issue #12, item 4).

LLM-tier repairs run through the worker's wiring (:func:`bot.worker_wiring.default_wiring`) against the
local Anthropic-compatible server, with the ``hash`` embedder and the embedded Qdrant store:

- several attempts of one repository leave exactly one collection pair, ``owner/name``'s (before
  #12 each attempt built a ``local:<checkout>`` pair of its own, from scratch, and left it behind),
  and every trace records the index snapshot and retrieval evidence;
- a ``refresh_index`` of the same repository while a repair is running completes, and the repair's
  retrieval stays on (before, the repair held its own client on the embedded folder for the
  whole run, so the refresh could not open it; the other way round retrieval went off).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.settings import Settings
from indexing.registry import process_registry
from indexing.retention import collection_name
from jobs.config import ArcsConfig
from jobs.plan import RepairRequest, plan_for
from jobs.repair.report import RepairReport
from jobs.run import Deps
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import FIXTURES, RULES, TARGET, scripted_pytest
from tests.conftest import git
from tests.fakes.anthropic_server import FakeAnthropicServer, Reply, serving

REPO = "octo/ages"
PATCH = {
    "explanation": "18-year-olds are adults: the comparison must include ADULT_AGE.",
    "edits": [
        {"path": RULES, "kind": "replace", "old": "return age > ADULT_AGE", "new": "return age >= ADULT_AGE"}
    ],
}


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """The repository on "GitHub": the boundary fixture, one commit."""
    repo = tmp_path / "origin"
    shutil.copytree(FIXTURES / "boundary", repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


PLAN = {
    "contract": "The failing test passes; the others keep passing.",
    "sketch": "Correct the comparison in is_adult.",
    "subgoals": ["is_adult(18) is True"],
}


def model(body: Any) -> Reply:
    """The large tier's calls: a plan, then the patch (the tier retrieves before proposing)."""
    choice = body.get("tool_choice") or {}
    if choice.get("name") == "submit_plan":
        return Reply.tool("submit_plan", PLAN, input_tokens=900, output_tokens=60)
    return Reply.tool("propose_patch", PATCH, input_tokens=1200, output_tokens=80)


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with serving(api_key="sk-test") as srv:
        srv.dynamic = model
        yield srv


@pytest.fixture
def worker_settings(settings: Settings, server: FakeAnthropicServer) -> Iterator[Settings]:
    yield settings.model_copy(
        update={
            "anthropic_api_key": SecretStr("sk-test"),
            "anthropic_base_url": server.base_url,
            "model": "claude-haiku-4-5",
        }
    )
    # The worker keeps one Qdrant client per process (indexing.registry): let this test's go.
    process_registry().release_store(url=None, path=settings.qdrant_path)


@pytest.fixture
def deps(worker_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The worker's dependencies, with the pytest of the fixture scripted (no sandbox needed)."""
    import runners.factory
    from bot.worker_wiring import default_wiring
    from jobs.broker import make_broker

    runner = FakeRunner().on("pytest", scripted_pytest)
    monkeypatch.setattr(runners.factory, "make_runner", lambda **_kwargs: runner)
    built = default_wiring(worker_settings, make_broker(worker_settings))()
    try:
        yield built
    finally:
        built.store.close()


def checkout(origin: Path, home: Path, n: int) -> tuple[Path, str]:
    """A job checkout as the pipeline makes one (``<home>/work/arcs-job-*/repo``) and its commit."""
    work = home / "work" / f"arcs-job-{n}" / "repo"
    work.parent.mkdir(parents=True)
    git(origin.parent, "clone", "-q", str(origin), str(work))
    return work, git(work, "rev-parse", "HEAD").strip()


def request(workdir: Path, sha: str, attempt_id: int, traces: Path) -> RepairRequest:
    return RepairRequest(
        kind="ci",
        repo=REPO,
        workdir=workdir,
        head_sha=sha,
        attempt_id=attempt_id,
        trace_dir=traces,
        failure_class="test",
        test_ids=(TARGET,),
        test_command="pytest -q",
        tier="large",
    )


def run_plan(deps: Deps, req: RepairRequest) -> RepairReport:
    """What jobs.attempt does after the checkout: the plan (no .arcs.yml), then the engine."""
    return deps.repair.run(plan_for(req, ArcsConfig(), deps.repair.defaults))


def evidence(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """Every retrieval hit the trace records (rounds and reproduction)."""
    records = [trace.get("reproduction", {}).get("retrieval", {})]
    records += [r.get("retrieval", {}) for r in trace.get("rounds", [])]
    return [hit for record in records for query in record.get("queries", []) for hit in query.get("hits", [])]


def collections(settings: Settings) -> set[str]:
    store = process_registry().store(url=None, path=settings.qdrant_path)
    return {c.name for c in store.client.get_collections().collections}


def manifests(settings: Settings) -> list[str]:
    return sorted(
        str(json.loads(p.read_text(encoding="utf-8"))["repo_id"]) for p in settings.index_dir.glob("*.json")
    )


def test_llm_tier_attempts_share_the_repositorys_one_index(
    deps: Any, worker_settings: Settings, server: FakeAnthropicServer, origin: Path, tmp_path: Path
) -> None:
    for attempt_id in (1, 2, 3):
        workdir, sha = checkout(origin, worker_settings.home, attempt_id)
        outcome = run_plan(deps, request(workdir, sha, attempt_id, tmp_path / "traces"))
        shutil.rmtree(workdir.parent)  # the pipeline throws its checkout away
        assert outcome.fixed and outcome.tier == "large", outcome.reason
        trace = json.loads(Path(str(outcome.trace_path)).read_text(encoding="utf-8"))
        assert trace["index_snapshot"].startswith(sha[:12]) and ":hash:" in trace["index_snapshot"]
        assert evidence(trace), "no retrieval evidence"
        assert not [n for n in trace["notices"] if "retrieval off" in n]
    assert len(server.message_requests) >= 3

    name = collection_name(REPO)
    assert collections(worker_settings) == {name, f"{name}__tree"}
    assert manifests(worker_settings) == [REPO]  # and no local:<checkout> index anywhere


def test_a_refresh_during_a_repair_completes_and_retrieval_stays_on(
    deps: Any, worker_settings: Settings, server: FakeAnthropicServer, origin: Path, tmp_path: Path
) -> None:
    workdir, sha = checkout(origin, worker_settings.home, 1)
    # A push to the default branch meanwhile: the refresh job indexes the newer commit.
    (origin / "ages" / "voting.py").write_text("def voting_age() -> int:\n    return 18\n", encoding="utf-8")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "voting")
    pushed, pushed_sha = checkout(origin, worker_settings.home, 2)
    refreshed: list[object] = []

    def refresh_then_answer(body: Any) -> Reply:
        # The proposal comes after the repair's retrieval: its index is in use meanwhile.
        proposing = any(t.get("name") == "propose_patch" for t in body.get("tools") or ())
        if proposing and not refreshed:
            try:
                refreshed.append(deps.index.refresh(REPO, pushed, full=False))
            except Exception as exc:  # recorded: the assertion below names it
                refreshed.append(exc)
        return model(body)

    server.dynamic = refresh_then_answer
    outcome = run_plan(deps, request(workdir, sha, 1, tmp_path / "traces"))

    assert len(refreshed) == 1 and isinstance(refreshed[0], dict), refreshed
    assert refreshed[0]["commit"] == pushed_sha
    assert outcome.fixed, outcome.reason
    trace = json.loads(Path(str(outcome.trace_path)).read_text(encoding="utf-8"))
    assert not [n for n in trace["notices"] if "retrieval off" in n]
    assert trace["index_snapshot"].startswith(sha[:12]) and evidence(trace)
    # Still one index, now at the pushed commit; no index of the repair's checkout.
    assert manifests(worker_settings) == [REPO]


def test_a_refresh_running_when_a_repair_opens_the_index_delays_it_without_turning_retrieval_off(
    deps: Any,
    worker_settings: Settings,
    server: FakeAnthropicServer,
    origin: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    from indexing.index import RepoIndex

    workdir, sha = checkout(origin, worker_settings.home, 1)
    pushed, _ = checkout(origin, worker_settings.home, 2)
    started, release = threading.Event(), threading.Event()
    real_refresh: Callable[..., Any] = RepoIndex.refresh

    def slow_refresh(index: RepoIndex, **kwargs: Any) -> Any:
        if index.root == pushed.resolve() and not started.is_set():
            started.set()  # the refresh job is under way and holds the index ...
            release.wait(60)  # ... until the repair has started
        return real_refresh(index, **kwargs)

    monkeypatch.setattr(RepoIndex, "refresh", slow_refresh)
    job = threading.Thread(target=lambda: deps.index.refresh(REPO, pushed, full=False))
    job.start()
    assert started.wait(60)
    # Held a little longer than the repair takes to reach its index (not a timing assertion).
    timer = threading.Timer(2.0, release.set)
    timer.start()
    try:
        outcome = run_plan(deps, request(workdir, sha, 1, tmp_path / "traces"))
    finally:
        release.set()
        job.join(60)
        timer.cancel()
    assert outcome.fixed, outcome.reason
    trace = json.loads(Path(str(outcome.trace_path)).read_text(encoding="utf-8"))
    assert not [n for n in trace["notices"] if "retrieval off" in n]
    assert trace["index_snapshot"].startswith(sha[:12]) and evidence(trace)


def test_drop_index_removes_both_collections_the_manifest_and_the_snapshot(
    deps: Any, worker_settings: Settings, origin: Path
) -> None:
    from jobs.index_jobs import drop_index
    from jobs.messages import DropIndex

    workdir, _ = checkout(origin, worker_settings.home, 1)
    assert deps.index.refresh(REPO, workdir, full=False)["files"] >= 2
    assert manifests(worker_settings) == [REPO] and len(collections(worker_settings)) == 2
    message = DropIndex(repo=REPO, reason="removed", installation_id=7)
    assert drop_index(deps, message) == "dropped"
    assert collections(worker_settings) == set() and manifests(worker_settings) == []
    assert not list(worker_settings.index_dir.glob("*.npz"))
    assert drop_index(deps, message) == "absent"


def test_indexes_left_by_old_per_checkout_repairs_are_swept_once(
    worker_settings: Settings, origin: Path, make_repo: Any
) -> None:
    from indexing.index import RepoIndex
    from jobs.index_jobs import RepoIndexService

    store = process_registry().store(url=None, path=worker_settings.qdrant_path)
    stale, _ = checkout(origin, worker_settings.home, 1)
    mine = make_repo({"a.py": "x = 1\n"})  # `arcs index` of a user's own folder: kept
    for folder in (stale, mine):
        with RepoIndex.open(worker_settings, folder, store=store) as index:  # the old way: local:<path>
            index.refresh()
    shutil.rmtree(stale.parent)
    assert len(manifests(worker_settings)) == 2 and len(collections(worker_settings)) == 4

    fresh, _ = checkout(origin, worker_settings.home, 2)
    service = RepoIndexService(worker_settings)
    service.refresh(REPO, fresh, full=False)
    assert manifests(worker_settings) == sorted([REPO, f"local:{mine.resolve().as_posix()}"])
    assert len(collections(worker_settings)) == 4  # octo/ages' pair and the user's pair
