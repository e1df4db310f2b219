"""Outside code: pinned PyPI source distributions nobody here wrote, fetched and cached on demand.

An outside case (``bench/outside/cases/<id>/case.json``) names its package in ``source`` and one
mutation; :func:`materialize` unpacks the sdist (fetched once with ``pip download`` and checked
against the pinned SHA-256, cached under ``bench/outside/.cache/``, which git ignores) and applies
the mutation. The sdists are not committed: they are fetched by pinned version and hash, so a run
uses byte-identical sources (about 0.5 MB in all).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"


@dataclass(frozen=True)
class Package:
    """A pinned sdist whose own test suite runs with this virtual environment's pytest."""

    name: str
    version: str
    sha256: str
    targets: dict[str, str]
    """Source file (mutated) -> the test path the case's command runs."""
    pytest_args: str = ""
    """Extra arguments every command needs (semver's ini requires pytest-cov: ``-o addopts=``)."""

    @property
    def sdist(self) -> str:
        """The file name ``pip download`` writes."""
        return f"{self.name}-{self.version}.tar.gz"


PACKAGES: tuple[Package, ...] = (
    Package(
        "inflection",
        "0.5.1",
        "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417",
        {"inflection/__init__.py": "test_inflection.py"},
    ),
    Package(
        "toolz",
        "1.0.0",
        "2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02",
        {
            "toolz/itertoolz.py": "toolz/tests/test_itertoolz.py",
            "toolz/dicttoolz.py": "toolz/tests/test_dicttoolz.py",
            "toolz/functoolz.py": "toolz/tests/test_functoolz.py",
            "toolz/recipes.py": "toolz/tests/test_recipes.py",
        },
    ),
    Package(
        "tabulate",
        "0.8.10",
        "6c57f3f3dd7ac2782770155f3adb2db0b1a269637e42f27599925e64b114f519",
        {"tabulate.py": "test"},
    ),
    Package(
        "more-itertools",
        "10.5.0",
        "5482bfef7849c25dc3c6dd53a6173ae4795da2a41a80faea6700d9f5846c5da6",
        {
            "more_itertools/more.py": "tests/test_more.py",
            "more_itertools/recipes.py": "tests/test_recipes.py",
        },
    ),
    Package(
        "semver",
        "3.0.2",
        "6253adb39c70f6e51afed2fa7152bcd414c411286088fb4b9effb133885ab4cc",
        {"src/semver/version.py": "tests", "src/semver/_deprecated.py": "tests"},
        pytest_args="-o addopts=",
    ),
)
INJECTED: tuple[Package, ...] = (
    # Hand-injected one-line bugs for tier 0 (issue #29, ``bench/outside/injected/``); not in
    # PACKAGES so that ``build.py`` never seeds mutants of them.
    Package(
        "parse",
        "1.20.2",
        "b41d604d16503c79d81af5165155c0b20f6c8d6c559efa66b4b695c3e5a0a0ce",
        {"parse.py": "tests"},
    ),
    Package(
        "pathspec",
        "0.12.1",
        "a482d51503a1ab33b1c67a6c3813a26953dbdc71c31dacaef9a838c4e29f5712",
        {
            "pathspec/util.py": "tests",
            "pathspec/pathspec.py": "tests",
            "pathspec/patterns/gitwildmatch.py": "tests",
        },
    ),
)
BY_NAME = {p.name: p for p in (*PACKAGES, *INJECTED)}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()


def fetch(pkg: Package) -> Path:
    """The sdist of ``pkg`` in the cache (downloaded with pip on first use), hash-checked."""
    dest = CACHE / "sdists"
    path = dest / pkg.sdist
    if not path.is_file():
        dest.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-binary",
                ":all:",
                "--no-deps",
                f"{pkg.name}=={pkg.version}",
                "-d",
                str(dest),
                "-q",
            ],
            check=True,
        )
    got = _sha256(path)
    if got != pkg.sha256:
        raise RuntimeError(f"{path}: sha256 {got} differs from the pinned {pkg.sha256}")
    return path


def unpacked(pkg: Package) -> Path:
    """The unpacked sdist (its top folder), without build leftovers (``*.egg-info``)."""
    out = CACHE / "src" / f"{pkg.name}-{pkg.version}"
    if out.is_dir():
        return out
    archive = fetch(pkg)
    (CACHE / "src").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE / "src") as tmp:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        (top,) = list(Path(tmp).iterdir())
        for egg in top.glob("*.egg-info"):
            shutil.rmtree(egg)
        try:
            top.rename(out)
        except OSError:
            if not out.is_dir():  # another process won the race: use its copy
                raise
    return out


def apply_mutation(repo: Path, mutation: dict[str, Any]) -> None:
    """Replace line ``mutation["line"]`` (1-based) of ``mutation["path"]``, which must read ``original``."""
    path = repo / mutation["path"]
    lines = path.read_text(encoding="utf-8").split("\n")
    index = int(mutation["line"]) - 1
    if lines[index] != mutation["original"]:
        raise ValueError(f"{mutation['path']}:{mutation['line']} is not {mutation['original']!r}")
    lines[index] = mutation["mutated"]
    path.write_text("\n".join(lines), encoding="utf-8")


def materialize(source: dict[str, Any], dest: Path, *, packages: Mapping[str, Package] | None = None) -> Path:
    """The package's tree with the case's mutation applied, in ``dest`` (``packages``: the manifest
    to look the package up in; this corpus's by default)."""
    pkg = (BY_NAME if packages is None else packages)[source["package"]]
    if source.get("version") != pkg.version:
        raise ValueError(f"{pkg.name}: case pins {source.get('version')}, the manifest {pkg.version}")
    shutil.copytree(unpacked(pkg), dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    if source.get("mutation"):
        apply_mutation(dest, source["mutation"])
    return dest
