"""The loop's Interrupt port: asked before reproduction and every round; a reason stops it cleanly."""

from __future__ import annotations

from pathlib import Path

from bot.settings import Settings
from jobs.fix import FixRequest, RecordedInterrupt, fix, replay
from jobs.repair.budget import Budget
from jobs.repair.fakes import FakeInterrupt, ScriptedLLM, ScriptedProposer
from jobs.repair.trace import compare_outcomes, dump_trace, load_trace, render_markdown, render_summary
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import fixture_repo, scripted_pytest
from tests.jobs.repair.test_loop import FIX, NOOP, ci_task, make


def test_a_stop_before_round_2_ends_after_exactly_one_round_without_a_patch() -> None:
    # Without the interrupt the same script fixes it in round 2 (so the stop is what ends it).
    control, _ = make(ScriptedProposer([[NOOP], [FIX]]), llm=ScriptedLLM([]))
    assert control.run(ci_task(), Budget(), "large").fixed

    stop = FakeInterrupt(after=2, reason="stopped by @alice")  # reproduction, round 1, then stop
    proposer = ScriptedProposer([[NOOP], [FIX]])
    loop, wb = make(proposer, llm=ScriptedLLM([]))
    loop.interrupt = stop
    result = loop.run(ci_task(), Budget(), "large")

    assert result.verdict == "interrupted" and result.reason == "stopped by @alice"
    assert not result.fixed and result.patch == "" and result.edits == ()
    assert len(result.trace.rounds) == 1 and result.rounds == 1 and len(proposer.requests) == 1
    assert stop.checks == 3
    assert "interrupted before round 2: stopped by @alice" in result.notices
    assert result.trace.interrupt == {"check": 3, "where": "before round 2", "reason": "stopped by @alice"}
    assert (result.trace.outcome.verdict, result.trace.outcome.reason) == ("interrupted", "stopped by @alice")
    # reproduction (1) + triage (2) + NOOP's target run (1): nothing after the stop
    assert wb.executions == result.spend.executions == 4
    assert result.trace.bound_held


def test_a_stop_before_reproduction_runs_nothing() -> None:
    loop, wb = make(ScriptedProposer([[FIX]]), llm=ScriptedLLM([]))
    loop.interrupt = FakeInterrupt(after=0, reason="ARCS was paused for octo by an org admin")
    result = loop.run(ci_task(), Budget(), "large")
    assert result.verdict == "interrupted" and result.reason == "ARCS was paused for octo by an org admin"
    assert wb.executions == 0 and result.trace.rounds == [] and result.tests_before is None
    assert result.notices[-1] == "interrupted before reproduction: ARCS was paused for octo by an org admin"


def test_no_reason_changes_nothing_and_a_failing_check_is_only_a_notice() -> None:
    class Broken:
        def check(self) -> str | None:
            raise ConnectionError("database gone")

    quiet, _ = make(ScriptedProposer([[NOOP], [FIX]]), llm=ScriptedLLM([]))
    quiet.interrupt = FakeInterrupt(after=100)
    assert quiet.run(ci_task(), Budget(), "large").fixed
    broken, _ = make(ScriptedProposer([[NOOP], [FIX]]), llm=ScriptedLLM([]))
    broken.interrupt = Broken()
    result = broken.run(ci_task(), Budget(), "large")
    assert result.fixed and any("interrupt check 1 failed: ConnectionError" in n for n in result.notices)


def test_the_interrupt_survives_the_trace_renders_and_replays() -> None:
    loop, _ = make(ScriptedProposer([[NOOP], [FIX]]), llm=ScriptedLLM([]))
    loop.interrupt = FakeInterrupt(after=2, reason="stopped by @alice")
    recorded = loop.run(ci_task(), Budget(), "large").trace
    loaded = load_trace(dump_trace(recorded))
    assert loaded.interrupt == recorded.interrupt and loaded.outcome.verdict == "interrupted"
    assert render_markdown(loaded).startswith("## ARCS: INTERRUPTED")
    assert "stopped by @alice" in render_markdown(loaded)
    assert render_summary(loaded).startswith("ARCS: INTERRUPTED")

    # A replay stops at the same check, so it reproduces the recorded outcome...
    again, _ = make(ScriptedProposer([[NOOP], [FIX]]), llm=ScriptedLLM([]))
    again.interrupt = RecordedInterrupt.of(loaded)
    assert compare_outcomes(loaded, again.run(ci_task(), Budget(), "large").trace) is None
    # ...and without it the replayed run diverges (it goes on and fixes it).
    free, _ = make(ScriptedProposer([[NOOP], [FIX]]), llm=ScriptedLLM([]))
    divergence = compare_outcomes(loaded, free.run(ci_task(), Budget(), "large").trace)
    assert divergence is not None and divergence.where == "outcome"
    assert RecordedInterrupt.of(load_trace(dump_trace(free.run(ci_task(), Budget(), "0").trace))) is None


def test_fix_passes_the_interrupt_and_replay_reproduces_an_interrupted_run(
    settings: Settings, tmp_path: Path
) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    runner = FakeRunner().on("pytest", scripted_pytest)
    trace = tmp_path / "t.json"
    request = FixRequest(repo=repo, tier="0", trace_out=trace, use_index=False)
    stop = FakeInterrupt(after=1, reason="stopped by @alice")  # after the reproduction check
    report = fix(settings, request, runner=runner, interrupt=stop)  # type: ignore[arg-type]
    assert report.result.verdict == "interrupted" and report.result.rounds == 0 and not report.applied
    assert report.result.tests_before is not None and stop.checks == 2
    replayed = replay(settings, trace, runner=runner)  # type: ignore[arg-type]
    assert replayed.reproduced and replayed.replayed is not None
    assert replayed.replayed.outcome.verdict == "interrupted"
