"""npm's hidden pre/post steps: the script chain, the test script alone, a run that stopped in a hook."""

from __future__ import annotations

import json
import os
from pathlib import Path

from runners.base import Execution
from runners.commands import resolve_test_command
from runners.npm_scripts import chain, describe_hooks, node_line, runner_command, stopped_in_hook
from runners.results import parse_output

OUTPUTS = Path(__file__).resolve().parents[1] / "fixtures" / "outputs"

# json-stable-stringify 1.3.0's scripts (trimmed to the ones npm test reaches).
JSS = {
    "scripts": {
        "lint": "eslint --ext=js,mjs .",
        "postlint": "tsc && attw -P",
        "pretest": "npm run lint",
        "tests-only": "tape 'test/**/*.js'",
        "test": "npm run tests-only",
        "posttest": "npx npm@'>= 10.2' audit --production",
    },
    "devDependencies": {"tape": "^5.9.0"},
}


def test_chain_lists_hooks_in_npm_order() -> None:
    steps = [(s.name, s.hook) for s in chain(JSS)]
    assert steps == [
        ("pretest", True),
        ("lint", True),
        ("postlint", True),
        ("test", False),
        ("tests-only", False),
        ("posttest", True),
    ]
    assert runner_command(JSS) == "tape 'test/**/*.js'"
    assert "postlint: `tsc && attw -P`" in describe_hooks(JSS)
    assert describe_hooks({"scripts": {"test": "jest"}}) == ""


def test_convention_runs_the_test_script_alone(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(json.dumps(JSS))
    got = resolve_test_command(tmp_path)
    assert (got.command, got.framework) == ("npm test --ignore-scripts", "tap")
    assert "pretest: `npm run lint`" in got.note and "tape 'test/**/*.js'" in got.note
    # The user's own `npm test` is kept as given, its hooks named.
    mine = resolve_test_command(tmp_path, explicit="npm test")
    assert mine.command == "npm test" and "a failure before any test ran may be theirs" in mine.note


def test_a_run_that_stopped_in_pretest_says_so() -> None:
    text = (OUTPUTS / "npm11_pretest_tsc_jss.txt").read_text()
    hint = stopped_in_hook(text)
    assert hint.startswith("the command stopped in npm's `pretest` hook (pretest > lint > postlint)")
    run = parse_output(Execution("npm test", 2, text, "", 41.3), "tap")
    assert run.hint == hint
    doc = run.to_dict()
    assert doc["hint"] == hint and "error TS7016" in doc["output"]
    # Once the test script started, a failure is the tests'.
    assert stopped_in_hook(text + "\n> json-stable-stringify@1.3.0 test\n> npm run tests-only\n") == ""


def test_node_line_names_the_sandbox_node_and_the_users(tmp_path: Path) -> None:
    fake = tmp_path / "nvm" / "bin"
    fake.mkdir(parents=True)
    (fake / "node").write_text("#!/bin/sh\necho v18.0.0\n")
    (fake / "node").chmod(0o755)
    line = node_line(path=os.fspath(fake))
    if not any(os.access(f"{d}/node", os.X_OK) for d in ("/usr/local/bin", "/usr/bin")):
        assert line.startswith("node: none in the sandbox")
        return
    assert line.startswith("node: the sandbox runs /usr")
    assert f"not your PATH's {fake / 'node'} (v18.0.0)" in line
    assert f"--toolchain {tmp_path / 'nvm'}" in line
    # With the user's node as a toolchain the sandbox runs that one.
    assert (
        node_line([tmp_path / "nvm"], path=os.fspath(fake))
        == f"node: the sandbox runs {fake / 'node'} (v18.0.0)"
    )


def test_the_note_names_the_toolchain_node(tmp_path: Path) -> None:
    nvm = tmp_path / "nvm"
    (nvm / "bin").mkdir(parents=True)
    (nvm / "bin" / "node").write_text("#!/bin/sh\necho v18.0.0\n")
    (nvm / "bin" / "node").chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "package.json").write_text(json.dumps({"scripts": {"test": "mocha"}}))
    got = resolve_test_command(repo, toolchains=[nvm])
    assert f"node: the sandbox runs {nvm / 'bin' / 'node'} (v18.0.0)" in got.note
