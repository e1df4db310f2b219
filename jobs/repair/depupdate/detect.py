"""Recognise a dependency update in a change (issue #27, item 1). Pure.

Given the changed files' texts on both sides (the change since the last green commit, or a pull
request's diff), every manifest or lock file among them is read on both sides
(:mod:`jobs.repair.depupdate.manifests`) and compared: each package whose version changed is one
:class:`Bump`. A lock file's exact versions win over a manifest's specifier for the same package
(``^1.2.0`` only says where the range starts). Packages added or removed are bumps too, with an
empty side.

:func:`texts_from_changeset` rebuilds the base side of each changed manifest from the head tree
and the cumulative diff, so a :class:`~jobs.repair.changes.ChangeSet` is enough.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jobs.repair.changes import ChangeSet
from jobs.repair.depupdate.manifests import Ecosystem, Versions, reader_for
from jobs.repair.diffing import FilePatch

Texts = Mapping[str, tuple[str | None, str | None]]
"""path -> (text at the last green commit, text at the red head); None where the file is absent."""


@dataclass(frozen=True, slots=True)
class Bump:
    """One package whose version the change moved."""

    ecosystem: Ecosystem
    package: str
    old: str
    """'' when the change added the package."""
    new: str
    """'' when the change removed the package."""
    source: str
    """The manifest or lock file it was read from."""
    exact: bool = True
    """False when the versions come from a manifest's specifier (the lower end of a range)."""

    def describe(self) -> str:
        """``markupsafe 2.0.1 -> 2.1.0 (pypi, requirements.txt)``."""
        return f"{self.package} {self.old or '(none)'} -> {self.new or '(removed)'} ({self.ecosystem}, {self.source})"

    def to_json(self) -> dict[str, Any]:
        """The record of the trace, the report and the check run."""
        return {
            "ecosystem": self.ecosystem,
            "package": self.package,
            "old": self.old,
            "new": self.new,
            "source": self.source,
            "exact": self.exact,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Bump:
        """Inverse of :meth:`to_json`."""
        eco = str(data["ecosystem"])
        if eco not in ("pypi", "npm", "go", "cargo"):
            raise ValueError(f"unknown ecosystem {eco!r}")
        return cls(
            ecosystem=eco,  # type: ignore[arg-type]  # checked just above
            package=str(data["package"]),
            old=str(data.get("old", "")),
            new=str(data.get("new", "")),
            source=str(data.get("source", "")),
            exact=bool(data.get("exact", True)),
        )


def is_manifest(path: str) -> bool:
    """True for a path :func:`detect_bumps` reads."""
    return reader_for(path) is not None


def _pairs(old: set[str], new: set[str]) -> list[tuple[str, str]]:
    """Old and new versions of one package paired in version order (a lock may hold several)."""
    gone, came = sorted(old - new, key=version_key), sorted(new - old, key=version_key)
    if not gone and not came:
        return []
    if len(gone) == len(came):
        return list(zip(gone, came, strict=True))
    if not gone or not came:
        return [(g, "") for g in gone] + [("", c) for c in came]
    # n old copies became m new ones: newest old -> newest new says what most code now imports
    return [(gone[-1], came[-1])]


def version_key(version: str) -> tuple[tuple[int, ...], int, str]:
    """A sort key that orders ``1.9 < 1.10``, ``2.0rc1 < 2.0 < 2.0.post1`` and ``1.0 == 1.0.0``
    well enough to pair versions and select changelog sections."""
    m = re.match(r"^[vV]?(\d+(?:\.\d+)*)(.*)$", version.strip())
    if m is None:
        return (), 0, version
    release = [int(p) for p in m.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    rest = m.group(2).lstrip(".-_+")
    if not rest:
        return tuple(release), 1, ""
    final = rest.lower().startswith(("post", "p")) or m.group(2).startswith("+")
    return tuple(release), 2 if final else 0, rest.lower()


def detect_bumps(texts: Texts) -> list[Bump]:
    """Every package the change moved, lock-file bumps first; one bump per (ecosystem, package,
    old, new), the exact one kept. Files that are not manifests are ignored."""
    found: list[Bump] = []
    for path in sorted(texts):
        spec = reader_for(path)
        if spec is None:
            continue
        ecosystem, read, lock = spec
        base, head = texts[path]
        before: Versions = read(base) if base else {}
        after: Versions = read(head) if head else {}
        for name in sorted(set(before) | set(after)):
            for old, new in _pairs(before.get(name, set()), after.get(name, set())):
                found.append(Bump(ecosystem, name, old, new, path, exact=lock))
    found.sort(key=lambda b: not b.exact)
    out: list[Bump] = []
    seen: set[tuple[str, str]] = set()
    for b in found:
        key = (b.ecosystem, b.package)
        if b.exact or key not in seen:
            if b.exact and any(
                o.ecosystem == b.ecosystem and o.package == b.package and o.old == b.old and o.new == b.new
                for o in out
            ):
                continue  # the same bump read from a second lock file (a workspace's)
            out.append(b)
            seen.add(key)
    return out


def old_text(new: str, patch: FilePatch) -> str | None:
    """The base side of a file rebuilt from its head text and its cumulative patch, or None when
    the patch does not match the text (it was cut, or the file changed since)."""
    lines = new.split("\n")
    trailing = new.endswith("\n")
    if trailing:
        lines.pop()
    out: list[str] = []
    at = 0  # index into lines, 0-based
    for h in patch.hunks:
        start = max(h.new_start - 1, 0) if h.new_len else h.new_start
        if start < at or start > len(lines):
            return None
        out += lines[at:start]
        at = start
        for ln in h.lines:
            if ln.kind in (" ", "+"):
                if at >= len(lines) or lines[at] != ln.text:
                    return None
                at += 1
            if ln.kind in (" ", "-"):
                out.append(ln.text)
    out += lines[at:]
    return "\n".join(out) + ("\n" if trailing or not out else "")


def texts_from_changeset(
    changes: ChangeSet, read: Callable[[str], str | None]
) -> dict[str, tuple[str | None, str | None]]:
    """Both sides of each changed manifest: the head text from ``read`` and the base text rebuilt
    with :func:`old_text` (a manifest whose base cannot be rebuilt is left out)."""
    out: dict[str, tuple[str | None, str | None]] = {}
    for f in changes.files:
        if not is_manifest(f.path) or f.binary:
            continue
        if f.status == "deleted":
            base = "\n".join(ln.text for ln in f.lines("-")) + "\n"
            out[f.old_path or f.path] = (base, None)
            continue
        head = read(f.path)
        if head is None:
            continue
        if f.status == "added":
            out[f.path] = (None, head)
            continue
        base_text = old_text(head, f)
        if base_text is not None:
            out[f.path] = (base_text, head)
    return out


def bumps_in(changes: ChangeSet, read: Callable[[str], str | None]) -> list[Bump]:
    """:func:`detect_bumps` over the manifests a :class:`ChangeSet` touched."""
    return detect_bumps(texts_from_changeset(changes, read))


def describe_all(bumps: Iterable[Bump]) -> str:
    """One line per bump."""
    return "\n".join(b.describe() for b in bumps)


__all__ = [
    "Bump",
    "Texts",
    "bumps_in",
    "describe_all",
    "detect_bumps",
    "is_manifest",
    "old_text",
    "texts_from_changeset",
    "version_key",
]
