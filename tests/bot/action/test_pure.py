"""Pure parts of ``arcs action``: suggestion placement, outputs, the summary, toolchains, the
sandbox choice, the failure signature."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.action.event import Target
from bot.action.request import sandbox as _sandbox
from bot.action.run import failure_signature, toolchains_from_path
from bot.action.suggest import commentable_ranges, outside_diff_text, place, suggestions_for
from bot.action.summary import ActionOutcome, Published, RunRow, format_outputs, job_summary, step_outputs
from bot.settings import Settings

BEFORE = "a\nb\nc\nd\ne\nf\n"


def test_suggestions_replace_exactly_the_changed_lines() -> None:
    after = "a\nB\nC\nd\ne\nf\ng\n"
    items = suggestions_for("x.py", BEFORE, after)
    assert [(s.start_line, s.line, s.new) for s in items] == [(2, 3, ("B", "C")), (6, 6, ("f", "g"))]
    multi, single = (s.review_comment() for s in items)
    assert multi == {
        "path": "x.py",
        "body": "```suggestion\nB\nC\n```",
        "line": 3,
        "side": "RIGHT",
        "start_line": 2,
        "start_side": "RIGHT",
    }
    assert "start_line" not in single and single["body"] == "```suggestion\nf\ng\n```"
    # A deletion is an empty block; an insertion at the top is anchored on line 1.
    [deleted] = suggestions_for("x.py", BEFORE, "a\nc\nd\ne\nf\n")
    assert deleted.body() == "```suggestion\n```" and (deleted.start_line, deleted.line) == (2, 2)
    [top] = suggestions_for("x.py", BEFORE, "import os\n" + BEFORE)
    assert (top.start_line, top.new) == (1, ("import os", "a"))
    # A block containing backticks gets a longer fence.
    [ticks] = suggestions_for("x.py", BEFORE, BEFORE.replace("b", "```b"))
    assert ticks.body().startswith("````suggestion\n")


def test_only_suggestions_inside_one_hunk_of_the_pull_request_are_placed() -> None:
    patch = "@@ -1,3 +1,4 @@\n a\n+b\n c\n d\n@@ -10 +11 @@\n-x\n+y\n@@ -20,2 +21,0 @@\n-q\n-r\n"
    assert commentable_ranges(patch) == [(1, 4), (11, 11)]
    items = suggestions_for(
        "x.py",
        "\n".join(f"l{i}" for i in range(1, 15)),
        "\n".join(f"L{i}" if i in (2, 3, 4, 5, 11) else f"l{i}" for i in range(1, 15)),
    )
    # lines 2-5 cross the end of the first hunk (1-4); line 11 is inside the second.
    placed, outside = place(items, {"x.py": commentable_ranges(patch)})
    assert [(s.start_line, s.line) for s in placed] == [(11, 11)]
    assert [(s.start_line, s.line) for s in outside] == [(2, 5)]
    assert place(items, {})[0] == []  # a file the pull request does not touch
    text = outside_diff_text(outside)
    assert "`x.py` line 2–5" in text and "-l2\n" in text and "+L5\n" in text


def test_outputs_use_the_heredoc_form_for_multiline_values() -> None:
    outcome = ActionOutcome(
        verdict="fixed", reason="", fixed=True, trace_path="/t/trace.json",
        published=Published("pr", True, url="https://github.com/o/r/pull/3"), exit_code=0,
    )  # fmt: skip
    assert step_outputs(outcome) == {
        "verdict": "fixed", "pr-url": "https://github.com/o/r/pull/3", "trace": "/t/trace.json", "published": "true",
        "culprit": "",
    }  # fmt: skip
    text = format_outputs({"a": "1", "b": "x\ny"}, delimiter="EOF_1")
    assert text == "a=1\nb<<EOF_1\nx\ny\nEOF_1\n"
    failed = ActionOutcome(verdict="fixed", reason="", published=Published("pr", False, detail="403"))
    assert step_outputs(failed)["pr-url"] == "" and step_outputs(failed)["published"] == "false"


def test_job_summary_says_how_tests_ran_and_defuses_untrusted_text() -> None:
    outcome = ActionOutcome(
        verdict="gates_rejected",
        reason="@octocat <!-- arcs:pr --> the only candidate weakened a test",
        sandbox="unsandboxed: no bubblewrap",
        rows=(RunRow("before (reproduction)", "pytest -q | tee x", 1, 2, 1, 0),),
        published=None,
    )
    text = job_summary(outcome)
    assert text.startswith("## ❌ ARCS found no verified fix (gates_rejected)")
    assert "@\u2060octocat" in text and "<!--" not in text
    assert "unsandboxed: no bubblewrap" in text
    assert "| before (reproduction) | `pytest -q \\| tee x` | 1 | 2 | 1 | 0 |" in text


def test_toolchains_are_the_workflow_path_folders(tmp_path: Path) -> None:
    node = tmp_path / "hostedtoolcache/node/20.1.0/x64"
    (node / "bin").mkdir(parents=True)
    path = f"{node}/bin:/usr/bin:/bin:relative/bin:{tmp_path}/missing/bin:{sys.prefix}/bin:{node}/bin"
    assert toolchains_from_path(path) == (node, Path(sys.prefix))


def test_sandbox_falls_back_to_unsandboxed_only_when_allowed(
    monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    import runners.sandbox
    from bot.action.env import ActionEnv, ActionInputs

    def unavailable(**_kwargs: object) -> None:
        raise runners.sandbox.SandboxUnavailable("bubblewrap (bwrap) is not installed")

    monkeypatch.setattr("runners.factory.make_runner", unavailable)

    def env(mode: str) -> ActionEnv:
        return ActionEnv(
            event_name="push", event_path=Path("e"), event={}, repository="o/r", sha="0" * 40, ref="", head_ref="",
            base_ref="", run_id=1, run_attempt=1, workspace=Path(), step_summary=None, output=None,
            api_url="https://api.github.com", server_url="https://github.com", runner_temp=Path("/tmp"), path="",
            inputs=ActionInputs(sandbox=mode),  # type: ignore[arg-type]
        )  # fmt: skip

    note, unsafe, refusal = _sandbox(settings, env("auto"), ())
    assert unsafe and not refusal and note.startswith("unsandboxed") and "bwrap" in note
    note, unsafe, refusal = _sandbox(settings, env("require"), ())
    assert refusal.startswith("sandbox: require") and not note
    note, unsafe, refusal = _sandbox(settings, env("off"), ())
    assert unsafe and "sandbox: off" in note


def test_failure_signature_names_the_failure_not_the_run() -> None:
    target = Target(kind="push", decision="repair", branch="main", sha="a" * 40)
    first = failure_signature("o/r", target, "pytest -q", ("t::b", "t::a"))
    assert first == failure_signature(
        "o/r",
        Target(kind="workflow_run", decision="repair", branch="main", sha="b" * 40),
        "pytest -q",
        ("t::a", "t::b"),
    )
    assert first != failure_signature(
        "o/r", Target(kind="push", decision="repair", branch="dev"), "pytest -q", ("t::a", "t::b")
    )
    assert len(first) == 12 and first.isalnum()
