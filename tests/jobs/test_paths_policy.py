"""``.arcs.yml`` ``paths:`` reaches the gates: a fix that needs a denied (or not allowed) file is
never offered, in the worker and in ``arcs fix``; a bad pattern is a clear error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.settings import Settings
from jobs.config import ArcsConfigError, PathsConfig, parse, paths_of
from jobs.plan import RepairRequest, gates_for, plan_for
from jobs.repair.loop_config import GateConfig
from jobs.repair_service import FixRepairService
from runners.config import RepoConfig
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import TARGET, fake_sandbox, fixture_repo, run_cli, scripted_pytest

__all__ = ["fake_sandbox"]  # the fixture, imported from the CLI tests

# The only fix of the "boundary" fixture is in ages/rules.py.
DENY_AGES = "paths:\n  denied: ['ages/**']\n"
ALLOW_DOCS = "paths:\n  allowed: ['docs/**']\n"


def _worker_report(settings: Settings, repo: Path, tmp_path: Path, arcs_yml: str | None) -> object:
    service = FixRepairService(
        settings,
        runner=FakeRunner().on("pytest", scripted_pytest),
        toolchains=(),
        use_index=False,
        parallel=1,
    )
    request = RepairRequest(
        kind="ci",
        repo="octo/ages",
        workdir=repo,
        head_sha="a" * 40,
        attempt_id=3,
        trace_dir=tmp_path / "traces",
        failure_class="test",
        test_ids=(TARGET,),
        test_command="pytest -q",
        tier="0",
    )
    config = parse(arcs_yml) if arcs_yml is not None else parse("")
    return service.run(plan_for(request, config, service.defaults))


@pytest.mark.parametrize("arcs_yml", [DENY_AGES, ALLOW_DOCS])
def test_the_worker_never_offers_a_fix_outside_the_configured_paths(
    settings: Settings, tmp_path: Path, arcs_yml: str
) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    report = _worker_report(settings, repo, tmp_path, arcs_yml)
    assert not report.fixed and report.verdict != "fixed"  # type: ignore[attr-defined]
    assert report.files == {} and report.patch == ""  # type: ignore[attr-defined]
    trace = json.loads(Path(report.trace_path).read_text())  # type: ignore[attr-defined]
    rules = {v["rule"] for v in _violations(trace)}
    assert rules & {"path.denied", "path.not_allowed"}


def test_without_paths_the_same_repair_is_fixed(settings: Settings, tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    report = _worker_report(settings, repo, tmp_path, None)
    assert report.fixed  # type: ignore[attr-defined]


def test_arcs_fix_reads_paths_from_the_folder_config(
    tmp_path: Path,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    fake_sandbox: Callable[[object], None],
) -> None:
    fake_sandbox(FakeRunner().on("pytest", scripted_pytest))
    repo = fixture_repo(tmp_path, "boundary")
    (repo / ".arcs.yml").write_text(DENY_AGES)
    code, out, _ = run_cli(["fix", str(repo), "--tier", "0", "--json"], settings, capsys)
    data = json.loads(out)
    assert code != 0 and data["verdict"] != "fixed" and data["patch"] == ""
    assert "return age > ADULT_AGE" in (repo / "ages/rules.py").read_text()


def test_gates_add_denied_globs_and_limit_to_allowed() -> None:
    base = GateConfig()
    gates = gates_for(PathsConfig(allowed=("src/**",), denied=("secret/",)), base)
    assert set(base.denied) < set(gates.denied) and "secret/" in gates.denied
    assert gates.allowed == ("src/**",)
    assert gates_for(PathsConfig(), base).allowed is None  # empty allowed: everything not denied


def test_a_bad_paths_value_in_the_folder_config_is_a_clear_error() -> None:
    with pytest.raises(ArcsConfigError, match=r"paths\.denied"):
        paths_of(RepoConfig(extra={"paths": {"denied": 3}}, path=Path(".arcs.yml")))
    with pytest.raises(ArcsConfigError, match=r"paths\.nope"):
        paths_of(RepoConfig(extra={"paths": {"nope": []}}, path=Path(".arcs.yml")))


def _violations(trace: object) -> list[dict[str, object]]:
    """Every policy violation recorded anywhere in the trace document."""
    found: list[dict[str, object]] = []
    stack = [trace]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("rule"), str) and str(node["rule"]).startswith("path."):
                found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found
