"""The real RepairService (jobs.fix on the pipeline's checkout) with a scripted pytest runner, and
the attempt -> pull request body mapping the pipeline builds from what the service stored."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.github import payloads
from bot.settings import Settings
from bot.store import open_store
from jobs.pipeline import repair_summary
from jobs.ports import RepairRequest
from jobs.repair.budget import Budget
from jobs.repair_service import FixRepairService, changed_files, worker_toolchains
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import TARGET, fixture_repo, scripted_pytest
from tests.conftest import CreateDb, MakeRepo


def _request(workdir: Path, trace_dir: Path, **fields: object) -> RepairRequest:
    base: dict[str, object] = {
        "kind": "ci",
        "repo": "octo/ages",
        "workdir": workdir,
        "head_sha": "a" * 40,
        "attempt_id": 7,
        "trace_dir": trace_dir,
    }
    base.update(fields)
    return RepairRequest(**base)  # type: ignore[arg-type]


def _service(settings: Settings, **kwargs: object) -> FixRepairService:
    runner = FakeRunner().on("pytest", scripted_pytest)
    return FixRepairService(settings, runner=runner, toolchains=(), use_index=False, parallel=1, **kwargs)  # type: ignore[arg-type]


def test_a_ci_failure_is_repaired_at_tier_0_and_mapped_to_an_outcome(
    settings: Settings, tmp_path: Path
) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    request = _request(
        repo,
        tmp_path / "traces",
        failure_class="test",
        test_ids=(TARGET,),
        test_command="pytest -q",
        tier="large",
    )
    outcome = _service(settings).run(request)

    assert outcome.fixed and outcome.verdict == "fixed" and outcome.tier == "0"  # no key: tier 0
    assert "+    return age >= ADULT_AGE" in outcome.patch
    assert set(outcome.files) == {"ages/rules.py"}
    assert "age >= ADULT_AGE" in str(outcome.files["ages/rules.py"])
    assert (
        outcome.trace_path == str(tmp_path / "traces" / "attempt-7.json")
        and Path(outcome.trace_path).is_file()
    )
    summary = outcome.trace_summary
    assert summary["tests_before"]["failing"] == [TARGET] and summary["tests_before"]["failed"] == 1
    assert summary["tests_after"] == {"passed": 3, "failed": 0, "errors": 0, "failing": []}
    assert summary["target_tests"] == [TARGET] and summary["failure_class"] == "test"
    assert any(g["gate"] and g["passed"] for g in summary["gates"])
    assert "ARCS trace v" in summary["markdown"] and "### Patch" in summary["markdown"]


def test_nothing_to_repair_is_an_outcome_without_files(settings: Settings, tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    rules = repo / "ages" / "rules.py"
    rules.write_text(rules.read_text().replace("age > ADULT_AGE", "age >= ADULT_AGE"))
    outcome = _service(settings).run(_request(repo, tmp_path / "traces"))
    assert not outcome.fixed and outcome.verdict == "not_reproducible"
    assert outcome.files == {} and outcome.patch == "" and outcome.reason


def test_tier_and_budget_come_from_the_request_then_arcs_yml(settings: Settings, tmp_path: Path) -> None:
    from bot.github.repo_config import parse_arcs_config

    config = parse_arcs_config("tier: small\nbudget: {usd: 0.5, iterations: 3}\n")
    with_key = _service(settings.model_copy(update={"anthropic_api_key": SecretStr("sk-test")}))
    without = _service(settings)
    auto = _request(tmp_path, tmp_path, tier="auto")
    large = _request(tmp_path, tmp_path, tier="large", budget_usd=1.25)
    assert with_key.tier_for(auto, config) == "small"
    assert with_key.tier_for(large, config) == "large"
    assert without.tier_for(large, config) == "0"
    assert without.budget_for(auto, config) == Budget(usd=0.5, iterations=3)
    assert without.budget_for(large, config) == Budget(usd=1.25, iterations=3)


def test_the_fix_request_for_an_issue_and_the_arcs_yml_test_command(
    settings: Settings, tmp_path: Path
) -> None:
    (tmp_path / ".arcs.yml").write_text("test: pytest -q tests\n")
    request = _request(
        tmp_path,
        tmp_path / "traces",
        kind="issue",
        issue_title="Eighteen is not adult",
        issue_body="is_adult(18) is False",
        instructions="keep it small",
        test_command="make test",
    )
    fix_request = _service(settings).fix_request(request)
    assert fix_request.issue_text is not None
    assert fix_request.issue_text.startswith("Eighteen is not adult\n\nis_adult(18) is False")
    assert "keep it small" in fix_request.issue_text
    assert fix_request.test_command is None  # .arcs.yml `test:` wins over the CI log's command
    assert fix_request.apply and fix_request.tier == "0" and not fix_request.unsafe_no_sandbox
    ci = _service(settings).fix_request(
        _request(
            tmp_path / "nowhere",
            tmp_path,
            test_command="make test",
            failure_class="test",
            test_ids=("tests/test_a.py::test_x",),
            locations=(("src/a.py", 12),),
        )
    )
    assert ci.test_command == "make test" and ci.issue_text is None
    # What the CI log said reaches the loop's task: preferred targets and retrieval hints.
    assert ci.ci_tests == ("tests/test_a.py::test_x",) and ci.hints == (("src/a.py", 12),)
    assert ci.failure_class == "test"


def test_worker_toolchains_and_changed_files(tmp_path: Path) -> None:
    assert worker_toolchains(prefix=sys.prefix, base_prefix="/nonexistent-base") == (
        Path(sys.prefix).absolute(),
    )
    assert worker_toolchains(prefix="/same", base_prefix="/same") == ()
    (tmp_path / "a.py").write_text("x = 1\n")
    assert changed_files(tmp_path, ["a.py", "gone.py"]) == {"a.py": "x = 1\n", "gone.py": None}


def test_the_pull_request_body_is_built_from_the_stored_attempt(settings: Settings, tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    outcome = _service(settings).run(_request(repo, tmp_path / "traces", failure_class="test"))
    with open_store(settings) as store:
        attempt, _ = store.claim_attempt(
            "k", repo="octo/ages", trigger="ci", head_sha="a" * 40, head_branch="main", failure_class="test"
        )
        attempt = store.update_attempt(
            attempt.id,
            status="fixed",
            verdict=outcome.verdict,
            tier=outcome.tier,
            rounds=outcome.rounds,
            patch=outcome.patch,
            explanation=outcome.explanation or None,
            trace=dict(outcome.trace_summary),
        )
    summary = repair_summary(attempt)
    assert summary.fixed and summary.kind == "ci" and summary.target_tests == (TARGET,)
    assert summary.tests_before == payloads.TestTally(passed=2, failed=1, failing=(TARGET,))
    body = payloads.pr_body(summary)
    assert "| Target tests (1) | ❌ 1 failed, 2 passed | ✅ 3 passed |" in body
    assert "<summary>Repair trace</summary>" in body and "ARCS trace v" in body
    assert payloads.pr_title(summary) == f"ARCS: fix failing test {TARGET}"


@pytest.mark.parametrize(
    "parts", [("fix", "main"), ("fix", "feature/x y"), ("issue", "42"), ("fix", "release.lock")]
)
def test_branch_names_are_pushable(parts: tuple[str, ...]) -> None:
    from bot.github.git import check_branch
    from jobs.pipeline import branch_name

    assert check_branch(branch_name(*parts)) == branch_name(*parts)
    assert branch_name(*parts) == branch_name(*parts)  # stable: one branch per signature


def test_default_wiring_uses_the_app_gateway_and_the_fix_service(settings: Settings) -> None:
    from bot.github.gateway import AppGitHubGateway, GatewayFactory
    from jobs.broker import make_broker
    from jobs.repair_service import RepoIndexService
    from jobs.worker import NotWired, default_wiring
    from tests.fakes.github_double import TEST_APP_ID, generate_app_key

    broker = make_broker(settings)
    deps = default_wiring(settings, broker)()
    try:
        assert isinstance(deps.repair, FixRepairService) and isinstance(deps.index, RepoIndexService)
        with pytest.raises(NotWired, match="ARCS_APP_ID"):
            deps.github(1)
    finally:
        deps.store.close()
    configured = settings.model_copy(
        update={"app_id": TEST_APP_ID, "private_key": SecretStr(generate_app_key().private_pem)}
    )
    deps = default_wiring(configured, broker)()
    try:
        assert isinstance(deps.github, GatewayFactory)
        gateway = deps.github(5)
        assert isinstance(gateway, AppGitHubGateway) and gateway.installation_id == 5
        gateway.close()
        deps.github.close()
    finally:
        deps.store.close()


def test_the_policy_grant_caps_the_usd_budget_and_only_lowers_it(settings: Settings, tmp_path: Path) -> None:
    from bot.github.repo_config import parse_arcs_config

    config = parse_arcs_config("budget: {usd: 0.5}\n")
    service = _service(settings)
    assert service.budget_for(_request(tmp_path, tmp_path, usd_cap=0.2), config).usd == 0.2
    assert service.budget_for(_request(tmp_path, tmp_path, usd_cap=3.0), config).usd == 0.5
    assert service.budget_for(_request(tmp_path, tmp_path, usd_cap=0.2), config).iterations == 5
    assert service.own_budget(_request(tmp_path, tmp_path, usd_cap=0.2), config).usd == 0.5


# --- the runner the settings choose (ARCS_RUNNER) ------------------------------------------------


@pytest.mark.slow  # a dozen real pytest runs through the fake engine
def test_docker_settings_run_the_repair_in_containers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ARCS_RUNNER=docker: every test command of the repair is a `docker run` of the runner image
    with the configured runtime (a fake engine runs them on the host, in the mounted copy)."""
    from tests.runners.test_sandbox_factory import docker_calls, docker_settings, fake_docker, flag_values

    bin_dir = tmp_path / "bin"
    log = fake_docker(bin_dir, runtimes={"runc": {}, "runsc": {}}, execute=True)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    settings = docker_settings(tmp_path, ARCS_RUNNER_IMAGE="arcs-runner:0.1.0", ARCS_RUNNER_RUNTIME="runsc")
    repo = fixture_repo(tmp_path, "boundary")
    service = FixRepairService(settings, use_index=False, parallel=1)  # no injected runner
    outcome = service.run(_request(repo, tmp_path / "traces", failure_class="test", test_ids=(TARGET,)))

    assert outcome.fixed and set(outcome.files) == {"ages/rules.py"}, outcome.reason
    runs = [call for call in docker_calls(log) if call[0] == "run"]
    assert len(runs) >= 2  # reproduction and verification at least
    for run in runs:
        assert flag_values(run, "--runtime") == ["runsc"]
        assert run[-4] == "arcs-runner:0.1.0"
        assert "--read-only" in run and flag_values(run, "--cap-drop") == ["ALL"]
    assert {flag_values(run, "--network")[0] for run in runs} == {"none"}
    trace = json.loads(Path(str(outcome.trace_path)).read_text(encoding="utf-8"))
    assert trace["repo"]["runner"] == "docker"


def test_docker_without_a_reachable_engine_ends_the_attempt_as_error_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline's real repair step with ARCS_RUNNER=docker and no engine: status ``error``, the
    one-line reason in the attempt and its event, nothing run, and GitHub told."""
    from jobs import pipeline
    from jobs.fakes import FakeGitHubGateway, FakeIndexService
    from jobs.messages import JobRequest
    from jobs.pipeline import Deps
    from tests.runners.test_sandbox_factory import docker_calls, docker_settings, fake_docker

    job = JobRequest(
        "repair_ci_failure",
        {
            "repo": "octo/app",
            "installation_id": 7,
            "delivery_id": "d-1",
            "source": "workflow_run",
            "run_id": 555,
            "head_sha": "c" * 40,
            "head_branch": "main",
            "conclusion": "failure",
            "pull_requests": [],
        },
        idempotency_key="ci:octo/app:workflow_run:555",
    )

    bin_dir = tmp_path / "bin"
    log = fake_docker(bin_dir, engine=False)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    settings = docker_settings(tmp_path, ARCS_RUNNER_IMAGE="arcs-runner:0.1.0")
    gh = FakeGitHubGateway()
    logs = Path(__file__).parents[1] / "fixtures" / "logs"
    gh.logs[555] = (logs / "python_pytest_assert.log").read_text(encoding="utf-8")
    with open_store(settings) as store:
        deps = Deps(
            settings=settings,
            store=store,
            github=lambda _installation: gh,
            repair=FixRepairService(settings, use_index=False, parallel=1),
            enqueue=lambda _job: None,
            index=FakeIndexService(),
        )
        assert pipeline.repair_ci_failure(deps, job) == "error"
        (attempt,) = store.attempts()
        events = store.events(attempt_id=attempt.id, kind="error")
    reason = attempt.reason or ""
    assert attempt.status == "error"
    assert reason.startswith("SandboxUnavailable: ARCS_RUNNER=docker: no container engine answers")
    assert "Cannot connect to the Docker daemon" in reason and "\n" not in reason
    assert events and "ARCS_RUNNER=docker" in events[0].message
    assert [call[0] for call in docker_calls(log)] == ["info"]  # no container was started
    (check,) = gh.calls_to("update_check_run")[-1:]  # the user is told an error stopped it
    assert "internal error (SandboxUnavailable)" in str(check)


def test_docker_without_an_image_is_a_config_error_at_use(settings: Settings, tmp_path: Path) -> None:
    from bot.errors import ConfigError

    docker = settings.model_copy(update={"runner": "docker"})  # loads fine: checked where it is used
    repo = fixture_repo(tmp_path, "boundary")
    with pytest.raises(ConfigError, match="ARCS_RUNNER=docker needs ARCS_RUNNER_IMAGE"):
        FixRepairService(docker, use_index=False, toolchains=()).run(_request(repo, tmp_path / "traces"))


# --- index refreshes: one at a time per repository, across processes -------------------------------


def test_an_index_refresh_waits_for_the_repository_lock(settings: Settings, make_repo: MakeRepo) -> None:
    from jobs.locks import LockTimeout, repo_lock
    from jobs.repair_service import RepoIndexService

    checkout = make_repo({"app/core.py": "def add(a, b):\n    return a + b\n"})
    service = RepoIndexService(settings, lock_timeout_s=0.2)
    with repo_lock(settings, "octo/ages", timeout_s=5):  # another worker process is refreshing
        with pytest.raises(LockTimeout, match="octo/ages"):
            service.refresh("octo/ages", checkout, full=False)
        assert not list(settings.index_dir.glob("*.json"))  # nothing was written meanwhile
        other = service.refresh("octo/other", checkout, full=False)  # another repository goes on
    assert other["files"] == 1
    stats = service.refresh("octo/ages", checkout, full=False)
    assert stats["files"] == 1 and stats["chunks"] >= 1


@pytest.mark.postgres
def test_an_index_refresh_takes_the_advisory_lock_on_the_store_engine(
    settings: Settings, make_repo: MakeRepo, pg_create_db: CreateDb
) -> None:
    from bot.store.store import create_store_engine
    from jobs.locks import LockTimeout, repo_lock
    from jobs.repair_service import RepoIndexService

    checkout = make_repo({"app/core.py": "def add(a, b):\n    return a + b\n"})
    engine = create_store_engine(pg_create_db())
    try:
        service = RepoIndexService(settings, engine=engine, lock_timeout_s=0.2)
        with repo_lock(engine, "octo/ages", timeout_s=5), pytest.raises(LockTimeout):
            service.refresh("octo/ages", checkout, full=False)
        assert not list(settings.index_dir.glob("*.lock"))  # the advisory lock, not a file
        assert service.refresh("octo/ages", checkout, full=False)["files"] == 1
    finally:
        engine.dispose()


def test_open_pr_on_partial_asks_the_fix_to_apply_a_partial_patch(settings: Settings, tmp_path: Path) -> None:
    request = _request(tmp_path, tmp_path / "traces", test_command="pytest -x")
    assert _service(settings).fix_request(request).apply_partial is False
    (tmp_path / ".arcs.yml").write_text("open_pr_on_partial: true\n")
    assert _service(settings).fix_request(request).apply_partial is True
