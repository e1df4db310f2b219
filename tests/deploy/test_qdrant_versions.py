"""The Qdrant client ARCS installs and the server deploy/ runs stay within one minor version
(Qdrant's compatibility promise, docs/deploy.md): every client version pyproject allows, and the
one the lock pins, against every ``qdrant/qdrant`` image in compose and the Kubernetes manifests."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
IMAGE = re.compile(r"image:\s*[\"']?qdrant/qdrant:v(\d+)\.(\d+)\.(\d+)")


def server_minors() -> set[tuple[int, int]]:
    """(major, minor) of every Qdrant server image under deploy/."""
    found: set[tuple[int, int]] = set()
    for path in [ROOT / "deploy" / "compose.yaml", *sorted((ROOT / "deploy" / "k8s").rglob("*.yaml"))]:
        for major, minor, _ in IMAGE.findall(path.read_text(encoding="utf-8")):
            found.add((int(major), int(minor)))
    return found


def client_specifier() -> SpecifierSet:
    """pyproject's range for qdrant-client."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    [spec] = [Requirement(d).specifier for d in deps if Requirement(d).name == "qdrant-client"]
    return spec


def allowed_minors(spec: SpecifierSet) -> set[tuple[int, int]]:
    """The (major, minor) pairs whose releases the range admits (it must be bounded above)."""
    lower = [Version(s.version) for s in spec if s.operator in (">=", "==", "~=")]
    upper = [Version(s.version) for s in spec if s.operator == "<"]
    assert lower and upper, f"qdrant-client needs a lower and an upper bound, not {spec}"
    low, high = max(lower), min(upper)
    return {
        (low.major, minor)
        for minor in range(low.minor, high.minor + 1)
        if Version(f"{low.major}.{minor}.0") < high or spec.contains(f"{low.major}.{minor}.0")
    }


def locked_client(lock: Path) -> Version:
    """The qdrant-client version a lock file pins."""
    match = re.search(r"^qdrant-client==(\S+)", lock.read_text(encoding="utf-8"), re.M)
    assert match, f"{lock.name} pins no qdrant-client"
    return Version(match.group(1))


def test_the_deployed_server_has_one_version() -> None:
    assert len(server_minors()) == 1, server_minors()


def test_every_allowed_client_is_within_one_minor_of_the_server() -> None:
    [(major, minor)] = server_minors()
    for client_major, client_minor in allowed_minors(client_specifier()):
        assert client_major == major and abs(client_minor - minor) <= 1, (
            f"qdrant-client {client_major}.{client_minor} is allowed but the server is {major}.{minor}"
        )


def test_every_lock_pins_a_client_within_one_minor_of_the_server() -> None:
    [(major, minor)] = server_minors()
    for lock in ("runtime.txt", "dev.txt", "lowest.txt"):
        client = locked_client(ROOT / "requirements" / lock)
        assert client in client_specifier(), (lock, client)
        assert client.major == major and abs(client.minor - minor) <= 1, (lock, client, (major, minor))


def test_the_check_sees_a_drift() -> None:
    # The state this test was written against: client >=1.12 (resolving to 1.20), server 1.17.
    assert (1, 20) in allowed_minors(SpecifierSet(">=1.12,<1.21"))
    assert not any(abs(m - 17) > 1 for _, m in allowed_minors(SpecifierSet(">=1.16,<1.19")))
