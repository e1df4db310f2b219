"""Import contracts (tests/import_contracts.toml) as a ratchet over tests/fixtures/import_baseline.txt.

The first test is the CI check: it fails on a violation that is not in the baseline (new coupling:
fix the import, or - deliberately, in review - regenerate with ``scripts/import-graph --write``) and
on a baseline entry that no longer occurs (the code got better: shrink the baseline the same way).
The other tests pin what the checker itself sees, on small trees written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.import_graph import (
    BASELINE,
    ROOT,
    Analysis,
    analyse,
    load_contracts,
    read_baseline,
    render_baseline,
    strongly_connected,
    under,
)

REGENERATE = "scripts/import-graph --write"


@pytest.fixture(scope="module")
def current() -> Analysis:
    return analyse()


def test_no_new_violations_and_no_stale_baseline_entries(current: Analysis) -> None:
    # The baseline is empty since #12 removed every violation; the file (its header) must still
    # exist, so a deleted baseline is not mistaken for a clean one.
    assert BASELINE.is_file(), f"{BASELINE.relative_to(ROOT)} is missing: run {REGENERATE}"
    baseline = read_baseline()
    found = set(current.violations)
    new = sorted(found - baseline)
    stale = sorted(baseline - found)
    message = []
    if new:
        message.append(
            f"{len(new)} import(s) break tests/import_contracts.toml and are not in the baseline "
            f"(fix them; only if the coupling is intended, run {REGENERATE}):"
        )
        message += [f"  {entry}\n      at {current.where(entry)}" for entry in new]
    if stale:
        message.append(
            f"{len(stale)} baseline entr(y/ies) no longer occur - the ratchet moves: remove them "
            f"from {BASELINE.relative_to(ROOT)} (or run {REGENERATE}):"
        )
        message += [f"  {entry}" for entry in stale]
    assert not message, "\n".join(message)


def test_every_module_named_by_the_contracts_exists(current: Analysis) -> None:
    """A misspelt prefix would make a contract silently vacuous."""
    contracts = load_contracts()
    named = {p for layer in contracts.layers for p in layer}
    named |= {module for _, module, _ in contracts.protected}
    named |= {a for _, _, allowed in contracts.protected for a in allowed}
    for _, sources, forbidden, allowed, _ in contracts.forbidden:
        named |= {*sources, *forbidden, *allowed}
    named |= {m for _, members in contracts.independence for m in members}
    named |= set(contracts.leaves)
    missing = sorted(p for p in named if not any(under(m, p) for m in current.modules))
    assert not missing


# --- the checker on small trees -------------------------------------------------------------------


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    packages = {"bot", "jobs", "jobs/repair", "runners", "indexing"}
    for rel in files:
        parts = Path(rel).parts
        packages |= {"/".join(parts[:i]) for i in range(1, len(parts))}
    for package in packages:
        (root / package).mkdir(parents=True, exist_ok=True)
        init = root / package / "__init__.py"
        if not init.exists():
            init.write_text("", encoding="utf-8")
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _violations(root: Path, files: Mapping[str, str]) -> set[str]:
    return set(analyse(_tree(root / "src", files), load_contracts(), root / "cache").violations)


def test_layers_protected_and_independence(tmp_path: Path) -> None:
    found = _violations(
        tmp_path,
        {
            "bot/errors.py": "class ArcsError(Exception): ...\n",
            "bot/cli/app.py": "from jobs import worker\n",  # downwards: fine
            "bot/web.py": "from bot.cli import app\n",  # into bot.cli from bot: protected only
            "jobs/worker.py": "from bot.errors import ArcsError\n",
            "runners/sandbox.py": "from bot import errors\nfrom indexing import files\n",
            "indexing/files.py": "X = 1\n",
            "jobs/pipeline.py": "X = 1\n",
            "jobs/repair/gates.py": "from ..pipeline import X\nfrom . import model\n",  # relative
            "jobs/repair/model.py": "X = 1\n",
        },
    )
    assert found == {
        "[layer] protected: bot.web -> bot.cli.app",
        "[layer] layers+pure-core: jobs.repair.gates -> jobs.pipeline",
        "[layer] layers: jobs.worker -> bot.errors",
        "[layer] layers+ground-floor: runners.sandbox -> bot.errors",
        "[layer] independence: runners.sandbox -> indexing.files",
    }


def test_pure_core_forbids_effects_directly_and_through_our_modules(tmp_path: Path) -> None:
    found = _violations(
        tmp_path,
        {
            "indexing/files.py": "import subprocess\n",
            "indexing/languages.py": "SUFFIXES = {'.py': 'python'}\n",
            "indexing/retriever.py": "def load():\n    from indexing import files\n",
            "jobs/repair/gates.py": "from indexing.files import X\nfrom indexing.languages import SUFFIXES\n",
            "jobs/repair/loop.py": "from jobs.repair import gates\nfrom indexing import retriever\n",
            "jobs/repair/env.py": "import os\n\ndef token():\n    return os.environ.get('T')\n",
            "jobs/repair/clock.py": "from time import monotonic\n",
            "jobs/repair/llm.py": "def client():\n    import anthropic\n",
            "jobs/repair/runs.py": "from runners.sandbox import Sandbox\n",
            "runners/sandbox.py": "class Sandbox: ...\n",
        },
    )
    assert found == {
        "[layer] pure-core: jobs.repair.gates -> indexing.files",
        "[layer] pure-core: jobs.repair.loop -> indexing.retriever",  # effectful through a function
        "[function-level] pure-core: jobs.repair.env -> os.environ",
        "[layer] pure-core: jobs.repair.clock -> time.monotonic",
        "[function-level] pure-core: jobs.repair.llm -> anthropic",
        "[layer] pure-core: jobs.repair.runs -> runners.sandbox",
    }


def test_leaves_may_be_imported_by_every_package_and_import_only_the_standard_library(
    tmp_path: Path,
) -> None:
    contracts = load_contracts()
    assert contracts.leaves, "the contracts declare no leaves: this test would pass vacuously"
    found = _violations(
        tmp_path,
        {
            "runners/errors.py": "class ArcsError(Exception): ...\n",
            "runners/wsfs.py": "import os\nimport stat\nfrom pathlib import Path\n",
            "runners/docker.py": "import subprocess\n",
            "indexing/files.py": "from runners import wsfs\nfrom runners.errors import ArcsError\n",
            "jobs/repair/edits.py": "from runners import wsfs\nfrom runners.errors import ArcsError\n",
            "jobs/repair/gates.py": "from runners import docker\n",  # not a leaf: still forbidden
            "indexing/store.py": "from runners.docker import X\n",  # not a leaf: still independent
        },
    )
    assert found == {
        "[layer] pure-core: jobs.repair.gates -> runners.docker",
        "[layer] independence: indexing.store -> runners.docker",
    }


def test_a_leaf_that_imports_our_modules_effects_or_third_party_code_is_a_violation(tmp_path: Path) -> None:
    found = _violations(
        tmp_path,
        {
            "runners/errors.py": "import time\n",  # an effect root
            "runners/wsfs.py": (
                "import os\n"
                "from runners import errors\n"  # another leaf: fine
                "from runners.docker import X\n"  # a non-leaf module of ours
                "def f():\n    import yaml\n"  # not the standard library
                "def g():\n    return os.environ['HOME']\n"  # the environment
            ),
            "runners/docker.py": "X = 1\n",
        },
    )
    assert found == {
        "[layer] leaves: runners.errors -> time",
        "[layer] leaves: runners.wsfs -> runners.docker",
        "[function-level] leaves: runners.wsfs -> yaml",
        "[function-level] leaves: runners.wsfs -> os.environ",
    }


def test_the_ground_floor_imports_nothing_of_jobs_or_bot_at_any_scope(tmp_path: Path) -> None:
    found = _violations(
        tmp_path,
        {
            "jobs/repair/changes.py": "class ChangeSet: ...\n",
            "jobs/repair/model.py": "X = 1\n",
            "jobs/config.py": "X = 1\n",
            "bot/settings.py": "X = 1\n",
            "runners/errors.py": "class ArcsError(Exception): ...\n",
            "runners/gitchanges.py": "from jobs.repair.changes import ChangeSet\n",  # same layer: still out
            "runners/sandbox.py": "from runners.errors import ArcsError\n\ndef f():\n    import jobs.config\n",
            "indexing/index.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from jobs.repair.model import X\n"
                "    from bot.settings import X\n"
            ),
            "indexing/files.py": "from runners import errors\n",  # a leaf: fine
        },
    )
    assert found == {
        "[layer] ground-floor: runners.gitchanges -> jobs.repair.changes",
        "[function-level] layers+ground-floor: runners.sandbox -> jobs.config",
        "[layer] ground-floor: indexing.index -> jobs.repair.model (type-checking)",
        "[layer] layers+ground-floor: indexing.index -> bot.settings (type-checking)",
    }


def test_the_real_contracts_keep_runners_and_indexing_off_jobs_and_bot(current: Analysis) -> None:
    contracts = load_contracts()
    floor = [(s, f) for _, s, f, _, _ in contracts.forbidden if {"runners", "indexing"} <= set(s)]
    assert floor and {"jobs", "bot"} <= set(floor[0][1])
    upward = [
        i
        for i in current.imports
        if i.internal
        and any(under(i.importer, p) for p in ("runners", "indexing"))
        and any(under(i.target, p) for p in ("jobs", "bot"))
    ]
    assert upward == []


def test_type_checking_counts_for_layers_but_not_for_run_time_cycles(tmp_path: Path) -> None:
    found = _violations(
        tmp_path,
        {
            "jobs/a.py": "from jobs import b\n",
            "jobs/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from jobs.a import A\n"
                "    from bot.settings import Settings\n"
                "else:\n"
                "    from jobs import c\n"
            ),
            "jobs/c.py": "X = 1\n",
            "bot/settings.py": "class Settings: ...\n",
        },
    )
    assert found == {
        "[layer] layers: jobs.b -> bot.settings (type-checking)",
        "[typing-cycle] jobs.a, jobs.b",  # not a run-time [cycle]
    }


def test_cycles_counting_type_checking_imports_are_reported_apart(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path / "src",
        {
            "jobs/a.py": "from jobs import b\n",
            "jobs/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from jobs.a import A\n",
            "jobs/c.py": "from jobs import a\n",
        },
    )
    analysis = analyse(tree, load_contracts(), tmp_path / "cache")
    assert analysis.components == []  # never runs: not a cycle of the run-time graph
    assert analysis.typing_components == [["jobs.a", "jobs.b"]]
    assert not any(v.startswith("[cycle]") for v in analysis.violations)
    # ... but still a violation of its own, which the ratchet (and --check) fail on
    assert set(analysis.violations) == {"[typing-cycle] jobs.a, jobs.b"}


def test_a_run_time_cycle_is_not_listed_again_as_a_typing_cycle(tmp_path: Path) -> None:
    found = _violations(
        tmp_path,
        {
            "jobs/a.py": "from jobs import b\n",
            "jobs/b.py": "from jobs import a\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from jobs import c\n",
            "jobs/c.py": "from jobs import d\n",
            "jobs/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from jobs import c\n",
        },
    )
    assert found == {"[cycle] jobs.a, jobs.b", "[typing-cycle] jobs.c, jobs.d"}


def test_function_level_imports_close_cycles_and_are_listed_apart(tmp_path: Path) -> None:
    analysis = analyse(
        _tree(
            tmp_path / "src",
            {
                "jobs/actors.py": "from jobs import pipeline\n",
                "jobs/pipeline.py": "class Job:\n    def run(self):\n        from jobs.actors import send\n",
                "jobs/worker.py": "def main():\n    from jobs import pipeline\n",  # lazy but acyclic: fine
                "runners/sandbox.py": "def make():\n    from runners import docker\n",
                "runners/docker.py": "from runners.sandbox import make\n",
            },
        ),
        load_contracts(),
        tmp_path / "cache",
    )
    assert set(analysis.violations) == {
        "[function-level] cycle: jobs.pipeline -> jobs.actors",
        "[function-level] cycle: runners.sandbox -> runners.docker",
        "[cycle] jobs.actors, jobs.pipeline",
        "[cycle] runners.docker, runners.sandbox",
    }
    assert analysis.import_time_components == []  # hidden from import time, still a cycle


def test_sample_repositories_under_data_dirs_are_not_code(tmp_path: Path) -> None:
    found = _violations(
        tmp_path,
        {
            "bot/samples/__init__.py": "from bot import errors\n",
            "bot/errors.py": "X = 1\n",
            "bot/samples/demo/jobs_like/mod.py": "from bot.cli import app\n",
            "bot/cli/app.py": "X = 1\n",
        },
    )
    assert found == set()


def test_strongly_connected_components() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": set()}
    components = sorted(c for c in strongly_connected(graph) if len(c) > 1)
    assert components == [["a", "b", "c"], ["d", "e"]]


def test_the_baseline_renders_in_categories(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "src", {"runners/x.py": "import bot.errors\n", "bot/errors.py": ""})
    analysis = analyse(tree, load_contracts(), tmp_path / "cache")
    text = render_baseline(analysis)
    assert "# layer: 1\n[layer] layers+ground-floor: runners.x -> bot.errors\n" in text
    assert "# function-level: 0\n" in text
    assert "# cycle: 0\n" in text
    assert "# typing-cycle: 0\n" in text
