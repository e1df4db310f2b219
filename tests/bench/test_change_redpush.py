"""The red-after-a-push corpus's breaks (bench/change/redpush.py): they apply, re-apply, and break."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from bench.change.redpush import (
    HELD_OUT,
    PACKAGES,
    line_swap,
    lint_fixable,
    lint_unfixable,
    mutants,
    tool_kind,
)
from bench.change.redpush_build import norm

PY = "import os\n\n\ndef f(x):\n    if x == 1:\n        return True\n    return x + 1\n"
JS = "'use strict';\n\nvar f = function f(x) {\n\tif (x === 1) {\n\t\treturn true;\n\t}\n\tvar y = x + 1;\n\treturn y;\n};\n"


def test_mutants_flip_one_token_on_a_unique_line() -> None:
    pairs = mutants(PY, "python", None, random.Random(1))
    assert ("    if x == 1:", "    if x != 1:") in pairs
    assert all(a != b for a, b in pairs)
    only = mutants(JS, "js", {4}, random.Random(1))
    assert only == [("\tif (x === 1) {", "\tif (x !== 1) {")]


def test_a_line_swap_reapplies_after_a_rewrite_and_refuses_when_the_line_is_gone() -> None:
    swap = line_swap("    if x == 1:", "    if x != 1:")
    assert swap(PY) == PY.replace("x == 1", "x != 1")
    assert swap("# a docstring first\n" + PY) == "# a docstring first\n" + PY.replace("x == 1", "x != 1")
    assert swap(PY.replace("x == 1", "x == 2")) is None


def test_lint_breaks() -> None:
    assert "import textwrap" in (lint_fixable("python")(PY) or "")
    assert "\tvar y = x + 1\n" in (lint_fixable("js")(JS) or "")
    assert "    debug_value = None\n    if x == 1:" in (lint_unfixable("python")(PY) or "")
    assert "{\n\tvar debugValue = null;\n\tif (x === 1)" in (lint_unfixable("js")(JS) or "")


def test_kinds_languages_and_held_out_packages() -> None:
    assert [tool_kind(k) for k in ("test", "fwd_test", "format", "fwd_format", "lint_fix")] == [
        "test",
        "test",
        "format",
        "format",
        "lint",
    ]
    langs = {p.name: p.lang for p in PACKAGES}
    assert {langs[name] for name in HELD_OUT} == {"python", "js"}
    assert norm("  x = 'a'  ") == norm('x="a"')


def test_the_run_starts_on_a_fresh_clone_without_the_tools_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m bench.change.redpush_run` on a fresh clone: bench/change/.cache/node does not exist
    until the first fetch makes it, so nothing may need it before (the sandbox binds it)."""
    from bench.change import redpush_run

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    node = tmp_path / ".cache" / "node"
    fetched: list[str] = []

    def fetch(pkg: object) -> None:
        node.mkdir(parents=True, exist_ok=True)  # what the real fetch does for the npm tools
        fetched.append(str(pkg))

    monkeypatch.setattr(redpush_run, "NODE", node)
    monkeypatch.setattr(redpush_run, "fetch", fetch)
    monkeypatch.setattr(redpush_run, "PACKAGES", PACKAGES[:1])
    monkeypatch.setattr(redpush_run, "RESULTS", tmp_path / "results")
    assert redpush_run.main(["--label", "fresh", "--only", "no-such-case"]) == 0
    assert fetched and (tmp_path / "results" / "redpush-fresh.json").exists()
