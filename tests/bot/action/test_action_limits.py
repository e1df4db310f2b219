"""The Action's ``model`` and ``timeout-minutes`` inputs: validation (one clear line, exit 2, before
any work), the model reaching the repair, and the step's bound (the repair's wall budget, the
engine's interrupt, the hard stop that still writes the summary)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from bot.action.deadline import DeadlineInterrupt, StepDeadline, minutes_text, run_bounded
from bot.action.env import MAX_TIMEOUT_MINUTES, read_action_env, read_inputs
from bot.action.run import ActionDeps, run_action
from bot.cli import main
from bot.errors import ArcsError, ConfigError
from bot.settings import Settings, load_settings
from jobs.repair.pricing import model_name_problem
from tests.bot.action.conftest import REPO, World, event
from tests.fakes.github_double import FakeClock


def _push_env(world: World, **inputs: str) -> dict[str, str]:
    sha = world.double.branch_sha(REPO, "master")
    assert sha is not None
    payload = event("push")
    payload["after"] = sha
    payload["head_commit"]["id"] = sha
    return world.environ(
        event_name="push",
        payload=payload,
        sha=sha,
        ref=payload["ref"],
        workspace=world.workspace(sha),
        token=world.token(),
        inputs=inputs,
    )


def _text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def _outputs(environ: dict[str, str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in _text(environ["GITHUB_OUTPUT"]).splitlines() if "=" in line)


# --------------------------------------------------------------------------- validation (pure)


@pytest.mark.parametrize(
    "name",
    [
        "claude-sonnet-4-6",
        "claude-opus-4-1-20250805",
        "anthropic.claude-3-5-sonnet-20241022-v2:0",
        "claude-3@2024",
    ],
)
def test_model_names_as_providers_spell_them_are_accepted(name: str) -> None:
    assert model_name_problem(name) is None
    assert read_inputs({"INPUT_MODEL": f" {name} "}, []).model == name


@pytest.mark.parametrize("name", ["claude sonnet", "claude\n::set-output", "-rf", "x" * 201, "'claude'"])
def test_malformed_model_names_are_one_clear_problem(name: str) -> None:
    problems: list[str] = []
    assert read_inputs({"INPUT_MODEL": name}, problems).model is None
    [problem] = problems
    assert problem.startswith("INPUT_MODEL (model): expected a model name") and "\n" not in problem


def test_an_empty_model_input_means_the_setting() -> None:
    problems: list[str] = []
    assert read_inputs({"INPUT_MODEL": "  "}, problems).model is None and problems == []
    assert model_name_problem("") is not None  # but an empty name is never a model


def test_arcs_model_setting_is_validated_the_same_way() -> None:
    assert load_settings({"ARCS_MODEL": "claude-haiku-4-5"}).model == "claude-haiku-4-5"
    with pytest.raises(ConfigError, match=r"ARCS_MODEL.*expected a model name"):
        load_settings({"ARCS_MODEL": "claude sonnet"})


@pytest.mark.parametrize(("raw", "minutes"), [("30", 30.0), ("2.5", 2.5), (" 1 ", 1.0), ("7200", 7200.0)])
def test_timeout_minutes_accepts_positive_numbers(raw: str, minutes: float) -> None:
    problems: list[str] = []
    assert read_inputs({"INPUT_TIMEOUT_MINUTES": raw}, problems).timeout_minutes == minutes
    assert problems == []


@pytest.mark.parametrize("raw", ["0", "-5", "ten", "nan", "inf", "7201", "30m"])
def test_timeout_minutes_rejects_anything_else(raw: str) -> None:
    problems: list[str] = []
    assert read_inputs({"INPUT_TIMEOUT_MINUTES": raw}, problems).timeout_minutes is None
    [problem] = problems
    assert problem.startswith("INPUT_TIMEOUT_MINUTES (timeout-minutes): expected a positive number")
    assert f"{MAX_TIMEOUT_MINUTES:g}" in problem and repr(raw) in problem


# --------------------------------------------------------------------------- the deadline (pure)


def test_the_deadline_keeps_a_reserve_and_interrupts_at_it() -> None:
    clock = FakeClock()
    deadline = StepDeadline.begin(10, clock.monotonic)
    assert deadline.seconds == 600 and deadline.reserve_s == 120  # a fifth, at most two minutes
    assert deadline.repair_wall_s() == 480
    interrupt = DeadlineInterrupt(deadline)
    clock.advance(479)
    assert interrupt.check() is None
    clock.advance(1)
    assert interrupt.check() == "stopped after 10 minutes (timeout-minutes: 10)"
    clock.advance(1000)
    assert deadline.left() == 0 and deadline.repair_wall_s() == 1.0
    short = StepDeadline.begin(1, clock.monotonic)
    assert short.reserve_s == 12 and short.stop_line.startswith("stopped after 1 minute ")
    assert minutes_text(0.5) == "0.5 minutes"


def test_run_bounded_returns_the_value_or_reraises() -> None:
    deadline = StepDeadline.begin(60, FakeClock().monotonic)
    assert run_bounded(lambda: 42, deadline) == (True, 42)

    def fail() -> int:
        raise ConfigError("bad")

    with pytest.raises(ConfigError, match="bad"):
        run_bounded(fail, deadline)
    assert not deadline.abandoned.is_set()


def test_run_bounded_stops_waiting_at_the_bound_and_tells_the_worker() -> None:
    release = threading.Event()
    deadline = StepDeadline.begin(0.001, FakeClock().monotonic)  # 60 ms
    finished, value = run_bounded(lambda: release.wait(60), deadline)
    assert (finished, value) == (False, None) and deadline.abandoned.is_set()
    assert DeadlineInterrupt(deadline).check() == deadline.stop_line
    release.set()


# --------------------------------------------------------------------------- end to end


def test_a_malformed_model_stops_the_cli_with_exit_2_before_any_work(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    environ = _push_env(world, INPUT_MODEL="claude sonnet; rm -rf /", INPUT_TIMEOUT_MINUTES="soon")
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    before = len(world.double.requests)
    code = main(["action"], settings=world.settings)
    err = capsys.readouterr().err
    assert code == 2
    [line] = [line for line in err.splitlines() if line.startswith("arcs: error:")]
    assert "INPUT_MODEL (model): expected a model name" in line and "INPUT_TIMEOUT_MINUTES" in line
    assert len(world.double.requests) == before  # not one call
    assert _text(environ["GITHUB_STEP_SUMMARY"]) == ""  # nothing ran


def test_the_model_input_is_the_model_of_the_repair(world: World) -> None:
    from jobs.fix import fix

    seen: list[tuple[str, str]] = []

    def recording(settings: Settings, request: Any, **ports: Any) -> Any:
        seen.append((settings.model, request.llm.model))
        return fix(settings, request, **ports)

    environ = _push_env(world, INPUT_MODEL="claude-opus-4-1")
    deps = ActionDeps(
        fixer=recording, clock=world.clock.time, monotonic=world.clock.monotonic, sleep=world.clock.sleep
    )
    outcome = run_action(world.settings, read_action_env(environ), deps)
    assert seen == [("claude-opus-4-1", "claude-opus-4-1")]
    assert world.settings.model != "claude-opus-4-1"  # the injected settings are not changed
    assert outcome.verdict == "fixed" and outcome.exit_code == 0, outcome


def test_timeout_minutes_caps_the_repair_budget_and_stops_the_repair_at_the_reserve(world: World) -> None:
    budgets: list[float] = []
    jumped: list[str] = []

    def late(message: str) -> None:
        # The repair is under way: the step's bound is all but spent (the fake clock jumps).
        if not jumped:
            jumped.append(message)
            world.clock.advance(60 * 5)

    from jobs.fix import fix

    def recording(settings: Settings, request: Any, **ports: Any) -> Any:
        budgets.append(request.budget.wall_s)
        return fix(settings, request, **ports)

    environ = _push_env(world, INPUT_TIMEOUT_MINUTES="5")
    deps = ActionDeps(
        fixer=recording,
        clock=world.clock.time,
        monotonic=world.clock.monotonic,
        sleep=world.clock.sleep,
        progress=late,
    )
    outcome = run_action(world.settings, read_action_env(environ), deps)

    assert budgets[0] == 240.0  # 5 minutes less the reserve (a fifth: 60 s)
    assert outcome.verdict == "interrupted" and outcome.exit_code == 1, outcome
    assert "stopped after 5 minutes (timeout-minutes: 5)" in outcome.reason
    assert outcome.published is None and world.double.open_pulls(REPO) == []
    assert world.double.mutations == []
    summary = _text(environ["GITHUB_STEP_SUMMARY"])
    assert "stopped after 5 minutes" in summary and "wall-time budget is 240 s" in summary
    assert _outputs(environ)["verdict"] == "interrupted"


def test_at_the_bound_the_step_stops_writes_the_summary_and_publishes_nothing(world: World) -> None:
    release = threading.Event()
    started = threading.Event()
    calls: list[str] = []

    def stuck(settings: Settings, request: Any, **ports: Any) -> Any:
        calls.append(str(ports["interrupt"].check()))
        started.set()
        release.wait(60)  # a test run that hangs
        calls.append(str(ports["interrupt"].check()))
        raise ArcsError("released")  # dropped: the step has already reported

    environ = _push_env(world, INPUT_TIMEOUT_MINUTES="0.002")  # 120 ms
    deps = ActionDeps(
        fixer=stuck, clock=world.clock.time, monotonic=world.clock.monotonic, sleep=world.clock.sleep
    )
    outcome = run_action(world.settings, read_action_env(environ), deps)
    release.set()

    assert outcome.verdict == "timeout" and outcome.exit_code == 1, outcome
    assert outcome.reason.startswith("ARCS stopped after 0.002 minutes (timeout-minutes: 0.002)")
    summary = _text(environ["GITHUB_STEP_SUMMARY"])
    assert summary.startswith("## ⏱️ ARCS stopped at timeout-minutes") and "nothing was published" in summary
    assert _outputs(environ) == {
        "verdict": "timeout",
        "pr-url": "",
        "trace": "",
        "published": "false",
        "culprit": "",
    }
    # The fixer got the step's interrupt. On a loaded machine its thread may first run after the
    # 120 ms bound, when the interrupt already says stop; either answer shows the port is wired.
    assert started.wait(10)
    assert calls[0] == "None" or calls[0] == "stopped after 0.002 minutes (timeout-minutes: 0.002)", calls
    assert world.double.mutations == []


def test_the_cli_passes_model_and_timeout_flags(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    environ = _push_env(world)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = main(["action", "--json", "--model", "bad model"], settings=world.settings)
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and "INPUT_MODEL (model)" in out["error"]
    code = main(["action", "--json", "--timeout-minutes", "0"], settings=world.settings)
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and "INPUT_TIMEOUT_MINUTES (timeout-minutes)" in out["error"]
