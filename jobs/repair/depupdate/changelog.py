"""The changelog section between two versions of a dependency. Pure.

Reads the CHANGES/CHANGELOG/HISTORY/NEWS file of a distribution (reStructuredText, Markdown or
plain text): a heading that names a version starts that version's section. The sections of the
versions after ``old`` up to and including ``new`` are returned, newest first as the file has
them. Headings are: Markdown ``#`` lines, lines underlined with ``= - ~ ^ * + #`` (reST), and
lines that start with a version ("2.1.0 (2022-02-17)", "Version 2.1.0", "v2.1.0 - …").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from jobs.repair.depupdate.detect import version_key

CHANGELOG_NAME = re.compile(
    r"(^|/)(changes|changelog|history|news|release[-_ ]?notes)(\.(rst|md|txt|markdown))?$", re.I
)
_VERSION = re.compile(
    r"(?<![\w.])v?(\d+(?:\.\d+)+(?:[-.]?(?:a|b|rc|alpha|beta|dev|post)\.?\d*)?)(?![\w.]*\d)", re.I
)
_UNDERLINE = re.compile(r"^([=\-~^*+#`'\"])\1{2,}\s*$")
_LEAD = re.compile(r"^\s*(?:\[|version\s+|release\s+|v)?\d+\.\d+", re.I)
MAX_SECTIONS = 40


@dataclass(frozen=True, slots=True)
class Section:
    """One version's part of a changelog."""

    version: str
    heading: str
    lines: tuple[str, ...]


def find_changelog(files: Mapping[str, str]) -> str:
    """The text of the distribution's changelog ('' when none): the shallowest matching path, else
    the long description of its metadata (headers dropped)."""
    found = sorted((p for p in files if CHANGELOG_NAME.search(p)), key=lambda p: (p.count("/"), len(p)))
    if found:
        return files[found[0]]
    # a wheel has no CHANGES file; its METADATA's long description often ends with the changelog
    meta = sorted(
        (p for p in files if p.rsplit("/", 1)[-1] in ("METADATA", "PKG-INFO")), key=lambda p: p.count("/")
    )
    return files[meta[0]].split("\n\n", 1)[-1] if meta else ""


def _heading_version(lines: Sequence[str], i: int) -> str:
    line = lines[i].strip()
    if not line or len(line) > 120 or lines[i][:1].isspace():
        return ""
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    heading = (
        line.startswith("#")
        or (_UNDERLINE.match(nxt) is not None and len(nxt.strip()) >= max(3, len(line) - 2))
        or _LEAD.match(line) is not None
        or (line.startswith(("**", "__")) and line.endswith(("**", "__")))
    )
    if not heading or _UNDERLINE.match(line):
        return ""
    m = _VERSION.search(line)
    return m.group(1) if m else ""


def sections(text: str) -> list[Section]:
    """Every version section of a changelog, in file order."""
    lines = text.replace("\r\n", "\n").split("\n")
    starts = [(i, v) for i in range(len(lines)) if (v := _heading_version(lines, i))]
    out: list[Section] = []
    for k, (i, version) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        body = [ln for ln in lines[i + 1 : end] if not _UNDERLINE.match(ln)]
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        out.append(Section(version, lines[i].strip(), tuple(body)))
    return out


def between(text: str, old: str, new: str) -> list[Section]:
    """The sections of versions ``old < v <= new`` (all versions up to ``new`` when ``old`` is '')."""
    hi = version_key(new)
    picked = [
        s
        for s in sections(text)
        if (not old or version_key(old) < version_key(s.version)) and version_key(s.version) <= hi
    ]
    return picked[:MAX_SECTIONS]


def mentioning(picked: Iterable[Section], names: Iterable[str]) -> list[str]:
    """Changelog lines (``version: line``) that mention one of ``names`` as a word."""
    words = [n for n in {n.split(".")[-1] for n in names} if len(n) > 2]
    if not words:
        return []
    pattern = re.compile(r"(?<![\w])(" + "|".join(re.escape(w) for w in sorted(words)) + r")(?![\w])")
    return [f"{s.version}: {ln.strip()}" for s in picked for ln in s.lines if pattern.search(ln)]


_CODE = re.compile(r"``([A-Za-z_][\w.]*)(?:\(\))?``|`([A-Za-z_][\w.]*)(?:\(\))?`")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")
_REPLACED_BY = re.compile(
    r"\b(?:is|are|was|were|has been|have been)\s+(?:replaced|renamed|superseded)\s+(?:by|to|with)\b|\brenamed to\b|\bin favou?r of\b",
    re.I,
)
_REPLACES = re.compile(r"\b(?:replaces|supersedes)\b", re.I)
_USE_INSTEAD = re.compile(r"\buse\s+(.*?)\s+instead\b", re.I)
_IMPORTED_FROM = re.compile(
    r"\b(?:should be imported from|moved to|import(?:ed)? (?:it )?from)\s+`{0,2}([A-Za-z_][\w.]*)", re.I
)


def _bullets(lines: Iterable[str]) -> list[str]:
    """The changelog's list items, each joined into one line (nested items are their own)."""
    out: list[str] = []
    for line in lines:
        if _BULLET.match(line):
            out.append(_BULLET.sub("", line, count=1).strip())
        elif line.strip() and out:
            out[-1] += " " + line.strip()
        elif not line.strip() and out and out[-1]:
            out.append("")
    return [b for b in out if b]


def _names(text: str) -> list[str]:
    return [a or b for a, b in _CODE.findall(text)]


def replacements(picked: Iterable[Section]) -> dict[str, str]:
    """``{old name: replacement}`` the changelog states in so many words: "``a`` and ``b`` are
    replaced by ``c``", "``c`` replaces ``a``", "``a`` is renamed to ``c``", "Remove ``a``. Use
    ``c`` instead.", "``A`` and ``e`` should be imported from MarkupSafe" (-> ``markupsafe.A``).
    Names are as the changelog writes them (bare or dotted); the caller locates them."""
    out: dict[str, str] = {}
    for s in picked:
        for bullet in _bullets(s.lines):
            for sentence in re.split(r"(?<=[.;])\s+(?=[A-Z`])", bullet):
                m = _REPLACED_BY.search(sentence)
                if m:
                    before, after = _names(sentence[: m.start()]), _names(sentence[m.end() :])
                    if before and after:
                        out.update({b: after[0] for b in before if b != after[0]})
                    continue
                m = _REPLACES.search(sentence)
                if m:
                    before, after = _names(sentence[: m.start()]), _names(sentence[m.end() :])
                    if len(before) == 1 and after:
                        out.update({a: before[0] for a in after if a != before[0]})
                    continue
                m = _IMPORTED_FROM.search(sentence)
                if m:
                    module = m.group(1).lower().strip(".")
                    out.update({n: f"{module}.{n.split('.')[-1]}" for n in _names(sentence[: m.start()])})
            use = _USE_INSTEAD.search(bullet)
            if use:
                target = _names(use.group(1))
                earlier = [n for n in _names(bullet[: use.start()]) if target and n != target[0]]
                if target and earlier:
                    out.update({n: target[0] for n in earlier if n not in out})
    return out


__all__ = ["CHANGELOG_NAME", "Section", "between", "find_changelog", "mentioning", "replacements", "sections"]
