"""The change since the last green run in the model's context and in retrieval (issue #14, item 2).

Two pure uses of a :class:`~jobs.repair.changes.ChangeSet`:

* :func:`change_body`: a compact, budgeted rendering for the prompts — the commits (short sha,
  title, author), then the changed hunks, those that overlap a failing frame first, then those in
  files the failure or the retrieved evidence names, then the rest (comment-only hunks last),
  each clipped; what does not fit is listed by path and lines, then counted. The text is
  sanitized and fenced as untrusted data (commit titles, author names and diff lines are written
  by whoever pushed). :func:`jobs.repair.prompts.render_changes` wraps it in the
  ``change_section`` template for the proposer's context block and the planner's.
* :class:`ChangePrior`: changed regions (hunks with a behavioural line) and the definitions
  enclosing them (tree-sitter symbols, :mod:`jobs.repair.tier0.symbols`); retrieved evidence
  that contains a changed region, or calls a changed definition, gets a score boost in the loop's
  ranking (a prior, never a filter), and the first query of a round also hints the changed files.

Without a change nothing here runs: prompts and rankings are exactly what they were.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace

from indexing.languages import is_test_path
from jobs.repair.changes import ChangeSet, head_range
from jobs.repair.diffing import FilePatch, Hunk
from jobs.repair.model import Evidence
from jobs.repair.ports import SourceView
from jobs.repair.task import fence_untrusted, sanitize_untrusted
from jobs.repair.tier0.symbols import extract

CHANGE_SHARE = 0.15
"""Share of a context budget the "what changed" section may take."""
MAX_COMMITS = 20
"""Commits listed at most, within a third of the section (the others are counted)."""
MAX_HUNK_LINES = 40
"""Diff lines shown per hunk (a longer hunk is cut with a marker)."""
MAX_LINE_CHARS = 200
"""Characters shown per diff line."""
FRAME_SLACK = 3
"""A hunk "touches" a failing frame when the frame's line is within this many lines of it."""
LABEL = "changes"
"""The untrusted-data label of the section (``<untrusted-changes>``)."""

CHANGED_BOOST = 0.6
"""Added to the score of retrieved evidence that contains a changed region (retrieval scores are
normalised so the best hit scores 1: worth about "a hit in a file named by a stack frame")."""
CALLER_BOOST = 0.3
"""Added to retrieved code evidence that calls a changed definition."""
MAX_FILE_HINTS = 5
"""Changed files added as ``(path, 0)`` hints to the first retrieval query of a round."""
MAX_PARSED_FILES = 30
"""Changed files parsed for enclosing definitions."""
MAX_PARSED_CHARS = 400_000
"""Larger files are not parsed (their hunks still count as changed regions)."""

_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|\*/|<!--|--\s|;)")


# --- what the failure points at ------------------------------------------------------------------


def same_file(named: str, changed: str) -> bool:
    """``named`` (a frame's or hint's path: relative, ``./x`` or a CI runner's absolute path) is
    the repository-relative ``changed``."""
    named = named.replace("\\", "/").removeprefix("./")
    return bool(changed) and (named == changed or named.endswith("/" + changed))


def behavioural(hunk: Hunk) -> bool:
    """The hunk adds or removes a line that is neither blank nor a comment."""
    return any(
        line.kind != " " and line.text.strip() and not _COMMENT.match(line.text) for line in hunk.lines
    )


def _tier(path: str, hunk: Hunk, places: Collection[tuple[str, int]], paths: Collection[str]) -> int:
    first, last = head_range(hunk)
    named = [line for p, line in places if same_file(p, path)]
    if not behavioural(hunk):
        return 3
    if any(first - FRAME_SLACK <= line <= last + FRAME_SLACK for line in named if line > 0):
        return 0
    if named or any(same_file(p, path) for p in paths):
        return 1
    return 2


def changed_span(hunk: Hunk) -> tuple[int, int]:
    """Head-side lines ``(first, last)`` of the hunk's added lines and of where its removed lines
    were (the context lines git adds around a change left out)."""
    touched: list[int] = []
    pos = max(hunk.new_start, 1) - 1  # the head line before the next one
    for line in hunk.lines:
        if line.kind == "-":
            touched.append(pos + 1)
        else:
            pos = line.new_line or pos + 1
            if line.kind == "+":
                touched.append(pos)
    return (min(touched), max(touched)) if touched else head_range(hunk)


_WHY = {0: "at a failing frame", 1: "in a file the failure or the evidence names", 2: "", 3: "comments only"}


def ranked_hunks(
    changes: ChangeSet, *, places: Collection[tuple[str, int]] = (), paths: Collection[str] = ()
) -> list[tuple[int, FilePatch, Hunk]]:
    """``(tier, file, hunk)`` most relevant first: tier 0 overlaps a failing frame (``places``:
    ``(path, line)`` of frames, failure sites and log hints), 1 is in a file named there or by the
    retrieved evidence (``paths``), 2 any other change, 3 comment or blank lines only. Diff order
    within a tier."""
    out = [
        (_tier(f.path, h, places, paths), i, f, h)
        for i, (f, h) in enumerate((f, h) for f in changes.files for h in f.hunks)
    ]
    out.sort(key=lambda t: (t[0], t[1]))
    return [(tier, f, h) for tier, _, f, h in out]


# --- the section -----------------------------------------------------------------------------------


def _clean(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """One line of untrusted text: invisible characters removed, cut at ``limit``."""
    text = " ".join(sanitize_untrusted(text, limit=10 * limit).split("\n"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _commits(changes: ChangeSet, ranked: Sequence[tuple[int, FilePatch, Hunk]], room: int) -> list[str]:
    """The commit lines within ``room`` characters, oldest first; when not all fit, the commits
    touching the most relevant hunks' files are the ones kept."""
    if not changes.commits:
        return []
    best: dict[str, int] = {}
    for tier, f, _ in ranked:
        best.setdefault(f.path, tier)
    lines = {c.sha: f"- {c.short} {_clean(c.title, 120)} ({_clean(c.author, 60)})" for c in changes.commits}
    order = sorted(
        range(len(changes.commits)),
        key=lambda i: (min((best.get(p, 9) for p in changes.commits[i].paths), default=9), -i),
    )
    kept: set[int] = set()
    used = 0
    for i in order[:MAX_COMMITS]:
        size = len(lines[changes.commits[i].sha]) + 1
        if used + size > room:
            break
        kept.add(i)
        used += size
    out = ["Commits since the last green run (oldest first):"]
    out += [lines[c.sha] for i, c in enumerate(changes.commits) if i in kept]
    if len(kept) < len(changes.commits):
        out.append(f"- … {len(changes.commits) - len(kept)} other commit(s) not shown")
    return out


def _hunk_text(tier: int, f: FilePatch, h: Hunk) -> str:
    first, last = head_range(h)
    why = _WHY[tier]
    head = f"--- {f.path} ({f.status}) lines {first}-{last}" + (f"; {why}" if why else "")
    lines = [head, f"@@ -{h.old_start},{h.old_len} +{h.new_start},{h.new_len} @@"]
    body = [line.kind + line.text[:MAX_LINE_CHARS] for line in h.lines]
    if len(body) > MAX_HUNK_LINES:
        cut = len(body) - MAX_HUNK_LINES
        body = [*body[:MAX_HUNK_LINES], f"[... {cut} more lines of this hunk ...]"]
    lines += body
    # Sanitized per hunk: an unclosed HTML comment can only swallow the rest of its own hunk.
    return sanitize_untrusted("\n".join(lines), limit=MAX_HUNK_LINES * (MAX_LINE_CHARS + 2))


def change_body(
    changes: ChangeSet,
    *,
    places: Collection[tuple[str, int]] = (),
    paths: Collection[str] = (),
    budget_chars: int,
) -> str:
    """The fenced "what changed" text, at most ``budget_chars`` long ('' when even the summary
    line does not fit). See the module docstring for the order."""
    n_hunks = sum(len(f.hunks) for f in changes.files)
    summary = (
        f"Last green commit {changes.base[:7]}, red head {changes.head[:7]}: {len(changes.commits)} "
        f"commit(s), {len(changes.files)} file(s), {n_hunks} hunk(s) changed"
        + (" (the diff was truncated when read)" if changes.truncated else "")
        + ". Line numbers are on the red side."
    )
    ranked = ranked_hunks(changes, places=places, paths=paths)
    fixed = [summary, *_commits(changes, ranked, budget_chars // 3)]
    shown: list[str] = []
    skipped: list[tuple[int, FilePatch, Hunk]] = []

    def fenced(parts: Sequence[str], tail: Sequence[str] = ()) -> str:
        return fence_untrusted(LABEL, "\n".join([*parts, *tail]))

    parts = list(fixed)
    while parts and len(fenced(parts)) > budget_chars:
        parts.pop()  # commits, newest last, then the summary itself
    if not parts:
        return ""
    if len(parts) < len(fixed):
        return fenced(parts)
    if ranked:
        parts.append("Changed hunks, most relevant first:")
    for item in ranked:
        text = _hunk_text(*item)
        if len(fenced([*parts, *shown, text])) <= budget_chars:
            shown.append(text)
        else:
            skipped.append(item)
    if ranked and not shown:
        parts.pop()
    body = [*parts, *shown]
    tail: list[str] = []
    if skipped:
        listed: list[str] = []
        for _, f, h in skipped:
            first, last = head_range(h)
            trial = [*listed, f"{_clean(f.path)} lines {first}-{last}"]
            if len(fenced(body, [_also(trial, len(skipped))])) > budget_chars:
                break
            listed = trial
        line = _also(listed, len(skipped))
        if len(fenced(body, [line])) <= budget_chars:
            tail.append(line)
    return fenced(body, tail)


def _also(listed: Sequence[str], total: int) -> str:
    more = total - len(listed)
    if not listed:
        return f"[{more} more hunk(s) not shown]"
    return "Also changed (not shown): " + ", ".join(listed) + (f" and {more} more hunk(s)" if more else "")


def section_budget(context_chars: int) -> int:
    """The character budget of the section within a context of ``context_chars``."""
    return int(context_chars * CHANGE_SHARE)


# --- the retrieval prior ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChangedDef:
    """A definition enclosing a behavioural hunk (innermost function or method)."""

    path: str
    name: str
    qualname: str
    start_line: int
    end_line: int


def _names(defs: Iterable[ChangedDef]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(d.name for d in defs if len(d.name) >= 3 and not d.name.startswith("__")))


@dataclass(frozen=True, slots=True)
class ChangePrior:
    """What the loop's evidence ranking favours: changed regions and the callers of changed
    definitions. Build it with :meth:`of`."""

    regions: tuple[tuple[str, int, int], ...] = ()
    """``(path, first, last)`` head-side lines of the behavioural hunks."""
    defs: tuple[ChangedDef, ...] = ()
    files: tuple[str, ...] = ()
    """Changed files that still exist, behavioural code changes first (for the query hints)."""

    @classmethod
    def of(cls, changes: ChangeSet, source: SourceView) -> ChangePrior:
        """The prior of ``changes`` over the red tree ``source`` (unparseable files give regions
        without definitions)."""
        regions: list[tuple[str, int, int]] = []
        defs: list[ChangedDef] = []
        code: list[str] = []
        other: list[str] = []
        parsed = 0
        for f in changes.files:
            if f.new_path is None or f.binary:
                continue
            hunks = [h for h in f.hunks if behavioural(h)]
            (code if hunks and not is_test_path(f.path) else other).append(f.path)
            if not hunks:
                continue
            ranges = [changed_span(h) for h in hunks]
            regions += [(f.path, a, b) for a, b in ranges]
            if parsed >= MAX_PARSED_FILES:
                continue
            text = source.read(f.path)
            if text is None or len(text) > MAX_PARSED_CHARS:
                continue
            parsed += 1
            try:
                found = extract(f.path, text)
            except Exception:  # a parser problem leaves the regions without names
                found = None
            if found is None:
                continue
            for a, b in ranges:
                enclosing = [fn for fn in found[0].functions if fn.start_line <= b and a <= fn.end_line]
                # The innermost definition: a changed method, not its whole class or outer function.
                for fn in enclosing:
                    if not any(
                        o is not fn and fn.start_line <= o.start_line and o.end_line <= fn.end_line
                        for o in enclosing
                    ):
                        defs.append(ChangedDef(f.path, fn.name, fn.qualname, fn.start_line, fn.end_line))
        return cls(tuple(regions), tuple(dict.fromkeys(defs)), tuple(dict.fromkeys([*code, *other])))

    def file_hints(
        self, hints: Sequence[tuple[str, int]], *, limit: int = MAX_FILE_HINTS
    ) -> tuple[tuple[str, int], ...]:
        """``(path, 0)`` hints for changed files no hint of ``hints`` names yet."""
        out = [(p, 0) for p in self.files if not any(same_file(h, p) for h, _ in hints)]
        return tuple(out[:limit])

    def _judge(self, item: Evidence) -> tuple[float, str]:
        if item.source not in ("code", "test"):
            return 0.0, ""
        for path, first, last in self.regions:
            if path == item.path and first <= item.end_line and item.start_line <= last:
                return CHANGED_BOOST, f"changed since green ({path}:{first}-{last})"
        if item.source != "code":
            return 0.0, ""
        own = {
            d.name
            for d in self.defs
            if d.path == item.path and item.start_line <= d.start_line <= item.end_line
        }
        for name in _names(self.defs):
            if name not in own and _calls(item.text, name):
                return CALLER_BOOST, f"calls {name}, changed since green"
        return 0.0, ""

    def apply(self, item: Evidence) -> Evidence:
        """``item`` with the prior added to its score and the reason to its ``why`` (unchanged
        when the prior says nothing about it)."""
        extra, why = self._judge(item)
        if not extra:
            return item
        return replace(
            item, score=round(item.score + extra, 6), why="; ".join(w for w in (item.why, why) if w)
        )


_DEFINING = re.compile(r"(?:\bdef|\bfunction\*?|\bfn|\bfunc)\s+$")


def _calls(text: str, name: str) -> bool:
    """``text`` calls ``name`` (``name(`` or ``x.name(``, not its own ``def name(``)."""
    for m in re.finditer(rf"(?<![\w$]){re.escape(name)}\s*\(", text):
        if not _DEFINING.search(text[max(0, m.start() - 12) : m.start()]):
            return True
    return False


__all__ = [
    "CALLER_BOOST",
    "CHANGED_BOOST",
    "CHANGE_SHARE",
    "LABEL",
    "ChangePrior",
    "ChangedDef",
    "behavioural",
    "change_body",
    "changed_span",
    "ranked_hunks",
    "same_file",
    "section_budget",
]
