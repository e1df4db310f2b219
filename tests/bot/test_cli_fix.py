"""``arcs fix``, ``arcs replay`` and ``arcs demo``: the CLI contract, with a scripted runner (fast)
and end to end through the real bubblewrap sandbox (``sandbox`` marker)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import pytest
from pydantic import SecretStr

from bot.cli import commands, fix_cmd, main
from bot.settings import Settings
from jobs.repair.trace import load_trace
from runners.base import Execution, Runner
from runners.commands import JUNIT_PATH
from runners.fake import FakeCall, FakeRunner, fake_execution
from tests.conftest import git, sandbox_works
from tests.fakes.anthropic_server import Reply, serving

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "fix"
RULES = "ages/rules.py"
TARGET = "tests/test_rules.py::test_eighteen_is_adult"
JSON_KEYS = {
    "verdict", "fixed", "patch", "tier", "rounds", "candidates", "tests_before", "tests_after", "gates",
    "tokens", "cost_usd", "duration_s", "trace_path",
}  # fmt: skip


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Works whether or not the integrator has added fix_cmd to the registry yet.
    if fix_cmd.register not in commands.REGISTRY:
        monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, fix_cmd.register])
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ARCS_MODEL", "ARCS_TRACES_DIR"):
        monkeypatch.delenv(name, raising=False)
    yield


def fixture_repo(tmp_path: Path, name: str) -> Path:
    repo = tmp_path / name
    shutil.copytree(FIXTURES / name, repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def run_cli(args: list[str], settings: Settings, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args, settings=settings)
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- a scripted pytest


BOUNDARY_TESTS = {  # test id -> (line, passes(rules source))
    TARGET: (4, lambda src: "age >= ADULT_AGE" in src or "age > ADULT_AGE - 1" in src),
    "tests/test_rules.py::test_child_is_not_adult": (8, lambda src: "return True" not in src),
    "tests/test_rules.py::test_adults_vote": (12, lambda src: "def can_vote" in src),
}


def junit(results: dict[str, tuple[int, bool]]) -> str:
    cases = []
    for test_id, (line, ok) in results.items():
        path, name = test_id.split("::")
        head = f'<testcase classname="tests.test_rules" name={quoteattr(name)} file={quoteattr(path)} line="{line}" time="0.001"'
        if ok:
            cases.append(head + " />")
        else:
            body = f"def {name}():\n>       assert is_adult(18)\nE       assert False\n\n{path}:{line + 1}: AssertionError"
            cases.append(head + f'><failure message="assert False">{escape(body)}</failure></testcase>')
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="'
        + str(len(results))
        + '">'
        + "".join(cases)
        + "</testsuite></testsuites>"
    )


def scripted_pytest(call: FakeCall) -> Execution:
    """Answer a pytest run of the boundary fixture from the workspace's actual source."""
    src = (call.workspace / RULES).read_text(encoding="utf-8")
    wanted = re.findall(r"tests/test_rules\.py::\w+", call.command)
    results = {
        t: (line, passes(src)) for t, (line, passes) in BOUNDARY_TESTS.items() if not wanted or t in wanted
    }
    failed = not all(ok for _, ok in results.values())
    return fake_execution(exit_code=1 if failed else 0, artifacts={JUNIT_PATH: junit(results)})


@pytest.fixture
def fake_sandbox(monkeypatch: pytest.MonkeyPatch) -> Callable[[Runner], None]:
    def install(runner: Runner) -> None:
        import runners.factory

        monkeypatch.setattr(runners.factory, "make_runner", lambda **_kwargs: runner)

    return install


@pytest.fixture
def boundary(tmp_path: Path, fake_sandbox: Callable[[Runner], None]) -> Path:
    fake_sandbox(FakeRunner().on("pytest", scripted_pytest))  # type: ignore[arg-type]
    return fixture_repo(tmp_path, "boundary")


# --------------------------------------------------------------------------- fast CLI contract


def test_fix_json_shape_and_the_work_tree_is_untouched(
    boundary: Path, settings: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace_out = tmp_path / "out" / "trace.json"
    code, out, err = run_cli(
        ["fix", str(boundary), "--tier", "0", "--json", "--trace-out", str(trace_out)], settings, capsys
    )
    assert code == 0, err
    data = json.loads(out)
    assert set(data) >= JSON_KEYS
    assert data["verdict"] == "fixed" and data["fixed"] is True and data["tier"] == "0"
    assert "+    return age >= ADULT_AGE" in data["patch"]
    assert data["tests_before"] == {"passed": 2, "failed": 1, "errors": 0, "failing": [TARGET]}
    assert data["tests_after"]["passed"] == 3 and data["tests_after"]["failed"] == 0
    assert [g["gate"] for g in data["gates"]] == [
        "applies",
        "syntax",
        "policy",
        "size",
        "threats",
        "targets",
        "regressions",
        "verification",
    ]
    assert all(g["passed"] for g in data["gates"])
    assert data["tokens"] == 0 and data["cost_usd"] == 0 and data["rounds"] >= 1 and data["candidates"] >= 1
    assert data["trace_path"] == str(trace_out) and data["applied"] is False
    trace = load_trace(trace_out.read_text(encoding="utf-8"))
    assert trace.outcome.patch == data["patch"] and trace.repo["test_command"] == "python -m pytest"
    assert trace.repo["source_digest"] and trace.bound_held
    assert "age > ADULT_AGE" in (boundary / RULES).read_text()  # no --apply: nothing written
    assert git(boundary, "status", "--porcelain") == ""


def test_fix_prints_the_diff_and_apply_writes_it(
    boundary: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["fix", str(boundary), "--apply"], settings, capsys)
    assert code == 0
    assert out.startswith("diff --git a/ages/rules.py b/ages/rules.py")  # stdout is the patch alone
    assert "ARCS: FIXED" in err and "applied the patch" in err
    assert "tier 0 only" in err  # --tier auto without ANTHROPIC_API_KEY says so
    assert "age >= ADULT_AGE" in (boundary / RULES).read_text()
    traces = list((settings.home / "traces").glob("*.json"))
    assert len(traces) == 1  # default location: $ARCS_HOME/traces/<id>.json


def test_replay_of_a_tier0_trace_reproduces_even_after_apply(
    boundary: Path, settings: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "t.json"
    assert (
        run_cli(
            ["fix", str(boundary), "--tier", "0", "--apply", "--trace-out", str(trace)], settings, capsys
        )[0]
        == 0
    )
    code, out, _ = run_cli(["replay", str(trace), "--json"], settings, capsys)
    data = json.loads(out)
    assert code == 0 and data["reproduced"] is True and data["divergence"] is None
    assert data["verdict"] == "fixed" and data["replayed_verdict"] == "fixed"
    # a changed base tree is a divergence, said exactly
    (boundary / "ages/__init__.py").write_text('"""Changed."""\n')
    code, out, _ = run_cli(["replay", str(trace)], settings, capsys)
    assert code == 1 and out.startswith("replay diverged at source: work tree")


def test_not_reproducible_is_exit_1_with_the_reason(
    tmp_path: Path,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    fake_sandbox: Callable[[Runner], None],
) -> None:
    xml = junit({"tests/test_ops.py::test_add": (4, True)})
    fake_sandbox(FakeRunner().on("pytest", fake_execution(exit_code=0, artifacts={JUNIT_PATH: xml})))
    repo = fixture_repo(tmp_path, "passing")
    code, out, _ = run_cli(["fix", str(repo)], settings, capsys)
    assert code == 1
    assert "NOT REPRODUCIBLE" in out and "the test command passes on the base code" in out
    code, out, _ = run_cli(["fix", str(repo), "--json"], settings, capsys)
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "not_reproducible" and data["patch"] == "" and data["tokens"] == 0


def test_issue_without_failing_test_or_key_is_not_reproducible(
    boundary: Path,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    fake_sandbox: Callable[[Runner], None],
) -> None:
    xml = junit({t: (line, True) for t, (line, _) in BOUNDARY_TESTS.items()})
    fake_sandbox(FakeRunner().on("pytest", fake_execution(exit_code=0, artifacts={JUNIT_PATH: xml})))
    issue = tmp_path / "issue.md"
    issue.write_text("# Voting age is wrong\n\nPeople aged 18 cannot vote.\n")
    code, out, _ = run_cli(["fix", str(boundary), "--issue-file", str(issue), "--json"], settings, capsys)
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "not_reproducible" and "without an LLM" in data["reason"]


def test_budget_flags_reach_the_trace(
    boundary: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        ["fix", str(boundary), "--tier", "0", "--json", "--budget-iterations", "1", "--budget-executions", "2", "--budget-usd", "0"],
        settings,
        capsys,
    )  # fmt: skip
    data = json.loads(out)
    trace = load_trace(Path(data["trace_path"]).read_text(encoding="utf-8"))
    assert trace.budget.iterations == 1 and trace.budget.executions == 2 and trace.budget.usd == 0
    assert code == 1 and data["verdict"] == "budget_exhausted" and data["executions"] <= 2
    assert data["budget_held"] is True


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["fix", "/nonexistent/repo"], "does not exist"),
        (["fix", "{repo}", "--tier", "large"], "needs an LLM"),
        (["fix", "{repo}", "--tier", "huge"], "invalid choice"),
        (["fix", "{repo}", "--budget-iterations", "-1"], "must be >= 0"),
        (["fix", "{repo}", "--issue-file", "/nonexistent/issue.md"], "cannot read the issue file"),
        (["fix", "{repo}", "--jobs", "0"], "--jobs"),
        (["replay", "/nonexistent/trace.json"], "cannot read"),
        (["replay", "{repo}/ages/rules.py"], "not JSON"),
    ],
)
def test_usage_errors_are_one_line_exit_2(
    args: list[str], needle: str, boundary: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli([a.replace("{repo}", str(boundary)) for a in args], settings, capsys)
    assert code == 2, err
    assert err.count("\n") == 1 and needle in err


def test_llm_tier_through_a_local_anthropic_server_and_its_replay(
    boundary: Path,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    patch = {
        "explanation": "18-year-olds are adults: the comparison must include ADULT_AGE.",
        "edits": [
            {
                "path": RULES,
                "kind": "replace",
                "old": "return age > ADULT_AGE",
                "new": "return age >= ADULT_AGE",
            }
        ],
    }
    trace = tmp_path / "llm.json"
    with serving(api_key="sk-test") as server:
        server.enqueue(Reply.tool("propose_patch", patch, input_tokens=1200, output_tokens=80))
        with_llm = settings.model_copy(
            update={
                "anthropic_api_key": SecretStr("sk-test"),
                "anthropic_base_url": server.base_url,
                "model": "claude-haiku-4-5",
            }
        )
        code, out, err = run_cli(
            ["fix", str(boundary), "--tier", "small", "--json", "--trace-out", str(trace)], with_llm, capsys
        )
        assert len(server.message_requests) == 1
        prompt = server.message_requests[0].prompt_text
    data = json.loads(out)
    assert code == 0, err
    assert data["fixed"] and data["tier"] == "small" and data["tokens"] == 1280 and data["cost_usd"] > 0
    assert TARGET in prompt and "AssertionError" in prompt  # the observed failure is in the prompt
    recorded = load_trace(trace.read_text(encoding="utf-8"))
    assert recorded.model == "claude-haiku-4-5" and len(recorded.llm_calls) == 1
    # replay needs no server and no key: the recorded response is served
    code, out, _ = run_cli(["replay", str(trace), "--json"], settings, capsys)
    assert code == 0 and json.loads(out)["reproduced"] is True


# --------------------------------------------------------------------------- the real sandbox


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_real_fix_json_then_replay(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    trace = tmp_path / "trace.json"
    code, out, err = run_cli(
        ["fix", str(repo), "--tier", "0", "--json", "--trace-out", str(trace)], settings, capsys
    )
    data = json.loads(out)
    assert code == 0, err
    assert data["verdict"] == "fixed" and "+    return age >= ADULT_AGE" in data["patch"]
    assert data["tests_before"]["failing"] == [TARGET] and data["tests_after"]["passed"] == 3
    assert git(repo, "status", "--porcelain") == ""
    code, out, _ = run_cli(["replay", str(trace)], settings, capsys)
    assert code == 0 and out.startswith("replay reproduced the recorded outcome: fixed")


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_real_fix_apply_on_a_renamed_function(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = fixture_repo(tmp_path, "rename")
    code, out, err = run_cli(["fix", str(repo), "--apply"], settings, capsys)
    assert code == 0, err
    assert "-    return sum(line_totl(" in out and "+    return sum(line_total(" in out
    assert "tier 0 only" in err
    assert "line_total(price, quantity)" in (repo / "shop/cart.py").read_text()
    # the repaired work tree passes its own tests now
    code, out, _ = run_cli(["fix", str(repo), "--json"], settings, capsys)
    assert code == 1 and json.loads(out)["verdict"] == "not_reproducible"


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_real_demo(tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "demo"
    code, out, err = run_cli(["demo", "--dest", str(dest), "--json"], settings, capsys)
    data: dict[str, Any] = json.loads(out)
    assert code == 0, err
    assert data["verdict"] == "fixed" and data["applied"] is True and data["repo"] == str(dest)
    assert "+        if self.available(sku) >= quantity:" in data["patch"]
    assert ">= quantity" in (dest / "inventory/stock.py").read_text()
    assert Path(data["trace_path"]).is_file()
    code, out, _ = run_cli(["demo", "--dest", str(dest)], settings, capsys)
    assert code == 0 and "ARCS: FIXED" in out and "trace:" in out and "arcs replay" in out
