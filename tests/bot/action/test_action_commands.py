"""``::error`` at the failing tests' lines and ``::notice`` at the patch's hunks: escaping and
rendering (pure), then through the real ``arcs action`` entry, including tests written to inject
workflow commands of their own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.action.commands import (
    MAX_ERROR_COMMANDS,
    escape_data,
    escape_property,
    failure_commands,
    patch_commands,
    scrub,
    step_commands,
    workflow_command,
)
from bot.cli import main
from jobs.repair.report import FailureSpot
from tests.bot.action.conftest import BUGGY, REPO, World, event, project_files

COMMAND = re.compile(r"^::(\w[\w-]*)(?: ([^:]*))?::(.*)$")


def _unescape_property(value: str) -> str:
    # The runner's reading of a property (actions/runner ActionCommand.UnescapeProperty).
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        value = value.replace(escaped, raw)
    return value


def _unescape_data(value: str) -> str:
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
        value = value.replace(escaped, raw)
    return value


def parse_commands(stdout: str) -> list[tuple[str, dict[str, str], str]]:
    """What the runner sees: every line starting with ``::`` as (command, properties, message)."""
    found = []
    for line in stdout.splitlines():
        if not line.lstrip().startswith("::"):
            continue
        match = COMMAND.match(line.lstrip())
        assert match is not None, line
        kind, props, data = match.groups()
        properties = {}
        for pair in (props or "").split(","):
            if pair:
                key, _, value = pair.partition("=")
                properties[key] = _unescape_property(value)
        found.append((kind, properties, _unescape_data(data)))
    return found


# --------------------------------------------------------------------------- pure


def test_escaping_follows_the_runner_rules() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert escape_data("%0A") == "%250A"  # an escape written by the attacker stays literal text


def test_a_message_cannot_start_a_command_of_its_own() -> None:
    evil = "boom\n::add-mask::hunter2\r\n::set-output name=verdict::fixed\n::stop-commands::x"
    line = workflow_command("error", evil, {"file": "a.py", "line": 3, "title": "t,file=/etc/passwd::x"})
    assert "\n" not in line and "\r" not in line
    [(kind, props, message)] = parse_commands(line)
    assert kind == "error" and message == evil
    assert props == {"file": "a.py", "line": "3", "title": "t,file=/etc/passwd::x"}


def test_failure_commands_point_at_repository_lines_and_cap_at_ten() -> None:
    spots = [
        FailureSpot(f"tests/test_a.py::test_{i}", "tests/test_a.py", 10 + i, "AssertionError")
        for i in range(14)
    ]
    spots.insert(0, FailureSpot("t::host", "/home/runner/work/x/y.py", 3, "x"))  # never printed
    spots.insert(0, FailureSpot("t::up", "../y.py", 3, "x"))
    lines, more = failure_commands(spots)
    assert len(lines) == MAX_ERROR_COMMANDS == 10 and more == 4
    kind, props, message = parse_commands(lines[0])[0]
    assert kind == "error" and props == {
        "file": "tests/test_a.py",
        "line": "10",
        "title": "tests/test_a.py::test_0",
    }
    assert message == "tests/test_a.py::test_0 failed here: AssertionError"
    assert all("/home/runner" not in line and "../" not in line for line in lines)
    tail = step_commands(spots, "")
    assert tail[-1].startswith("arcs: 4 more failing test location(s)") and not tail[-1].startswith("::")


def test_workspace_and_sandbox_folders_are_cut_from_messages() -> None:
    spot = FailureSpot(
        "t", "a.py", 1, "FileNotFoundError: /workspace/data/x.csv and /home/runner/work/r/r/b.txt"
    )
    [line], _ = failure_commands([spot], ("/workspace", "/home/runner/work/r/r/"))
    assert parse_commands(line)[0][2] == "t failed here: FileNotFoundError: data/x.csv and b.txt"
    assert scrub("/workspacefoo/x", ("/workspace",)) == "/workspacefoo/x"  # only whole folders


def test_patch_notices_sit_on_the_replaced_lines() -> None:
    diff = (
        "diff --git a/ages/rules.py b/ages/rules.py\n--- a/ages/rules.py\n+++ b/ages/rules.py\n"
        "@@ -4,1 +4,1 @@\n-    return age > ADULT_AGE\n+    return age >= ADULT_AGE\n"
    )
    [line], more = patch_commands(diff)
    assert more == 0
    kind, props, message = parse_commands(line)[0]
    assert (kind, props["file"], props["line"], props["title"]) == (
        "notice",
        "ages/rules.py",
        "4",
        "ARCS changed this",
    )
    assert "line 4 in the fix" in message


# --------------------------------------------------------------------------- end to end


def _run_cli(
    world: World, repo: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, dict[str, str]]:
    sha = world.double.branch_sha(repo, "master")
    assert sha is not None
    payload = event("push")
    payload["after"] = sha
    payload["head_commit"]["id"] = sha
    environ = world.environ(
        event_name="push",
        payload=payload,
        sha=sha,
        ref=payload["ref"],
        workspace=world.workspace(sha, repo),
        token=world.token(repo=repo),
        repo=repo,
    )
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = main(["action"], settings=world.settings)
    return code, capsys.readouterr().out, environ


def test_the_action_prints_errors_at_the_failing_lines_and_notices_at_the_fix(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, environ = _run_cli(world, REPO, monkeypatch, capsys)
    assert code == 0, out
    commands = parse_commands(out)
    errors = [c for c in commands if c[0] == "error"]
    notices = [c for c in commands if c[0] == "notice"]
    assert errors and notices, out
    files = project_files()
    for _, props, message in errors:
        assert set(props) == {"file", "line", "title"} and props["file"] in files
        assert "test_eighteen_is_adult" in props["title"] and message.startswith(
            props["title"] + " failed here"
        )
        assert 1 <= int(props["line"]) <= len(files[props["file"]].splitlines())
        assert not Path(props["file"]).is_absolute()
    [(_, props, message)] = notices
    rules = files["ages/rules.py"].splitlines()
    assert props["file"] == "ages/rules.py" and props["title"] == "ARCS changed this"
    start, end = int(props["line"]), int(props.get("endLine", props["line"]))
    assert BUGGY.rstrip("\n") in rules[start - 1 : end]  # the hunk on the failing commit's lines
    workspace = environ["GITHUB_WORKSPACE"]
    assert workspace not in out and environ["RUNNER_TEMP"] not in "".join(
        line for line in out.splitlines() if line.startswith("::")
    )


EVIL_TEST = """import pytest


@pytest.mark.parametrize("name", ["a,file=/etc/passwd,line=1::"])
def test_evil(name):
    assert False, "boom\\n::add-mask::hunter2\\n::set-output name=verdict::fixed\\n%0A::stop-commands::x"
"""


def test_test_output_cannot_inject_workflow_commands(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = "Codertocat/evil"
    files = project_files()
    files["tests/test_evil.py"] = EVIL_TEST
    world.double.add_repo(repo, files, default_branch="master", installation=world.installation)
    _code, out, _environ = _run_cli(world, repo, monkeypatch, capsys)

    commands = parse_commands(out)
    assert {kind for kind, _, _ in commands} <= {"error", "notice"}, (
        out
    )  # no add-mask, set-output, stop-commands
    evil = [
        (props, message)
        for kind, props, message in commands
        if kind == "error" and "test_evil" in props["title"]
    ]
    assert evil, out
    [(props, message)] = evil
    assert props["file"] == "tests/test_evil.py" and set(props) == {"file", "line", "title"}
    assert props["title"].endswith("[a,file=/etc/passwd,line=1::]")  # one property, read back whole
    assert "::add-mask::hunter2" in message and "%0A::stop-commands" in message  # text, not commands
    for line in out.splitlines():
        assert not re.match(r"\s*::(add-mask|set-output|stop-commands)", line), line
