"""The hashed locks in requirements/ (scripts/lock, `make lock`) agree with pyproject.toml: every
declared dependency is pinned at a version its range allows, the lowest lock sits exactly on each
lower bound, ruff and mypy are pinned, every pin carries hashes, and no lock holds torch's CUDA
stack. Offline: it reads files; `make lock` is what resolves."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ROOT / "requirements"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?: ;[^\\]*)?(?: \\)?$", re.M)


def project() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {"default": data["dependencies"], "dev": data["optional-dependencies"]["dev"]}


def pins(name: str) -> dict[str, Version]:
    text = (LOCKS / name).read_text(encoding="utf-8")
    return {canonicalize_name(m.group(1)): Version(m.group(2)) for m in PIN.finditer(text)}


def entries(name: str) -> list[str]:
    """Each pin with its continuation lines (hashes)."""
    text = (LOCKS / name).read_text(encoding="utf-8")
    return [block for block in re.split(r"\n(?=[A-Za-z0-9])", text) if not block.startswith("#")]


@pytest.mark.parametrize(("lock", "groups"), [("runtime.txt", ("default",)), ("dev.txt", ("default", "dev"))])
def test_every_declared_dependency_is_pinned_within_its_range(lock: str, groups: tuple[str, ...]) -> None:
    pinned = pins(lock)
    for group in groups:
        for line in project()[group]:
            req = Requirement(line)
            version = pinned.get(canonicalize_name(req.name))
            assert version is not None, f"{req.name} is not in {lock}: run `make lock`"
            assert req.specifier.contains(version, prereleases=True), (
                f"{lock}: {req.name}=={version} vs {req}"
            )


def test_the_runtime_lock_holds_no_dev_tool() -> None:
    runtime = pins("runtime.txt")
    for tool in ("pytest", "ruff", "mypy", "deptry", "zizmor", "uv", "playwright"):
        assert tool not in runtime, tool


def test_the_lowest_lock_sits_on_every_lower_bound() -> None:
    lowest = pins("lowest.txt")
    for line in project()["default"] + project()["dev"]:
        req = Requirement(line)
        floors = [Version(s.version) for s in req.specifier if s.operator == ">="]
        if floors:
            assert lowest.get(canonicalize_name(req.name)) == max(floors), (
                f"lowest.txt has {req.name}=={lowest.get(canonicalize_name(req.name))}, but pyproject "
                f"says {req}: raise the bound to what resolves (or run `make lock`)"
            )


def test_linters_are_pinned_in_the_dev_lock() -> None:
    dev = pins("dev.txt")
    for tool in ("ruff", "mypy", "deptry", "zizmor"):
        assert tool in dev, tool


@pytest.mark.parametrize("lock", ["runtime.txt", "dev.txt", "lowest.txt"])
def test_every_pin_has_hashes_and_no_cuda_stack(lock: str) -> None:
    blocks = entries(lock)
    assert len(blocks) > 50
    for block in blocks:
        name = block.split("==", 1)[0]
        assert "--hash=sha256:" in block, f"{lock}: {name} has no hash"
        assert name != "torch" and not name.startswith(("nvidia-", "triton")), f"{lock}: {name}"
