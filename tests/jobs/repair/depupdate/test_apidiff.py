"""The public API difference of two versions of a Python distribution, from source (issue #27)."""

from __future__ import annotations

from jobs.repair.depupdate.apidiff import module_names, read_api
from jobs.repair.depupdate.compare import diff_sources

OLD = {
    "pkg-1.0/setup.py": "import setuptools\n",
    "pkg-1.0/src/pkg/__init__.py": (
        "from markupsafe import Markup\n"
        "from ._native import soft_unicode, soft_str\n"
        "from .core import run, Engine\n"
        "from . import helpers\n"
        "def __getattr__(name):\n"
        "    if name == 'old_shim':\n"
        "        warnings.warn(\"'old_shim' is deprecated, use 'run'\", DeprecationWarning)\n"
        "        return run\n"
        "    raise AttributeError(name)\n"
    ),
    "pkg-1.0/src/pkg/_native.py": (
        "def soft_str(s):\n    return str(s)\n\n"
        "def soft_unicode(s):\n"
        "    import warnings\n"
        "    warnings.warn(\"'soft_unicode' has been renamed to 'soft_str'. The old name will be removed.\","
        " DeprecationWarning, stacklevel=2)\n"
        "    return soft_str(s)\n"
    ),
    "pkg-1.0/src/pkg/core.py": (
        "import os\n"
        "__all__ = ['run', 'Engine', 'render', 'legacy', 'unicode_join']\n"
        "def run(cmd, node=None, *, quiet=False):\n    pass\n"
        "def render(tpl, ctx):\n    pass\n"
        "def legacy():\n    pass\n"
        "def unicode_join(seq):\n    return concat(seq)\n"
        "def concat(seq):\n    pass\n"
        "def loose(*args, **kwargs):\n    pass\n"
        "class Engine:\n"
        "    def __init__(self, path):\n        pass\n"
        "    def start(self, fast=False):\n        pass\n"
        "    def iteritems(self):\n        pass\n"
        "    def _private(self):\n        pass\n"
    ),
    "pkg-1.0/src/pkg/helpers.py": "def helper():\n    pass\n",
    "pkg-1.0/src/pkg/gone.py": "def thing():\n    pass\n",
    "pkg-1.0/tests/test_core.py": "def test_x():\n    pass\n",
}

NEW = {
    "pkg-2.0/src/pkg/__init__.py": "from ._native import soft_str\nfrom .core import run, Engine\nfrom . import helpers\n",
    "pkg-2.0/src/pkg/_native.py": "def soft_str(s):\n    return str(s)\n",
    "pkg-2.0/src/pkg/core.py": (
        "__all__ = ['run', 'Engine', 'render', 'concat']\n"
        "def run(cmd, ast=None, *, quiet=False):\n    pass\n"
        "def render(tpl, ctx, env):\n    pass\n"
        "def concat(seq):\n    pass\n"
        "def loose(context, value):\n    pass\n"
        "class Engine:\n"
        "    def __init__(self, path):\n        pass\n"
        "    def start(self):\n        pass\n"
    ),
    "pkg-2.0/src/pkg/helpers.py": "def helper():\n    pass\n\ndef legacy():\n    pass\n",
    "pkg-2.0/tests/test_core.py": "",
}


def _found() -> dict[str, str]:
    return {
        c.qualified + (f"[{c.keyword}]" if c.keyword else ""): c.describe() for c in diff_sources(OLD, NEW)
    }


def test_module_names_are_found_wherever_the_archive_roots_them_and_tests_are_skipped() -> None:
    names = module_names(OLD)
    assert names["pkg"] == ("pkg-1.0/src/pkg/__init__.py", True)
    assert "pkg.core" in names and "pkg._native" in names
    assert not any(n.startswith(("tests", "setup")) or "test_core" in n for n in names)


def test_renames_moves_and_removals_name_their_replacement_when_the_old_version_does() -> None:
    found = _found()
    # the old definition behind a re-export warns "renamed to 'soft_str'" and returns it
    assert found["pkg.soft_unicode"].startswith("pkg.soft_unicode: renamed to pkg.soft_str")
    # a re-export of another package's name: moved there
    assert found["pkg.Markup"].startswith("pkg.Markup: moved to markupsafe.Markup")
    # a body that only returns another name that still exists
    assert found["pkg.core.unicode_join"].startswith("pkg.core.unicode_join: renamed to pkg.core.concat")
    # the same name defined in another public module now
    assert found["pkg.core.legacy"].startswith("pkg.core.legacy: moved to pkg.helpers.legacy")
    assert found["pkg.gone"] == "pkg.gone: module removed"
    assert found["pkg.core.Engine.iteritems"] == "pkg.core.Engine.iteritems: removed"


def test_keyword_changes_and_new_required_parameters() -> None:
    found = _found()
    assert found["pkg.core.run[node]"] == "pkg.core.run: keyword 'node' renamed to 'ast'"
    assert found["pkg.core.Engine.start[fast]"] == "pkg.core.Engine.start: keyword 'fast' removed"
    assert found["pkg.core.render[env]"] == "pkg.core.render: new required parameter 'env'"
    # (*args, **kwargs) accepted anything: naming its parameters breaks no caller by keyword
    assert not any(k.startswith("pkg.core.loose") for k in found)


def test_private_names_unlisted_names_shims_and_unchanged_names_are_not_reported() -> None:
    found = _found()
    assert not any("_private" in k or k.rsplit(".", 1)[-1] == "os" for k in found)
    assert "pkg.core.concat" not in found  # added to __all__, not removed
    assert "pkg.run" not in found and "pkg.helpers" not in found
    old_api = read_api(OLD)
    assert "old_shim" in old_api["pkg"].shims and old_api["pkg"].shims["old_shim"] == ["run"]


def test_a_shim_that_still_answers_the_name_is_a_deprecation_not_a_removal() -> None:
    new = dict(NEW)
    new["pkg-2.0/src/pkg/__init__.py"] += (
        "def __getattr__(name):\n    if name == 'soft_unicode':\n        return soft_str\n    raise AttributeError(name)\n"
    )
    assert "pkg.soft_unicode" not in {c.qualified for c in diff_sources(OLD, new)}


def test_source_that_does_not_parse_is_skipped_not_fatal() -> None:
    broken = {"p/__init__.py": "def (:\n", "p/ok.py": "def f(a):\n    pass\n"}
    assert set(read_api(broken)) == {"p.ok"}
    assert [
        c.describe() for c in diff_sources(broken, {"p/__init__.py": "", "p/ok.py": "def f(b):\n    pass\n"})
    ] == ["p.ok.f: keyword 'a' renamed to 'b'"]
