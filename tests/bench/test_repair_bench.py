"""The verdict measurements of the repair bench: case variants, re-checks, mutants, summaries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from bench.outside.build import mutants_of
from bench.outside.corpus import apply_mutation
from bench.repair.corpus import copy_case, load_case
from bench.repair.isolate import kill_tree, process_tree, recheck
from bench.repair.verdicts import merge_records, render_verdicts, summarize_part

SOURCE = """\
def f(a, b, xs):
    if a < b and not xs:
        return a + 1
    while a == b:
        a = a * 2
    return xs[0] if a in xs else None
"""


def _write_case(folder: Path, meta: Mapping[str, object], files: dict[str, str] | None = None) -> None:
    folder.mkdir(parents=True)
    (folder / "case.json").write_text(json.dumps({"id": folder.name, **meta}), encoding="utf-8")
    for rel, text in (files or {}).items():
        (folder / rel).write_text(text, encoding="utf-8")


def test_every_mutation_operator_changes_one_token() -> None:
    got = {(m.operator, m.mutated.strip()) for m in mutants_of("m.py", SOURCE)}
    assert ("cmp_boundary", "if a <= b and not xs:") in got
    assert ("bool_swap", "if a < b or not xs:") in got
    assert ("remove_not", "if a < b and xs:") in got
    assert ("negate_cond", "if not (a < b and not xs):") in got
    assert ("arith_swap", "return a - 1") in got
    assert ("const_off_by_one", "return a + 2") in got
    assert ("cmp_negate", "while a != b:") in got
    assert ("arith_swap", "a = a // 2") in got
    assert ("cmp_negate", "return xs[0] if a not in xs else None") in got
    # Every mutant differs from its original in exactly that line.
    for m in mutants_of("m.py", SOURCE):
        assert SOURCE.split("\n")[m.line - 1] == m.original != m.mutated


def test_a_mutation_applies_only_to_the_recorded_line(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE, encoding="utf-8")
    mutation = {
        "path": "m.py",
        "line": 3,
        "original": "        return a + 1",
        "mutated": "        return a - 1",
    }
    apply_mutation(tmp_path, mutation)
    assert "return a - 1" in (tmp_path / "m.py").read_text(encoding="utf-8")
    with pytest.raises(ValueError):
        apply_mutation(tmp_path, mutation)  # the line no longer reads `original`


def test_a_variant_takes_the_parents_files_and_overrides_fields(tmp_path: Path) -> None:
    parent = {
        "language": "python",
        "bug_class": "off_by_one",
        "description": "d",
        "test_command": "python -m pytest -q",
        "expected_fix": {"path": "m.py", "contains": "x"},
    }
    _write_case(tmp_path / "p", parent, {"m.py": "x = 1\n"})
    _write_case(
        tmp_path / "p--x",
        {"variant_of": "p", "test_command": "python -m pytest -q -x", "tags": ["fail_fast"]},
    )
    (tmp_path / "p--x" / ".arcs.yml").write_text("timeout_s: 30\n", encoding="utf-8")
    case = load_case(tmp_path / "p--x")
    assert case.root == tmp_path / "p"
    assert case.test_command == "python -m pytest -q -x"
    assert case.bug_class == "off_by_one"
    assert case.group == "fail_fast"
    repo = copy_case(case, tmp_path / "repo", git=False)
    assert sorted(p.name for p in repo.iterdir()) == [".arcs.yml", "m.py"]  # the variant's file overlays


def _tiny_case(tmp_path: Path) -> Path:
    parent = {
        "language": "python",
        "bug_class": "wrong_default",
        "description": "d",
        # Two checks; a fail-fast runner would stop at the first.
        "test_command": "python -c 'import m; assert m.A == 2; assert m.B == 2'",
        "expected_fix": {"path": "m.py", "contains": "A = 2"},
    }
    _write_case(tmp_path / "tiny", parent, {"m.py": "A = 1\nB = 1\n"})
    return tmp_path / "tiny"


PATCH_A = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-A = 1\n+A = 2\n B = 1\n"
PATCH_AB = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-A = 1\n-B = 1\n+A = 2\n+B = 2\n"


def test_recheck_runs_the_exact_command_on_a_fresh_copy(tmp_path: Path) -> None:
    case = load_case(_tiny_case(tmp_path))
    partial = recheck(case, PATCH_A)
    assert partial["recheck_exit"] == 1  # the first failure moved: a "fixed" here is false
    assert recheck(case, PATCH_AB)["recheck_exit"] == 0
    broken = recheck(case, PATCH_A.replace("-A = 1", "-A = 7"))
    assert broken["recheck_exit"] is None
    assert "does not apply" in broken["recheck_error"]


def test_the_summary_counts_false_fixed_and_times_hangs() -> None:
    records = [
        {"id": "a", "verdict": "fixed", "recheck_exit": 0, "wall_s": 10.0, "group": "base", "tags": []},
        {
            "id": "b",
            "verdict": "fixed",
            "recheck_exit": 1,
            "wall_s": 20.0,
            "group": "fail_fast",
            "tags": ["fail_fast"],
        },
        {"id": "c", "verdict": "no_candidates", "wall_s": 30.0, "group": "base", "tags": []},
        {
            "id": "h",
            "verdict": "no_verdict",
            "wall_s": 300.0,
            "capped": True,
            "group": "hang",
            "tags": ["hang"],
        },
        {
            "id": "e",
            "verdict": "environment",
            "wall_s": 1.0,
            "group": "environment",
            "tags": ["environment"],
            "expect_verdict": "environment",
            "candidates": 0,
        },
    ]
    s = summarize_part(records)
    assert s["overall"]["fixed"] == 2
    assert s["overall"]["false_fixed"] == 1
    assert s["overall"]["false_fixed_ids"] == ["b"]
    assert s["by_group"]["fail_fast"]["false_fixed"] == 1
    assert s["ordinary_median_wall_s"] == 20.0
    (hang,) = s["hangs"]
    assert hang["ratio_to_median"] == 15.0
    assert hang["capped"] and not hang["within_target"]
    (env,) = s["environment"]
    assert env["ok"]
    part = {"date": "d", "options": {"command": "c"}, "loadavg": [0.0, 0.0], "elapsed_s": 1.0, "summary": s}
    text = render_verdicts({"before": {"ours": part}})
    assert "**1** (b)" in text
    assert "> 300" in text


def test_records_merge_by_id() -> None:
    merged = merge_records([{"id": "b", "v": 1}, {"id": "a", "v": 1}], [{"id": "b", "v": 2}])
    assert merged == [{"id": "a", "v": 1}, {"id": "b", "v": 2}]


def test_kill_tree_reaches_processes_in_other_sessions() -> None:
    # The grandchild starts its own session, as the sandboxed test runs do.
    code = (
        "import subprocess, time; subprocess.Popen(['sleep', '60'], start_new_session=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 10
    while len(process_tree(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    tree = process_tree(proc.pid)
    assert len(tree) == 2
    assert kill_tree(proc.pid) == 2
    proc.wait(timeout=10)
    grandchild = tree[1]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        # A killed child of init may linger as a zombie for a moment.
        stat = Path(f"/proc/{grandchild}/stat")
        if stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail("the grandchild survived kill_tree")
