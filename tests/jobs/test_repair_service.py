"""The worker's repair engine (:class:`jobs.repair_service.FixRepairService` running a
:class:`jobs.plan.RepairPlan` on the pipeline's checkout) with a scripted pytest runner, the plan
rules, and the attempt -> pull request body mapping publishing builds from the stored report."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.settings import Settings
from bot.store import open_store
from jobs import render
from jobs.attempt import checkout_config
from jobs.config import ArcsConfig, parse
from jobs.engine_ports import changed_files, worker_toolchains
from jobs.plan import IndexRef, LLMRef, RepairPlan, RepairRequest, plan_for, tier_for
from jobs.repair.budget import Budget
from jobs.repair.report import RepairReport
from jobs.repair_service import FixRepairService
from jobs.report_summary import attempt_summary
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


def _plan(service: FixRepairService, request: RepairRequest, config: ArcsConfig | None = None) -> RepairPlan:
    """The worker's plan: the caller's `.arcs.yml`, else the checkout's (as jobs.attempt does)."""
    return plan_for(
        request, config if config is not None else checkout_config(request.workdir), service.defaults
    )


def _run(service: FixRepairService, request: RepairRequest, config: ArcsConfig | None = None) -> RepairReport:
    return service.run(_plan(service, request, config))


def test_a_ci_failure_is_repaired_at_tier_0_and_mapped_to_a_report(
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
    report = _run(_service(settings), request)

    assert report.fixed and report.verdict == "fixed" and report.tier == "0"  # no key: tier 0
    assert "+    return age >= ADULT_AGE" in report.patch
    assert set(report.files) == {"ages/rules.py"}
    assert "age >= ADULT_AGE" in str(report.files["ages/rules.py"])
    assert (
        report.trace_path == str(tmp_path / "traces" / "attempt-7.json") and Path(report.trace_path).is_file()
    )
    before, after = report.tests_before, report.tests_after
    assert before is not None and before.failing == (TARGET,) and before.failed == 1
    assert after is not None and (after.passed, after.failed, after.errors, after.failing) == (3, 0, 0, ())
    assert report.target_tests == (TARGET,) and report.failure_class == "test"
    assert any(g.gate and g.passed for g in report.gates)
    assert "ARCS trace v" in report.trace_markdown and "### Patch" in report.trace_markdown
    stored = report.to_json(with_files=False)  # what attempts.trace keeps: typed, versioned, no files
    assert stored["files"] == {} and RepairReport.from_json(stored).target_tests == (TARGET,)


def test_nothing_to_repair_is_a_report_without_files(settings: Settings, tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    rules = repo / "ages" / "rules.py"
    rules.write_text(rules.read_text().replace("age > ADULT_AGE", "age >= ADULT_AGE"))
    report = _run(_service(settings), _request(repo, tmp_path / "traces"))
    assert not report.fixed and report.verdict == "not_reproducible"
    assert report.files == {} and report.patch == "" and report.reason


def test_tier_and_budget_come_from_the_request_then_arcs_yml(settings: Settings, tmp_path: Path) -> None:
    config = parse("tier: small\nbudget: {usd: 0.5, iterations: 3}\n")
    with_key = _service(settings.model_copy(update={"anthropic_api_key": SecretStr("sk-test")}))
    without = _service(settings)
    auto = _request(tmp_path, tmp_path, tier="auto")
    large = _request(tmp_path, tmp_path, tier="large", budget_usd=1.25)
    assert with_key.defaults.llm is not None and without.defaults.llm is None
    assert _plan(with_key, auto, config).tier == "small"
    assert _plan(with_key, large, config).tier == "large"
    assert _plan(without, large, config).tier == "0"
    assert tier_for("large", config, has_llm=False) == "0"
    assert _plan(without, auto, config).budget == Budget(usd=0.5, iterations=3)
    assert _plan(without, large, config).budget == Budget(usd=1.25, iterations=3)


def test_the_plan_names_the_model_and_the_index_never_the_key(settings: Settings, tmp_path: Path) -> None:
    keyed = settings.model_copy(update={"anthropic_api_key": SecretStr("sk-secret-123")})
    service = FixRepairService(keyed, toolchains=(), parallel=1)
    plan = _plan(service, _request(tmp_path, tmp_path, tier="large"), ArcsConfig())
    assert plan.llm == LLMRef(keyed.model, keyed.anthropic_base_url) and plan.tier == "large"
    assert plan.index == IndexRef("octo/ages", "a" * 40)  # the repository's own index, at its commit
    assert "sk-secret-123" not in repr(plan)
    ports = service.ports(plan)
    assert ports.api_key == "sk-secret-123" and "sk-secret-123" not in repr(ports)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.tier = "0"  # type: ignore[misc]
    tier0 = _plan(_service(settings), _request(tmp_path, tmp_path, tier="large"), ArcsConfig())
    assert (tier0.tier, tier0.llm, tier0.index) == ("0", None, None)


def test_the_plan_for_an_issue_and_the_arcs_yml_test_command(settings: Settings, tmp_path: Path) -> None:
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
    plan = _plan(_service(settings), request)
    assert plan.issue_text is not None
    assert plan.issue_text.startswith("Eighteen is not adult\n\nis_adult(18) is False")
    assert "keep it small" in plan.issue_text
    assert plan.test_command is None  # .arcs.yml `test:` wins over the CI log's command
    assert plan.repo_config.test == "pytest -q tests" and plan.config_source == ".arcs.yml@" + "a" * 40
    assert plan.apply and plan.tier == "0" and not plan.unsafe_no_sandbox
    ci = _plan(
        _service(settings),
        _request(
            tmp_path / "nowhere",
            tmp_path,
            test_command="make test",
            failure_class="test",
            test_ids=("tests/test_a.py::test_x",),
            locations=(("src/a.py", 12),),
        ),
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
    report = _run(_service(settings), _request(repo, tmp_path / "traces", failure_class="test"))
    with open_store(settings) as store:
        attempt, _ = store.claim_attempt(
            "k", repo="octo/ages", trigger="ci", head_sha="a" * 40, head_branch="main", failure_class="test"
        )
        attempt = store.update_attempt(
            attempt.id,
            status="fixed",
            verdict=report.verdict,
            tier=report.tier,
            rounds=report.rounds,
            patch=report.patch,
            explanation=report.explanation or None,
            trace=report.to_json(with_files=False),
        )
    summary = attempt_summary(attempt)
    assert summary.fixed and summary.kind == "ci" and summary.target_tests == (TARGET,)
    assert summary.tests_before == render.TestTally(passed=2, failed=1, failing=(TARGET,))
    body = render.pr_body(summary)
    assert "| Target tests (1) | ❌ 1 failed, 2 passed | ✅ 3 passed |" in body
    assert "<summary>Repair trace</summary>" in body and "ARCS trace v" in body
    assert render.pr_title(summary) == f"ARCS: fix failing test {TARGET}"


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
    from bot.worker_wiring import NotWired, default_wiring
    from jobs.broker import make_broker
    from jobs.index_jobs import RepoIndexService
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
    config = parse("budget: {usd: 0.5}\n")
    service = _service(settings)
    assert _plan(service, _request(tmp_path, tmp_path, usd_cap=0.2), config).budget.usd == 0.2
    assert _plan(service, _request(tmp_path, tmp_path, usd_cap=3.0), config).budget.usd == 0.5
    assert _plan(service, _request(tmp_path, tmp_path, usd_cap=0.2), config).budget.iterations == 5
    capped = _plan(service, _request(tmp_path, tmp_path, usd_cap=0.2), config)
    assert capped.budget_own.usd == 0.5 and capped.usd_capped
    assert not _plan(service, _request(tmp_path, tmp_path, usd_cap=3.0), config).usd_capped


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
    outcome = _run(service, _request(repo, tmp_path / "traces", failure_class="test", test_ids=(TARGET,)))

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
        _run(FixRepairService(docker, use_index=False, toolchains=()), _request(repo, tmp_path / "traces"))


# --- index refreshes: one at a time per repository, across processes -------------------------------


def test_an_index_refresh_waits_for_the_repository_lock(settings: Settings, make_repo: MakeRepo) -> None:
    from jobs.index_jobs import RepoIndexService
    from jobs.locks import LockTimeout, repo_lock

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
    from jobs.index_jobs import RepoIndexService
    from jobs.locks import LockTimeout, repo_lock

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
    assert _plan(_service(settings), request).apply_partial is False
    (tmp_path / ".arcs.yml").write_text("open_pr_on_partial: true\n")
    assert _plan(_service(settings), request).apply_partial is True


def test_one_ci_repair_reads_arcs_yml_once_and_uses_the_callers_read(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller read `.arcs.yml` at head_sha: the engine parses nothing; without one (a command)
    the checkout's file is parsed once (before #12: three times, with two schemas)."""
    import jobs.config

    repo = fixture_repo(tmp_path, "boundary")
    (repo / ".arcs.yml").write_text("test: pytest -q\nbudget: {usd: 0.5, iterations: 3}\n")
    parsed: list[str] = []
    real = jobs.config._yaml_mapping

    def counting(text: str, name: str) -> object:
        parsed.append(text)
        return real(text, name)

    config = jobs.config.parse((repo / ".arcs.yml").read_text())  # the caller's one read
    monkeypatch.setattr(jobs.config, "_yaml_mapping", counting)
    request = _request(repo, tmp_path / "traces", failure_class="test", test_ids=(TARGET,), usd_cap=0.2)
    report = _run(_service(settings), request, config)
    assert parsed == [] and report.fixed
    assert report.budget is not None and report.budget.usd == 0.2 and report.usd_capped  # 0.5, capped once

    other = fixture_repo(tmp_path / "cli", "boundary")
    (other / ".arcs.yml").write_text("test: pytest -q\nbudget: {usd: 0.5, iterations: 3}\n")
    report = _run(_service(settings), _request(other, tmp_path / "traces2", failure_class="test"))
    assert len(parsed) == 1 and report.fixed and report.budget is not None
    assert report.budget.usd == 0.5 and not report.usd_capped


def test_revise_instructions_on_an_arcs_pull_request_become_the_task(
    settings: Settings, tmp_path: Path
) -> None:
    # `/arcs revise Keep the public API.` on an ARCS PR: a CI-kind request (the PR's head) whose
    # instructions used to be dropped, so the repair found the green head "not reproducible".
    request = _request(tmp_path, tmp_path / "traces", trigger="revise", instructions="Keep the public API.")
    plan = _plan(_service(settings), request, ArcsConfig())
    assert plan.issue_text is not None and "Keep the public API." in plan.issue_text
    assert plan.instructions == "Keep the public API."
    without = _plan(_service(settings), _request(tmp_path, tmp_path / "traces"), ArcsConfig())
    assert without.issue_text is None  # a plain CI repair stays a CI repair
