"""Tier 0's migration across a dependency's renamed, moved and re-keyworded API (issue #27)."""

from __future__ import annotations

import ast
from pathlib import Path

from jobs.repair.depupdate.apidiff import ApiChange
from jobs.repair.edits import apply_edits
from jobs.repair.tier0.migrate import PROPOSER, migrate_files, migration_candidates

SOFT = ApiChange("renamed", "markupsafe", "soft_unicode", "markupsafe.soft_str")
MARKUP = ApiChange("moved", "jinja2", "Markup", "markupsafe.Markup")
ESCAPE = ApiChange("moved", "jinja2", "escape", "markupsafe.escape")
KW = ApiChange("keyword_renamed", "jinja2.ext", "extract_from_ast", "ast", keyword="node")
METHOD_KW = ApiChange("keyword_renamed", "lib.client", "Client.get", "timeout", keyword="wait")


def _migrated(files: dict[str, str], changes: list[ApiChange]) -> dict[str, str]:
    edits, _ = migrate_files(changes, files, files.get)
    out = dict(files)
    for e in edits:
        assert out[e.path].count(e.old) == 1  # a replace edit the loop can apply
        out[e.path] = out[e.path].replace(e.old, e.new)
        ast.parse(out[e.path])
    return out


def test_a_renamed_import_and_its_uses_are_rewritten() -> None:
    src = (
        "from markupsafe import Markup, soft_unicode\n\ndef f(x):\n    return soft_unicode(x) + Markup('a')\n"
    )
    out = _migrated({"app/u.py": src}, [SOFT])
    assert (
        out["app/u.py"]
        == "from markupsafe import Markup, soft_str\n\ndef f(x):\n    return soft_str(x) + Markup('a')\n"
    )


def test_an_aliased_import_keeps_its_alias_and_module_attribute_uses_are_renamed() -> None:
    src = "import markupsafe as ms\nfrom markupsafe import soft_unicode as su\n\ny = ms.soft_unicode(1), su(2)\n"
    out = _migrated({"a.py": src}, [SOFT])
    assert (
        out["a.py"]
        == "import markupsafe as ms\nfrom markupsafe import soft_str as su\n\ny = ms.soft_str(1), su(2)\n"
    )


def test_a_moved_name_is_split_out_of_its_import_and_attribute_uses_get_an_import() -> None:
    src = "import jinja2\nfrom jinja2 import Environment, Markup, escape\n\ndef g(s):\n    return jinja2.Markup(s), Markup(s), escape(s)\n"
    out = _migrated({"v.py": src}, [MARKUP, ESCAPE])
    assert out["v.py"] == (
        "import jinja2\nimport markupsafe\nfrom jinja2 import Environment\nfrom markupsafe import escape\n"
        "from markupsafe import Markup\n\ndef g(s):\n    return markupsafe.Markup(s), Markup(s), escape(s)\n"
    )
    lone = _migrated({"w.py": "from jinja2 import Markup\n"}, [MARKUP])
    assert lone["w.py"] == "from markupsafe import Markup\n"


def test_renamed_keywords_at_the_calls_of_that_function_or_method_only() -> None:
    src = (
        "from jinja2.ext import extract_from_ast\nfrom other import extract_from_ast as x\n"
        "a = extract_from_ast(node=1, babel_style=False)\nb = x(node=2)\n"
        "c = client.get('u', wait=3)\nd = client.post('u', wait=4)\n"
    )
    out = _migrated({"k.py": src}, [KW, METHOD_KW])["k.py"]
    assert "extract_from_ast(ast=1, babel_style=False)" in out
    assert "x(node=2)" in out  # another module's function of that name
    assert "client.get('u', timeout=3)" in out and "client.post('u', wait=4)" in out


def test_files_that_do_not_use_the_change_and_removals_without_replacement_give_nothing() -> None:
    files = {
        "a.py": "from markupsafe import Markup\n",
        "b.txt": "soft_unicode",
        "c.py": "def (:\n  markupsafe",
    }
    assert migrate_files([SOFT, ApiChange("removed", "markupsafe", "Markup")], files, files.get) == ([], 0)


def test_candidates_apply_all_changes_first_then_each_alone(tmp_path: Path) -> None:
    files = {
        "u.py": "from markupsafe import soft_unicode\nsoft_unicode(1)\n",
        "v.py": "from jinja2 import Markup\n",
    }
    cands = migration_candidates("jinja2", "2.11.3 -> 3.1.2", [SOFT, MARKUP, ESCAPE], files, files.get)
    assert [c.changes for c in cands] == [(SOFT, MARKUP), (SOFT,), (MARKUP,)]
    first = cands[0]
    assert first.proposal.proposer == PROPOSER and first.sites == 3
    assert "markupsafe.soft_unicode: renamed to markupsafe.soft_str" in first.proposal.explanation
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    apply_edits(tmp_path, first.proposal.edits)  # the loop's own applier
    assert (tmp_path / "u.py").read_text() == "from markupsafe import soft_str\nsoft_str(1)\n"
    assert (tmp_path / "v.py").read_text() == "from markupsafe import Markup\n"
