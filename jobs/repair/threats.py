"""The patch threat check: what a candidate may not add or edit before ARCS publishes it.

Deterministic, no model. A patch is refused when it adds network, subprocess, environment or
dynamic-code access to non-test code, edits a file that runs at test or build time
(``conftest.py``, ``setup.py``, ``pyproject.toml``, ``package.json`` scripts, ``Makefile``, CI
files…) or adds an encoded blob — unless the task is about exactly that. The rules are one table,
``threat_rules.json`` next to this module (its ``_comment`` says how a row reads); the gate
(:func:`threat_gate`, gate name ``threats``) names the rule of every finding, and the loop runs it
with the other static gates on every candidate before any test run, so a refused candidate is
never executed, verified or published.

"The task is about exactly that" (a rule's ``exempt`` list):

* ``baseline``: the file already did that kind of thing before the edit (one of the rule's
  patterns matched its old text): a repair in code that already talks to the network may touch
  that code.
* ``named``: the task names the file — the issue or review text as the model reads it (sanitized,
  so the visible text a maintainer approved), the test command, or the path of a failure, a stack
  frame or a CI log location. For build files: a failure inside ``conftest.py`` may be fixed there.
* ``asked``: the task's text names the file *and* the access (one of the rule's ``keywords``, e.g.
  "``os.environ``"): naming a file with a bug is not asking for network access in it.
"""

from __future__ import annotations

import functools
import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import pathspec

from indexing.languages import is_test_path
from jobs.repair.diffing import parse_patch
from jobs.repair.edits import AppliedEdits
from jobs.repair.model import Failure, GateResult
from jobs.repair.task import RepairTask

GATE = "threats"
RULES_FILE = Path(__file__).with_name("threat_rules.json")
NOTICE_PREFIX = "Refused by the patch threat check"
"""The start of the trace notice each refusal leaves (the check run lists these notices)."""
Exemption = Literal["baseline", "named", "asked"]
_MAX_SHOWN = 20
_COMMENT_LINE = re.compile(r"^\s*(?:#|//|/\*|\*|--|;|<!--)")


@dataclass(frozen=True, slots=True)
class ThreatRule:
    """One row of ``threat_rules.json``."""

    name: str
    kind: Literal["adds", "edits"]
    what: str
    files: tuple[str, ...]
    exempt: tuple[Exemption, ...]
    scope: Literal["code", "all"] = "all"
    patterns: tuple[re.Pattern[str], ...] = ()
    keywords: tuple[str, ...] = ()
    comments: bool = False
    keys: tuple[str, ...] = ()

    @property
    def spec(self) -> pathspec.GitIgnoreSpec:
        """The ``files`` globs, gitignore-style."""
        return _spec(self.files)

    def applies_to(self, path: str) -> bool:
        """``path`` is a file this rule looks at."""
        if self.scope == "code" and is_test_path(path):
            return False
        return self.spec.match_file(path)

    def matches(self, line: str) -> bool:
        """``line`` does what the rule is about (comment-only lines do not, unless ``comments``)."""
        if not self.comments and _COMMENT_LINE.match(line):
            return False
        return any(p.search(line) for p in self.patterns)

    def matched_before(self, text: str | None) -> bool:
        """The file's text before the edit already did this (the ``baseline`` exemption)."""
        return text is not None and any(self.matches(line) for line in text.splitlines())


@functools.cache
def _spec(globs: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(globs)


def parse_rules(data: Mapping[str, Any]) -> tuple[ThreatRule, ...]:
    """The rules of a ``threat_rules.json`` document; ``ValueError`` names a malformed row."""
    rows = data.get("rules")
    if not isinstance(rows, list) or not rows:
        raise ValueError("threat rules: 'rules' must be a non-empty list")
    out: list[ThreatRule] = []
    for row in rows:
        name = row.get("name") if isinstance(row, dict) else None
        try:
            assert isinstance(row, dict) and isinstance(name, str) and name
            kind, exempt = row["kind"], tuple(row.get("exempt", ()))
            assert kind in ("adds", "edits") and set(exempt) <= {"baseline", "named", "asked"}
            rule = ThreatRule(
                name=name,
                kind=kind,
                what=str(row["what"]),
                files=tuple(str(g) for g in row["files"]),
                exempt=exempt,
                scope=row.get("scope", "all"),
                patterns=tuple(re.compile(p) for p in row.get("patterns", ())),
                keywords=tuple(str(k) for k in row.get("keywords", ())),
                comments=bool(row.get("comments", False)),
                keys=tuple(str(k) for k in row.get("keys", ())),
            )
            assert rule.scope in ("code", "all") and (kind == "edits" or rule.patterns)
        except (AssertionError, KeyError, TypeError, re.error) as exc:
            raise ValueError(
                f"threat rules: row {name or len(out)} is malformed ({exc or 'bad value'})"
            ) from None
        out.append(rule)
    if len({r.name for r in out}) != len(out):
        raise ValueError("threat rules: rule names must be unique")
    return tuple(out)


@functools.cache
def load_rules() -> tuple[ThreatRule, ...]:
    """The rule table shipped next to this module (read once)."""
    return parse_rules(json.loads(RULES_FILE.read_text(encoding="utf-8")))


# --- what the task names -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskNames:
    """What a task names: its human text (issue/review, as the model reads it; the test command)
    and the paths of its failures, stack frames and log locations."""

    text: str = ""
    paths: frozenset[str] = frozenset()

    @classmethod
    def of(cls, task: RepairTask, failures: Iterable[Failure] = ()) -> TaskNames:
        """The names of ``task``, plus the paths of ``failures`` (e.g. the reproduction's)."""
        paths: set[str] = {p for p, _ in task.hints}
        for f in (*task.failures, *failures):
            if f.path:
                paths.add(f.path)
            paths.update(fr.path for fr in f.frames if fr.path)
            paths.add(f.test_id.split("::", 1)[0])
        paths.update(t.split("::", 1)[0] for t in (*task.ci_tests, *task.target_tests))
        text = task.spec_text() if task.kind != "ci" else ""
        text = f"{text}\n{task.test_command}".strip()
        return cls(text, frozenset(_norm(p) for p in paths if p))

    def names(self, path: str) -> str:
        """Where the task names ``path`` ('' when it does not)."""
        path = _norm(path)
        for known in self.paths:
            if known == path or known.endswith("/" + path) or path.endswith("/" + known):
                return f"a failure or log location is in `{path}`"
        if self._mentions(path) or self._mentions(PurePosixPath(path).name):
            return f"the task's text names `{path}`"
        return ""

    def asks(self, path: str, keywords: Sequence[str]) -> str:
        """Where the task's text names both ``path`` and one of ``keywords`` ('' when not)."""
        if not self.names(path):
            return ""
        said = next((k for k in keywords if self._mentions(k)), None)
        return f"the task names `{path}` and asks about {said!r}" if said else ""

    def _mentions(self, word: str) -> bool:
        return (
            bool(word)
            and re.search(rf"(?<![\w./-]){re.escape(word)}(?![\w/-])", self.text, re.IGNORECASE) is not None
        )


def _norm(path: str) -> str:
    path = path.replace("\\", "/").strip()
    while path.startswith("./"):
        path = path[2:]
    return path


# --- the check -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a patch does that a rule is about; ``exempt_by`` says why it is let through."""

    rule: str
    path: str
    line: int
    message: str
    exempt_by: str = ""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"`{self.rule}`: {where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The finding as gate data."""
        out: dict[str, Any] = {
            "rule": self.rule,
            "path": self.path,
            "line": self.line,
            "message": self.message,
        }
        if self.exempt_by:
            out["exempt_by"] = self.exempt_by
        return out


def findings(
    change: AppliedEdits, names: TaskNames, rules: Sequence[ThreatRule] | None = None
) -> list[Finding]:
    """Everything in ``change`` a rule is about, each with its exemption ('' when refused)."""
    rules = load_rules() if rules is None else rules
    texts = {c.path: (c.before, c.after) for c in change.changes}
    added: dict[str, list[tuple[int, str]]] = {}
    for patch in parse_patch(change.diff()):
        added.setdefault(patch.path, []).extend((ln.new_line, ln.text) for ln in patch.lines("+"))
    out: list[Finding] = []
    for path, (before, after) in texts.items():
        for rule in rules:
            if not rule.applies_to(path):
                continue
            if rule.kind == "edits":
                changed = _edited(rule, before, after)
                if changed:
                    out.append(_judge(rule, path, 0, f"{rule.what} ({changed})", before, names))
                continue
            for line_no, text in added.get(path, ()):
                if rule.matches(text):
                    shown = " ".join(text.split())
                    shown = shown if len(shown) <= 120 else shown[:119] + "…"
                    out.append(_judge(rule, path, line_no, f"{rule.what}: `{shown}`", before, names))
    return out


def _edited(rule: ThreatRule, before: str | None, after: str | None) -> str:
    """How the patch changes a file of an ``edits`` rule ('' when only keys the rule ignores)."""
    if before is None:
        return "creates it" if not rule.keys or _keys_differ(rule, "", after) else ""
    if after is None:
        return "deletes it"
    if not rule.keys:
        return "changes it"
    return _keys_differ(rule, before, after)


def _keys_differ(rule: ThreatRule, before: str, after: str | None) -> str:
    old, new = _structured(before), _structured(after or "")
    if new is None:
        return "it no longer parses"
    changed = [k for k in rule.keys if (old or {}).get(k) != new.get(k)]
    return f"changes {', '.join(f'`{k}`' for k in changed)}" if changed else ""


def _structured(text: str) -> dict[str, Any] | None:
    if not text.strip():
        return {}
    for load in (json.loads, tomllib.loads):
        try:
            value = load(text)
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def _judge(
    rule: ThreatRule, path: str, line: int, message: str, before: str | None, names: TaskNames
) -> Finding:
    why = ""
    for exemption in rule.exempt:
        if exemption == "baseline" and rule.matched_before(before):
            why = f"`{path}` already did this before the edit"
        elif exemption == "named":
            why = names.names(path)
        elif exemption == "asked":
            why = names.asks(path, rule.keywords)
        if why:
            break
    return Finding(rule.name, path, line, message, why)


def threat_gate(
    change: AppliedEdits, names: TaskNames, rules: Sequence[ThreatRule] | None = None
) -> GateResult:
    """The ``threats`` gate: passes unless a finding has no exemption; every refused finding is
    a line naming its rule (the first line names the first one, for one-line reasons)."""
    found = findings(change, names, rules)
    refused = _dedupe(f for f in found if not f.exempt_by)
    allowed = _dedupe(f for f in found if f.exempt_by)
    data: dict[str, Any] = {
        "refused": [f.to_json() for f in refused],
        "allowed": [f.to_json() for f in allowed],
    }
    if not refused:
        detail = "no network, subprocess, environment, build-file or encoded-blob changes"
        if allowed:
            detail = (
                f"{len(allowed)} finding{'s' if len(allowed) != 1 else ''} allowed by the task: "
                + "; ".join(f"`{f.rule}` in {f.path} ({f.exempt_by})" for f in allowed[:5])
            )
        return GateResult(GATE, True, detail, data)
    rules_hit = ", ".join(dict.fromkeys(f"`{f.rule}`" for f in refused))
    lines = [f"refused by rule {rules_hit}: {refused[0]}"]
    lines += [str(f) for f in refused[1:_MAX_SHOWN]]
    if len(refused) > _MAX_SHOWN:
        lines.append(f"... and {len(refused) - _MAX_SHOWN} more")
    lines.append(
        "ARCS does not publish such a change unless the task asks for exactly that; fix the code without it."
    )
    return GateResult(GATE, False, "\n".join(lines), data)


def _dedupe(items: Iterable[Finding]) -> list[Finding]:
    return list(dict.fromkeys(items))


def note_refusals(notices: list[str], gate: GateResult, candidate: str) -> None:
    """Add to ``notices`` (the trace's) one line per rule and file a failed ``threats`` gate
    refused, unless an earlier candidate already left it: the check run lists these lines."""
    if gate.gate != GATE or gate.passed:
        return
    rows = gate.data.get("refused", ())
    for row in rows if isinstance(rows, list) else ():
        if not isinstance(row, Mapping):
            continue
        where = f"{row.get('path')}:{row.get('line')}" if row.get("line") else str(row.get("path"))
        head = f"{NOTICE_PREFIX}: rule `{row.get('rule')}` in {row.get('path')}"
        if not any(n.startswith(head + ":") or n.startswith(head + " ") for n in notices):
            notices.append(f"{head} (candidate {candidate}, {where}): {row.get('message')}")


def threat_notices(notices: Iterable[str]) -> tuple[str, ...]:
    """The threat-check refusals among a report's notices (for the check run)."""
    return tuple(n for n in notices if n.startswith(NOTICE_PREFIX))


__all__ = [
    "GATE",
    "NOTICE_PREFIX",
    "RULES_FILE",
    "Finding",
    "TaskNames",
    "ThreatRule",
    "findings",
    "load_rules",
    "note_refusals",
    "parse_rules",
    "threat_gate",
    "threat_notices",
]
