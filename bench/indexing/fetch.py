"""Fetch the real code trees of the indexing benchmark (pinned versions, from the package registries).

``python -m bench.indexing.fetch [--only NAME ...]``

Each tree is a source distribution: ``pip download --no-binary :all: --no-deps NAME==VERSION`` for
PyPI, ``npm pack NAME@VERSION`` for npm. It is unpacked under ``bench/indexing/trees/NAME`` (gitignored)
and made a git repository with one commit (fixed identity and date, so the commit id is
reproducible). A tree already there is left as is; delete its folder to fetch it again.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bench.common import init_git_repo

TREES_DIR = Path(__file__).resolve().parent / "trees"


@dataclass(frozen=True)
class Tree:
    """One benchmark tree: registry, package and pinned version."""

    name: str
    registry: str  # "pypi" or "npm"
    package: str
    version: str
    size: str
    """Rough size class (``small`` ~5k lines, ``mid`` ~50k, ``large`` ~300k), for the report."""
    keep: tuple[str, ...] = ()
    """Top-level folders kept (files at the top are always kept); empty keeps everything. Used to
    hit the size classes: the package without its test suite."""


TREES: tuple[Tree, ...] = (
    # src/requests: ~6k lines (the sdist's tests/ left out)
    Tree("requests", "pypi", "requests", "2.32.3", "small", keep=("src",)),
    # the pydantic package: ~47k lines of Python
    Tree("pydantic", "pypi", "pydantic", "2.10.4", "mid", keep=("pydantic",)),
    # django/ + docs/: ~330k lines (Python, templates, JS, reStructuredText); tests/ left out
    Tree("django", "pypi", "Django", "5.1.4", "large", keep=("django", "docs")),
    # TypeScript sources (src/) plus the compiled dist/ that the default exclusions skip
    Tree("rxjs", "npm", "rxjs", "7.8.1", "js"),
)


def tree_path(name: str) -> Path:
    """Where the git repository of tree ``name`` lives once fetched."""
    return TREES_DIR / name


def _unpack(archive: Path, dest: Path) -> None:
    """Unpack ``archive`` and move its single top folder's contents to ``dest``."""
    with tempfile.TemporaryDirectory(dir=TREES_DIR) as tmp_name:
        tmp = Path(tmp_name)
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(tmp)
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(tmp, filter="data")
        entries = list(tmp.iterdir())
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp
        shutil.move(str(top), str(dest))


def fetch(tree: Tree) -> Path:
    """Download, unpack and git-init ``tree`` unless it is already there; returns its path."""
    dest = tree_path(tree.name)
    if (dest / ".git").is_dir():
        return dest
    if dest.exists():
        shutil.rmtree(dest)  # a half-finished earlier fetch
    TREES_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="arcs-fetch-") as dl_name:
        dl = Path(dl_name)
        if tree.registry == "pypi":
            cmd = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps"]
            cmd += ["--dest", str(dl), f"{tree.package}=={tree.version}"]
        else:
            cmd = ["npm", "pack", f"{tree.package}@{tree.version}", "--pack-destination", str(dl)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        archives = [p for p in dl.iterdir() if p.suffix in (".gz", ".zip", ".tgz")]
        if len(archives) != 1:
            raise RuntimeError(f"{tree.name}: expected one archive, got {sorted(p.name for p in archives)}")
        _unpack(archives[0], dest)
    if tree.keep:
        for entry in dest.iterdir():
            if entry.is_dir() and entry.name not in tree.keep:
                shutil.rmtree(entry)
    init_git_repo(dest, f"{tree.package} {tree.version} ({tree.registry} source distribution)")
    return dest


def main(argv: list[str] | None = None) -> int:
    """Fetch every tree (or ``--only`` some) and print where each is."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", default=None, help="tree names (default: all)")
    args = parser.parse_args(argv)
    for tree in TREES:
        if args.only and tree.name not in args.only:
            continue
        path = fetch(tree)
        print(f"{tree.name:10} {tree.registry}:{tree.package}=={tree.version} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
