"""End to end in the real sandbox: a JS test failure read from TAP output is fixed at tier 0.

The repository's test script is plain node printing TAP the way tape does (``# name`` then
assertion points with a YAML block), so no npm package is needed. Before the TAP parser its
output was unread: the baseline was one synthetic ``<run>`` failure.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import commands, fix_cmd, main
from bot.settings import Settings
from jobs.repair.trace import load_trace
from tests.conftest import git, sandbox_works

CALC = "'use strict';\nfunction add(a, b) {\n  return a + b;\n}\nfunction mul(a, b) {\n  return a * b;\n}\nmodule.exports = { add, mul };\n"
RUN = r"""'use strict';
const assert = require('assert');
const { add, mul } = require('../src/calc');
const tests = [
  ['add', () => assert.strictEqual(add(1, 2), 3)],
  ['mul', () => assert.strictEqual(mul(2, 3), 6)],
];
let n = 0;
let failed = 0;
console.log('TAP version 13');
for (const [name, fn] of tests) {
  console.log('# ' + name);
  n += 1;
  try {
    fn();
    console.log(`ok ${n} should be strictly equal`);
  } catch (e) {
    failed += 1;
    console.log(`not ok ${n} should be strictly equal`);
    console.log('  ---');
    console.log('    operator: ' + e.operator);
    console.log('    expected: ' + JSON.stringify(e.expected));
    console.log('    actual:   ' + JSON.stringify(e.actual));
    console.log('    stack: |-');
    for (const line of String(e.stack).split('\n')) console.log('      ' + line);
    console.log('  ...');
  }
}
console.log(`\n1..${n}\n# tests ${n}\n# pass  ${n - failed}\n# fail  ${failed}`);
process.exit(failed ? 1 : 0);
"""


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if fix_cmd.register not in commands.REGISTRY:
        monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, fix_cmd.register])
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ARCS_MODEL", "ARCS_TRACES_DIR"):
        monkeypatch.delenv(name, raising=False)
    yield


def commit(repo: Path, files: dict[str, str], title: str, author: str = "Ada <ada@example.com>") -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--author", author, "-m", title)


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_js_test_failure_in_tap_output_is_fixed_and_rechecked(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "calc"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"src/calc.js": CALC, "test/run.js": RUN}, "green")
    commit(repo, {"src/calc.js": CALC.replace("a + b", "a - b")}, "calc: rework add", "Bob <bob@example.com>")
    trace = tmp_path / "trace.json"
    code = main(
        [
            "fix",
            str(repo),
            "--tier",
            "0",
            "--json",
            "--no-index",
            "--test",
            "node test/run.js",
            "--since",
            "HEAD~1",
            "--trace-out",
            str(trace),
        ],
        settings=settings,
    )
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 0, err
    assert data["verdict"] == "fixed", data
    assert "+  return a + b;" in data["patch"]
    recorded = load_trace(trace.read_text())
    # The target is the JS test named in the TAP output (not a synthetic "<run>" failure) ...
    assert recorded.reproduction.targets == ["add"], recorded.reproduction.targets
    base = recorded.reproduction.baseline
    assert base is not None and base.passed == ("mul",)
    (failure,) = [f for f in base.failures if f.test_id == "add"]
    # ... with its location from the TAP YAML block's stack (localization gets frames).
    assert (failure.path, failure.line) == ("test/run.js", 5), failure
    assert "expected: 3\nactual: -1" in failure.message
    # ... and the accepted patch was re-checked with the whole command: it now exits 0.
    assert data["verification"]["exit_code"] == 0, data["verification"]
