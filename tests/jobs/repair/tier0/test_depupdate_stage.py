"""Tier 0's dependency-update stage inside the real repair loop (issue #27, item 3 and 4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jobs.repair.budget import Budget
from jobs.repair.depupdate.apidiff import ApiChange
from jobs.repair.depupdate.changelog import between
from jobs.repair.depupdate.context import DependencyChange
from jobs.repair.depupdate.detect import Bump
from jobs.repair.fakes import FakeClock, FakeWorkbench, ScriptedProposer, outcome
from jobs.repair.loop import LoopConfig, RepairLoop
from jobs.repair.task import RepairTask
from jobs.repair.tier0.depupdate_stage import DependencyUpdateProposer, breaking_report
from jobs.repair.workbench import TestOutcome

# jinja2 2.11.3's own use of markupsafe (src/jinja2/runtime.py), cut down
RUNTIME = "from markupsafe import Markup, soft_unicode\n\n\ndef markup_join(seq):\n    return ''.join(map(soft_unicode, seq))\n"
TEST = "from app.runtime import markup_join\n\n\ndef test_join():\n    assert markup_join(['a']) == 'a'\n"
CHANGELOG = "Version 2.1.0\n-------------\n\n-   Remove ``soft_unicode``, which was previously deprecated. Use\n    ``soft_str`` instead. :pr:`261`\n"
DEP = DependencyChange(
    Bump("pypi", "markupsafe", "2.0.1", "2.1.0", "requirements.txt"),
    (
        ApiChange("renamed", "markupsafe", "soft_unicode", "markupsafe.soft_str"),
        ApiChange("removed", "markupsafe", "gone"),
    ),
    tuple(between(CHANGELOG, "2.0.1", "2.1.0")),
)


def markupsafe_21(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
    """markupsafe 2.1 installed: importing soft_unicode fails the test module; soft_str works."""
    if any("soft_unicode" in text for p, text in files.items() if p.endswith(".py")):
        return outcome(errors=["tests/test_runtime.py"])
    return outcome(["tests/test_runtime.py::test_join"])


def test_the_migration_is_offered_first_and_verified_by_the_loop_with_no_model() -> None:
    files = {
        "app/runtime.py": RUNTIME,
        "tests/test_runtime.py": TEST,
        "requirements.txt": "markupsafe==2.1.0\n",
    }
    wb = FakeWorkbench(files, base=outcome(errors=["tests/test_runtime.py"]), judge=markupsafe_21)
    inner = ScriptedProposer([])
    proposer = DependencyUpdateProposer(inner, [DEP])
    result = RepairLoop(None, proposer, wb, FakeClock(), config=LoopConfig()).run(
        RepairTask(kind="ci", test_command="pytest", failure_class="test"), Budget(), "0"
    )
    assert result.fixed, result.reason
    assert "+from markupsafe import Markup, soft_str" in result.patch
    assert "+    return ''.join(map(soft_str, seq))" in result.patch
    assert result.usage.usd == 0
    assert [c.label for c in proposer.offers] == [
        "migrate markupsafe 2.0.1 -> 2.1.0: markupsafe.soft_unicode"
    ]


def test_nothing_to_migrate_hands_over_to_the_wrapped_proposer() -> None:
    files = {"app/x.py": "import os\n"}
    wb = FakeWorkbench(files, base=outcome(errors=["t"]), judge=lambda f, s: outcome(errors=["t"]))
    inner = ScriptedProposer([])
    proposer = DependencyUpdateProposer(inner, [DEP])
    RepairLoop(None, proposer, wb, FakeClock(), config=LoopConfig()).run(
        RepairTask(kind="ci", test_command="pytest", failure_class="test"), Budget(), "0"
    )
    assert proposer.offers == () and len(inner.requests) >= 1


class _Source:
    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(files)

    def read(self, path: str) -> str | None:
        return self._files.get(path)

    def files(self) -> Sequence[str]:
        return sorted(self._files)


def test_the_report_names_symbol_sites_and_changelog_line_of_what_hits_the_repository() -> None:
    text = breaking_report(
        [DEP], _Source({"app/runtime.py": RUNTIME, "app/other.py": "import markupsafe\nmarkupsafe.gone()\n"})
    )
    assert text.splitlines() == [
        "**markupsafe 2.0.1 -> 2.1.0** breaks code this repository uses:",
        "- `markupsafe.soft_unicode: renamed to markupsafe.soft_str` at `app/runtime.py:1`",
        "  - changelog: 2.1.0: -   Remove ``soft_unicode``, which was previously deprecated. Use",
        "- `markupsafe.gone: removed` at `app/other.py:2`",
    ]
    assert breaking_report([DEP], _Source({"a.py": "x = 1\n"})) == ""
