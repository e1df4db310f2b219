"""The application side of issue #27: bumps read from a checkout, both versions fetched and compared."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jobs import dependency_changes
from jobs.dependency_changes import bump_notices, checkout_bumps, what_changed
from jobs.history import read_changeset
from jobs.repair.depupdate.detect import Bump
from runners.distfetch import Fetched, FetchError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "depupdate"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_a_dependabot_style_commit_is_recognised_from_the_checkout(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "uv.lock").write_text((FIX / "uv.old.lock").read_text())
    (repo / "app.py").write_text("from markupsafe import soft_unicode\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "green")
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "uv.lock").write_text((FIX / "uv.new.lock").read_text())
    _git(repo, "commit", "-qam", "Bump markupsafe from 2.0.1 to 2.1.0")
    bumps = checkout_bumps(read_changeset(repo, base), repo)
    assert [(b.package, b.old, b.new, b.source) for b in bumps] == [
        ("markupsafe", "2.0.1", "2.1.0", "uv.lock")
    ]
    assert bump_notices(bumps) == ["dependency update: markupsafe 2.0.1 -> 2.1.0 (pypi, uv.lock)"]


def _fake_fetch(tmp_path: Path, sources: dict[str, dict[str, str]]):  # type: ignore[no-untyped-def]
    def fetch(ecosystem: str, package: str, version: str, *, cache_dir: Path, index_url: str) -> Fetched:
        if version not in sources:
            raise FetchError(f"{package} {version}: no sdist or wheel on the index")
        root = tmp_path / "unpacked" / version
        for rel, text in sources[version].items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        return Fetched(ecosystem, package, version, root, f"{package}-{version}.tar.gz")

    return fetch


def test_what_changed_joins_the_api_difference_the_changelog_and_its_stated_replacements(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = {
        "m-1/m/__init__.py": "def contextfunction(f):\n    return f\n",
        "m-1/CHANGES.md": "## 1.0\n- first\n",
    }
    new = {
        "m-2/m/__init__.py": "def pass_context(f):\n    return f\n",
        "m-2/CHANGES.md": "## 2.0\n- `contextfunction` is replaced by `pass_context`.\n\n## 1.0\n- first\n",
    }
    monkeypatch.setattr(dependency_changes, "fetch", _fake_fetch(tmp_path, {"1": old, "2": new}))
    dep = what_changed(Bump("pypi", "m", "1", "2", "requirements.txt"), cache_dir=tmp_path)
    assert [c.describe() for c in dep.api] == [
        "m.contextfunction: renamed to m.pass_context (the changelog says so)"
    ]
    assert [s.version for s in dep.changelog] == ["2.0"] and dep.notes == ()
    missing = what_changed(Bump("pypi", "m", "1", "3", "requirements.txt"), cache_dir=tmp_path)
    assert missing.api == () and missing.notes == ("m 3: no sdist or wheel on the index",)
    assert what_changed(Bump("go", "x", "v1", "v2", "go.mod"), cache_dir=tmp_path).notes == (
        "go packages are not fetched",
    )


def test_the_live_fetch_port_turns_a_broken_download_into_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> object:
        raise ConnectionResetError("reset")

    monkeypatch.setattr(dependency_changes, "fetch", broken)
    port = dependency_changes.distfetch_port(tmp_path)
    dep = what_changed(Bump("pypi", "m", "1", "2", "requirements.txt"), fetch_root=port)
    assert dep.api == () and dep.notes == ("m 1: fetch failed (ConnectionResetError)",)
