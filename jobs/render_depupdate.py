"""A dependency update in ARCS' GitHub messages (issue #27): the bumps, what broke, what ARCS did.

Pure. :func:`dependency_markdown` is the section the check-run summary and the pull request body
carry; :func:`dependency_title` is its one line (the check run's title, a comment's first line).
The values come from the dependency-update stage: the :class:`DependencyChange` of each bump
(:func:`jobs.dependency_changes.what_changed`), the :class:`Hit` of each breaking change the
repository uses (:func:`jobs.repair.depupdate.hits.hits`), the tier-0 migration that verified (one
of :attr:`jobs.repair.tier0.depupdate_stage.DependencyUpdateProposer.offers`), and the
``dependency_updates`` mode of ``.arcs.yml``.

Package names, versions, symbols and changelog lines come from a manifest anyone could push and
from the dependency's own files: symbols go in code spans (backticks dropped), prose is defused,
changelog lines go in a fenced block.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from jobs.render import status_marker
from jobs.render_text import defuse, fenced, one_line, truncate
from jobs.repair.depupdate.apidiff import ApiChange
from jobs.repair.depupdate.context import DependencyChange
from jobs.repair.depupdate.hits import Hit
from jobs.repair.depupdate.record import DependencyUpdate
from jobs.repair.tier0.migrate import MigrationCandidate

__all__ = [
    "DependencyReport",
    "Mode",
    "dependency_comment",
    "dependency_comment_marker",
    "dependency_markdown",
    "dependency_title",
]

Mode = Literal["fix", "comment", "off"]
MAX_CHANGES = 12
"""API changes listed per bump (the ones that hit the repository first)."""
MAX_SITES = 3
MAX_CHANGELOG_LINES = 8
LIMIT = 12_000
"""Characters of the whole section: a part of the check run's (65 535) and the body's budget."""

_ARROW = {"renamed": "renamed to", "moved": "moved to"}


@dataclass(frozen=True, slots=True)
class DependencyReport:
    """What the engine knows of a dependency update at the end of an attempt."""

    deps: tuple[DependencyChange, ...]
    mode: Mode = "fix"
    fixed: bool = False
    """A fix passed the gates (the test command and the policy)."""
    migration: MigrationCandidate | None = None
    """The tier-0 migration that is the fix (None: another proposer's fix, or no fix)."""
    hits: Mapping[str, tuple[Hit, ...]] = field(default_factory=dict)
    """package -> the breaking changes the repository uses, with their sites (a package left out:
    not searched, and the section does not say how many are used)."""
    delivered: str = ""
    """Where the fix went, in ARCS' words (``commit abc1234 on the update's branch``, ``pull
    request #12, stacked on the update``); '' when none went anywhere."""


def _code(text: str, limit: int = 120) -> str:
    """An untrusted name in a code span: no backticks to break out, one line, cut."""
    flat = one_line(text.replace("`", "'"), limit)
    return f"`{flat}`" if flat else "``"


def _name(text: str) -> str:
    """A registry name or version: its own characters only (``@scope/pkg``, ``1.0.0rc1``)."""
    return re.sub(r"[^A-Za-z0-9@/._+!-]", "", text)[:100]


def _version_step(dep: DependencyChange) -> str:
    b = dep.bump
    return f"{_name(b.old) or '(none)'} -> {_name(b.new) or '(removed)'}"


def _change_line(change: ApiChange, hit: Hit | None) -> str:
    what = {
        "removed": "removed",
        "module_removed": "module removed",
        "keyword_renamed": f"keyword {_code(change.keyword)} renamed to {_code(change.replacement)}",
        "keyword_removed": f"keyword {_code(change.keyword)} removed",
        "required_added": f"new required parameter {_code(change.keyword)}",
    }.get(change.kind, "")
    if not what:  # renamed / moved
        what = f"{_ARROW[change.kind]} {_code(change.replacement)}"
    line = f"- {_code(change.qualified)}: {what}"
    if change.kind in ("removed", "module_removed"):
        line += " (no replacement known)"
    if hit is not None and hit.sites:
        sites = ", ".join(_code(f"{path}:{ln}", 200) for path, ln in hit.sites[:MAX_SITES])
        more = len(hit.sites) - MAX_SITES
        line += f" — used at {sites}" + (f" and {more} more" if more > 0 else "")
    return line


def _bump_part(dep: DependencyChange, hits: Sequence[Hit] | None) -> list[str]:
    """``hits`` None: where the changes hit was not searched (npm: the search reads Python)."""
    searched = hits is not None
    hits = hits or ()
    by_change = {h.change: h for h in hits}
    used = [c for c in dep.api if c in by_change]
    ordered = used + [c for c in dep.api if c not in by_change]
    head = f"**{defuse(_name(dep.bump.package))} {_version_step(dep)}**"
    if not dep.api:
        out = [f"{head}: no breaking API difference found."]
    else:
        where = f", {len(used)} used by this repository" if searched else ""
        out = [f"{head}: {len(dep.api)} breaking API change(s){where}."]
        out += [_change_line(c, by_change.get(c)) for c in ordered[:MAX_CHANGES]]
        if len(ordered) > MAX_CHANGES:
            out.append(f"- … and {len(ordered) - MAX_CHANGES} more")
    lines = [ln for h in hits for ln in h.changelog] or [
        f"{s.version}: {ln.strip()}" for s in dep.changelog for ln in s.lines if ln.strip()
    ]
    lines = list(dict.fromkeys(one_line(ln, 300) for ln in lines))
    if lines:
        shown = lines[:MAX_CHANGELOG_LINES]
        more = len(lines) - len(shown)
        text = "\n".join(shown) + (f"\n… {more} more line(s)" if more > 0 else "")
        text = text.replace("<!--", "<!-\u200b-")  # cannot forge ARCS' markers
        what = (
            "about what this repository uses"
            if hits and any(h.changelog for h in hits)
            else "between the versions"
        )
        out += [
            "",
            f"<details><summary>Changelog {what}</summary>",
            "",
            fenced(text, "text"),
            "",
            "</details>",
        ]
    out += [f"- note: {defuse(one_line(n, 300))}" for n in dep.notes]
    return out


def _what_arcs_did(report: DependencyReport) -> str:
    if report.mode == "off":
        return "`dependency_updates: off` in `.arcs.yml`: ARCS recognised the update and changed nothing."
    kept = "The update itself is kept: ARCS does not revert a dependency bump."
    if report.mode == "comment":
        return f"`dependency_updates: comment` in `.arcs.yml`: ARCS names what broke and does not change the code. {kept}"
    where = f" It is {defuse(one_line(report.delivered, 300))}." if report.delivered else ""
    if report.fixed and report.migration is not None:
        m = report.migration
        names = ", ".join(_code(c.qualified) for c in m.changes)
        return (
            f"ARCS migrated {m.sites} call site(s) to the new API ({names}) without a model; the test "
            f"command passes with the change.{where}"
        )
    if report.fixed:
        return f"ARCS found a fix that passes the test command.{where}"
    return f"No fix passed the test command; the breaking changes above are what hit this repository. {kept}"


def dependency_title(report: DependencyReport) -> str:
    """One line: ``Dependency update: markupsafe 2.0.1 -> 2.1.0 (pypi), migrated``."""
    steps = ", ".join(
        f"{_name(d.bump.package)} {_version_step(d)} ({d.bump.ecosystem})" for d in report.deps[:3]
    )
    if len(report.deps) > 3:
        steps += f" and {len(report.deps) - 3} more"
    state = {"off": "not handled", "comment": "breaking changes named"}.get(report.mode)
    if state is None:
        state = ("migrated" if report.migration is not None else "fixed") if report.fixed else "no fix"
    return defuse(one_line(f"Dependency update: {steps}, {state}", 250))


def dependency_markdown(report: DependencyReport, *, limit: int = LIMIT) -> str:
    """The section for the check-run summary and the pull request body ('' with no bump): a table
    of the bumps, per bump its breaking API changes (used ones first, with their sites and
    replacements) and changelog lines, then what ARCS did; cut to ``limit`` characters."""
    if not report.deps:
        return ""
    out = [
        "### Dependency update",
        "",
        "| ecosystem | package | version | read from |",
        "| --- | --- | --- | --- |",
    ]
    for d in report.deps:
        b = d.bump
        source = _code(b.source, 200).replace("|", "\\|") + ("" if b.exact else " (specifier)")
        out.append(f"| {b.ecosystem} | {_code(_name(b.package))} | {_version_step(d)} | {source} |")
    what = f"**What ARCS did:** {_what_arcs_did(report)}"
    room = limit - len(what) - 200
    for i, d in enumerate(report.deps):
        part = ["", *_bump_part(d, report.hits.get(d.bump.package))]
        if len("\n".join(out + part)) > room:  # whole parts only: a cut would leave a fence open
            out += ["", f"… {len(report.deps) - i} more bump(s) not shown."]
            break
        out += part
    out += ["", what]
    return truncate("\n".join(out), limit)


def dependency_comment_marker(attempt_id: int | str) -> str:
    """The hidden marker of an attempt's dependency comment: its own, not the status comment's,
    so a retried job finds and edits this comment instead of posting a second one."""
    return status_marker(f"dependency-{attempt_id}")


def dependency_comment(update: DependencyUpdate, attempt_id: int | str) -> str:
    """The comment on the update's pull request when no fix verified (or ``dependency_updates:
    comment``): the title and the section (already defused and fenced), then the marker."""
    title = update.title or "Dependency update: breaking changes"
    return f"**{title}**\n\n{update.markdown}\n\n{dependency_comment_marker(attempt_id)}"
