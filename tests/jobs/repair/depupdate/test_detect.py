"""Recognising a dependency update in a change (issue #27, item 1), on lock files that npm, yarn,
pnpm and uv wrote for real bumps (tests/fixtures/depupdate, see its README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.repair.changes import changeset_from_git
from jobs.repair.depupdate.detect import Bump, bumps_in, detect_bumps, old_text, version_key
from jobs.repair.depupdate.manifests import (
    pep508,
    read_go_mod,
    read_pipfile_lock,
    read_pyproject,
    read_requirements,
    read_yarn_lock,
    spec_version,
)
from jobs.repair.diffing import parse_patch, unified_diff

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "depupdate"


def _pair(old: str, new: str) -> tuple[str, str]:
    return (FIX / old).read_text(), (FIX / new).read_text()


def _moves(bumps: list[Bump]) -> set[tuple[str, str, str, str]]:
    return {(b.ecosystem, b.package, b.old, b.new) for b in bumps}


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        ("package-lock.json", "package-lock.old.json", "package-lock.new.json"),
        ("yarn.lock", "yarn.old.lock", "yarn.new.lock"),
        ("pnpm-lock.yaml", "pnpm-lock.old.yaml", "pnpm-lock.new.yaml"),
    ],
)
def test_npm_lock_files_written_by_the_tools_give_the_two_bumps(path: str, old: str, new: str) -> None:
    bumps = detect_bumps({path: _pair(old, new)})
    assert _moves(bumps) == {("npm", "lodash", "4.17.20", "4.17.21"), ("npm", "ms", "2.1.2", "2.1.3")}
    assert all(b.exact and b.source == path for b in bumps)


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        ("yarn.lock", "yarn-berry.old.lock", "yarn-berry.new.lock"),
        ("pnpm-lock.yaml", "pnpm9-lock.old.yaml", "pnpm9-lock.new.yaml"),
    ],
)
def test_yarn_berry_and_pnpm9_lock_files(path: str, old: str, new: str) -> None:
    assert _moves(detect_bumps({path: _pair(old, new)})) == {("npm", "lodash", "4.17.20", "4.17.21")}


def test_a_lock_file_wins_over_its_manifest_and_unchanged_packages_are_not_bumps() -> None:
    bumps = detect_bumps(
        {
            "web/package.json": _pair("package.old.json", "package.new.json"),
            "web/package-lock.json": _pair("package-lock.old.json", "package-lock.new.json"),
        }
    )
    assert _moves(bumps) == {("npm", "lodash", "4.17.20", "4.17.21"), ("npm", "ms", "2.1.2", "2.1.3")}
    assert {b.source for b in bumps} == {"web/package-lock.json"}


def test_uv_lock_and_pyproject_give_markupsafe_once_and_skip_the_project_itself() -> None:
    bumps = detect_bumps(
        {
            "uv.lock": _pair("uv.old.lock", "uv.new.lock"),
            "pyproject.toml": _pair("pyproject.old.toml", "pyproject.new.toml"),
        }
    )
    assert [b.to_json() for b in bumps] == [
        {
            "ecosystem": "pypi",
            "package": "markupsafe",
            "old": "2.0.1",
            "new": "2.1.0",
            "source": "uv.lock",
            "exact": True,
        }
    ]
    assert Bump.from_json(bumps[0].to_json()) == bumps[0]


def test_requirements_options_hashes_markers_and_continuations() -> None:
    text = (
        "# pinned\n-r base.txt\n--index-url https://example.org/simple\n"
        "Jinja2==2.11.3 \\\n    --hash=sha256:abc \\\n    --hash=sha256:def\n"
        'MarkupSafe[extra] == 2.0.1 ; python_version >= "3.6"  # via jinja2\n'
        "requests>=2.0,<3\n-e ./local\nflask @ https://example.org/flask.tar.gz\n"
    )
    got = read_requirements(text)
    assert got == {"jinja2": {"2.11.3"}, "markupsafe": {"2.0.1"}, "requests": {"2.0"}}
    new = text.replace("2.11.3", "3.0.0").replace("2.0.1", "2.1.0")
    assert _moves(detect_bumps({"requirements/prod.txt": (text, new)})) == {
        ("pypi", "jinja2", "2.11.3", "3.0.0"),
        ("pypi", "markupsafe", "2.0.1", "2.1.0"),
    }


def test_pyproject_pep621_groups_and_poetry_tables() -> None:
    text = """
[project]
dependencies = ["attrs>=21.3", "click==8.0.1"]
[project.optional-dependencies]
docs = ["Sphinx~=4.0"]
[dependency-groups]
dev = ["pytest==7.0"]
[tool.poetry.dependencies]
python = "^3.9"
Flask = "^2.0.1"
rich = { version = "10.1", extras = ["jupyter"] }
[tool.poetry.group.test.dependencies]
hypothesis = "6.0"
"""
    assert read_pyproject(text) == {
        "attrs": {"21.3"},
        "click": {"8.0.1"},
        "sphinx": {"4.0"},
        "pytest": {"7.0"},
        "flask": {"2.0.1"},
        "rich": {"10.1"},
        "hypothesis": {"6.0"},
    }
    assert read_pyproject("not = [toml") == {}


def test_pipfile_lock_go_mod_and_yarn_berry() -> None:
    lock = '{"_meta": {}, "default": {"jinja2": {"version": "==2.11.3"}}, "develop": {"Pytest": {"version": "==7.1"}}}'
    assert read_pipfile_lock(lock) == {"jinja2": {"2.11.3"}, "pytest": {"7.1"}}
    gomod = "module x\n\ngo 1.21\n\nrequire github.com/a/b v1.2.3\nrequire (\n\tgolang.org/x/text v0.3.7 // indirect\n)\n"
    assert read_go_mod(gomod) == {"github.com/a/b": {"v1.2.3"}, "golang.org/x/text": {"v0.3.7"}}
    berry = '__metadata:\n  version: 8\n\n"lodash@npm:^4.17.20, lodash@npm:^4.17.21":\n  version: 4.17.21\n  resolution: "lodash@npm:4.17.21"\n'
    assert read_yarn_lock(berry) == {"lodash": {"4.17.21"}}


def test_several_copies_of_one_package_pair_in_version_order() -> None:
    old = '"a@^1":\n  version "1.0.0"\n\n"a@^2":\n  version "2.0.0"\n'
    new = '"a@^1":\n  version "1.5.0"\n\n"a@^2":\n  version "2.3.0"\n'
    assert _moves(detect_bumps({"yarn.lock": (old, new)})) == {
        ("npm", "a", "1.0.0", "1.5.0"),
        ("npm", "a", "2.0.0", "2.3.0"),
    }


def test_added_and_removed_packages_have_an_empty_side_and_other_files_are_ignored() -> None:
    bumps = detect_bumps({"requirements.txt": ("a==1\nb==2\n", "a==1\nc==3\n"), "src/x.py": ("a", "b")})
    assert _moves(bumps) == {("pypi", "b", "2", ""), ("pypi", "c", "", "3")}


def test_spec_versions_and_pep508() -> None:
    assert spec_version("^4.17.20") == "4.17.20"
    assert spec_version("<3,>=2.1") == "2.1"
    assert spec_version("~=1.4.2") == "1.4.2"
    assert spec_version("*") == ""
    assert pep508("zope.interface>=5; os_name == 'nt'") == ("zope-interface", "5")
    assert pep508("pkg @ git+https://x/y") is None
    assert version_key("1.10") > version_key("1.9") > version_key("1.9rc1")


def test_a_changeset_alone_rebuilds_the_base_side_of_a_changed_lock_file() -> None:
    old, new = _pair("uv.old.lock", "uv.new.lock")
    diff = unified_diff({"uv.lock": old}, {"uv.lock": new, "README": "x\n"})
    changes = changeset_from_git("a" * 40, "b" * 40, log="", diff=diff)
    patch = changes.file("uv.lock")
    assert patch is not None and old_text(new, patch) == old
    assert old_text(new.replace("2.1.0", "9.9.9"), patch) is None  # the head moved on: no guess
    bumps = bumps_in(changes, {"uv.lock": new}.get)
    assert _moves(bumps) == {("pypi", "markupsafe", "2.0.1", "2.1.0")}
    assert parse_patch(diff)  # the diff is a real one
