"""A revert that only undoes a detected bump's manifest/lock lines is recognised (issue #27:
the bump is kept), on the lock files npm wrote (tests/fixtures/depupdate)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jobs.repair.depupdate.detect import Bump, detect_bumps
from jobs.repair.depupdate.keep import reverts_only_bump
from jobs.repair.model import Edit
from jobs.repair.tier0.anchor import replace_pair

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "depupdate"
OLD = {
    "package.json": (FIX / "package.old.json").read_text(),
    "package-lock.json": (FIX / "package-lock.old.json").read_text(),
    "src/a.js": "const _ = require('lodash');\n",
}
NEW = {**OLD, "package.json": (FIX / "package.new.json").read_text(),
       "package-lock.json": (FIX / "package-lock.new.json").read_text()}  # fmt: skip
BUMPS = detect_bumps({p: (OLD[p], NEW[p]) for p in ("package.json", "package-lock.json")})


def head(files: dict[str, str]) -> Callable[[str], str | None]:
    return files.get


def undo(path: str, to: str | None = None) -> Edit:
    """The replace edit that turns the head file into the old one (or ``to``)."""
    pair = replace_pair(NEW[path], OLD[path] if to is None else to)
    assert pair is not None
    return Edit(path=path, old=pair[0], new=pair[1])


def test_the_fixture_bump_is_detected() -> None:
    assert {(b.package, b.old, b.new) for b in BUMPS} == {
        ("lodash", "4.17.20", "4.17.21"),
        ("ms", "2.1.2", "2.1.3"),
    }


def test_undoing_the_manifest_and_lock_is_only_the_bump() -> None:
    edits = [undo("package.json"), undo("package-lock.json")]
    assert reverts_only_bump(edits, BUMPS, head(NEW))
    assert reverts_only_bump([undo("package-lock.json")], BUMPS, head(NEW))  # one hunk of it too


def test_undoing_one_of_two_bumped_packages_still_only_undoes_a_bump() -> None:
    one = NEW["package.json"].replace('"ms":"2.1.3"', '"ms":"2.1.2"')
    assert reverts_only_bump([undo("package.json", one)], BUMPS, head(NEW))


def test_a_revert_that_also_changes_code_is_not_only_the_bump() -> None:
    code = Edit(path="src/a.js", old="require('lodash')", new="require('lodash/fp')")
    assert not reverts_only_bump([undo("package.json"), code], BUMPS, head(NEW))


def test_moving_a_version_the_change_did_not_bump_or_forward_is_not_undoing_it() -> None:
    other = NEW["package.json"].replace('"@types/node":"^18.0.0"', '"@types/node":"^16.0.0"')
    assert not reverts_only_bump([undo("package.json", other)], BUMPS, head(NEW))
    further = NEW["package.json"].replace('"lodash":"4.17.21"', '"lodash":"4.17.22"')
    assert not reverts_only_bump([undo("package.json", further)], BUMPS, head(NEW))


def test_no_bumps_no_edits_no_version_moved_or_an_edit_that_does_not_apply() -> None:
    edits = [undo("package.json")]
    assert not reverts_only_bump(edits, [], head(NEW))
    assert not reverts_only_bump([], BUMPS, head(NEW))
    spaced = NEW["package.json"].replace('{"name"', '{ "name"')
    assert not reverts_only_bump([undo("package.json", spaced)], BUMPS, head(NEW))  # moves no version
    assert not reverts_only_bump(edits, BUMPS, head(OLD))  # the head no longer has the bumped text


def test_a_removed_package_put_back_undoes_its_removal() -> None:
    removed = [Bump("pypi", "six", "1.16.0", "", "requirements.txt")]
    files = {"requirements.txt": "requests==2.31.0\n"}
    put_back = Edit(path="requirements.txt", kind="insert", line=1, new="six==1.16.0")
    assert reverts_only_bump([put_back], removed, head(files))
    downgrade = Edit(path="requirements.txt", old="2.31.0", new="2.30.0")
    assert not reverts_only_bump([downgrade], removed, head(files))


def test_lock_lines_no_reader_takes_as_installed_count_when_only_bumped_versions_go_back() -> None:
    """package-lock's ``packages[""]`` copies package.json's specifiers: the hunk that puts them
    back moves no installed version, yet it is the bump's."""
    root = Edit(path="package-lock.json", old='"lodash": "4.17.21",\n        "ms": "2.1.3"',
                new='"lodash": "4.17.20",\n        "ms": "2.1.2"')  # fmt: skip
    assert NEW["package-lock.json"].count(root.old) == 1
    assert not detect_bumps(
        {
            "package-lock.json": (
                NEW["package-lock.json"],
                NEW["package-lock.json"].replace(root.old, root.new),
            )
        }
    )
    assert reverts_only_bump([root], BUMPS, head(NEW))
    other = Edit(path="package-lock.json", old=root.old, new='"lodash": "4.17.20",\n        "ms": "2.1.4"')
    assert not reverts_only_bump([other], BUMPS, head(NEW))
