"""The masking gate's rules: what a repair or deflake candidate must not do (issue #26 item 4).

A flaky test is fixed by removing its cause, never by hiding it. :data:`RULES` is the one table
of hiding moves: retries and rerun markers, ``flaky``/``xfail``/``skip`` markers, longer sleeps
or timeouts, loosened or removed assertions, swallowed exceptions. :func:`masking_violations`
is a pure function over a unified diff (added and removed lines, and changed pairs of lines
inside one hunk) and returns each violated rule with its line. ``gates.policy_gate`` refuses a
candidate with any of them, naming the rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from indexing.languages import is_test_path
from jobs.repair.diffing import FilePatch, HunkLine, parse_patch

Scope = Literal["tests", "any"]
"""``tests``: only in test files and test configuration; ``any``: also in the code under test."""

Kind = Literal["added", "removed", "longer", "looser", "swallow"]
"""How a rule reads the diff: a matching ``added`` or ``removed`` line; a changed line whose
number grew (``longer``) or whose check got weaker (``looser``); an added handler that does
nothing (``swallow``)."""


@dataclass(frozen=True, slots=True)
class MaskingRule:
    """One row of the table: the rule id named in the refusal, what it forbids, where, how."""

    id: str
    what: str
    scope: Scope
    kind: Kind
    pattern: re.Pattern[str]


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.VERBOSE)


_STRICT_ASSERT = _rx(
    r"""\bassert(?:Equals?|_eq!|\.equal|\.strictEqual|\.deepEqual|\.deepStrictEqual|Same|Is)\s*[(\[]
    | \.to(?:Be|Equal|StrictEqual)\s*\( | ^assert\b.*(?:==|\bis\b)"""
)
_ASSERTION = _rx(
    r"""^assert\b | \bassert\w*\s*!?\s*\( | \bassert\.\w+\s*\( | \bexpect\s*\(
    | \bself\.fail\w*\s*\( | \bpytest\.(?:raises|approx)\b | \b[tb]\.(?:Error|Fatal)f?\s*\("""
)

RULES: tuple[MaskingRule, ...] = (
    MaskingRule(
        "masking.retry",
        "adds a retry or rerun of the test",
        "tests",
        "added",
        _rx(
            r"""@?pytest\.mark\.flaky\b | (?<![\w.])@flaky\b | \breruns(?:_delay)?\s*[=:]
            | --reruns\b | \bjest\.retryTimes\s*\( | \bthis\.retries\s*\( | \bretries\s*:\s*[1-9]
            | @(?:Retry|RepeatedIfExceptionsTest|RetryingTest)\b | \bpytest_rerunfailures\b
            | \b(?:tenacity|backoff)\b | @retry\b"""
        ),
    ),
    MaskingRule(
        "masking.skip",
        "adds a skip, xfail or flaky marker",
        "tests",
        "added",
        _rx(
            r"""\bpytest\.mark\.(?:skip|skipif|xfail)\b | \bpytest\.(?:skip|xfail)\s*\(
            | @(?:unittest\.)?(?:skip|skipIf|skipUnless|expectedFailure)\b | \bself\.skipTest\s*\(
            | \b(?:it|test|describe)\.(?:skip|todo|failing)\b | (?<![\w.$])x(?:it|test|describe)\s*\(
            | \bthis\.skip\s*\( | \b[tb]\.Skip(?:f|Now)?\s*\( | \#\[ignore\b | @(?:Disabled\w*|Ignore)\b
            | \bmark\s*=\s*["']flaky"""
        ),
    ),
    MaskingRule(
        "masking.sleep",
        "adds a sleep or makes one longer",
        "any",
        "longer",
        _rx(
            r"""\b(?:time\.|asyncio\.|gevent\.|trio\.)?sleep\s*\( | \bThread\.sleep\s*\( | \bsetTimeout\s*\("""
        ),
    ),
    MaskingRule(
        "masking.timeout",
        "adds a timeout or makes one longer",
        "any",
        "longer",
        _rx(
            r"""\btimeout\w*\s*[=:(] | \b\w*TIMEOUT\w*\s*[=:] | \bsetTimeout\s*\( | \bthis\.timeout\s*\(
            | \bpytest\.mark\.timeout\b | \bdeadline\s*= | \bwait_for\w*\s*\("""
        ),
    ),
    MaskingRule(
        "masking.assert_loosened",
        "replaces an exact check by a looser one, or widens a tolerance",
        "tests",
        "looser",
        _rx(
            r"""\bassert(?:In|AlmostEqual|Greater\w*|Less\w*|IsNotNone|True|Regex|CountEqual)\s*\(
            | \bapprox\s*\( | \bisclose\s*\( | \.to(?:Contain|Match|BeCloseTo|BeGreaterThan\w*|BeLessThan\w*|BeTruthy|BeDefined)\s*\(
            | ^assert\b.*(?:\bin\b|[<>]=?|\babs\s*\()"""
        ),
    ),
    MaskingRule(
        "masking.assert_removed",
        "removes an assertion",
        "tests",
        "removed",
        _ASSERTION,
    ),
    MaskingRule(
        "masking.swallowed",
        "swallows an exception (a handler that does nothing, or one around the assertion)",
        "any",
        "swallow",
        _rx(
            r"""^except\b[^:]*:\s*(?:pass|\.\.\.|continue)?\s*(?:\#.*)?$ | \bcontextlib\.suppress\s*\( | ^with\s+suppress\s*\(
            | \bcatch\s*(?:\([^)]*\))?\s*\{\s*\}? | \.catch\s*\(\s*\(\s*\w*\s*\)\s*=>\s*(?:\{\s*\}|null|undefined)\s*\)"""
        ),
    ),
)
"""The masking rules: one row per forbidden move (the policy gate names ``id`` in a refusal)."""

_TOLERANCE = re.compile(r"\b(?:rel|abs|atol|rtol|delta|tol\w*|epsilon|eps)\s*=\s*([\d.eE+-]+)")
_FEWER_DIGITS = re.compile(r"\b(?:places|digits)\s*=\s*(\d+)|\btoBeCloseTo\s*\([^,]+,\s*(\d+)")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_DOES_NOTHING = re.compile(r"^(?:pass|\.\.\.|continue|return(?:\s+None)?|\}|)\s*(?:#.*)?$")
_TEST_CONFIG = re.compile(
    r"(^|/)(pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml|conftest\.py|package\.json"
    r"|(jest|vitest|playwright|cypress)\.config\.[cm]?[jt]s|\.mocharc\.\w+)$"
)
_COMMENT = re.compile(r"""^(?:#(?!\[)|//|/\*|\*)""")


@dataclass(frozen=True, slots=True)
class MaskingViolation:
    """One violated rule at one line (the new line for an addition, the old for a removal)."""

    path: str
    line: int
    rule: str
    message: str


def masking_violations(diff: str | tuple[FilePatch, ...]) -> list[MaskingViolation]:
    """Every :data:`RULES` row the unified ``diff`` violates, with its line, in diff order."""
    patches = parse_patch(diff) if isinstance(diff, str) else diff
    found: list[MaskingViolation] = []
    for patch in patches:
        if patch.status == "deleted":
            continue  # a deleted file masks nothing here; deleting a test is the policy's tests.deleted_file
        in_tests = any(
            is_test_path(p) or _TEST_CONFIG.search(p) for p in (patch.old_path, patch.new_path) if p
        )
        for rule in RULES:
            if rule.scope == "tests" and not in_tests:
                continue
            found.extend(_check(rule, patch))
    return found


def _check(rule: MaskingRule, patch: FilePatch) -> Iterator[MaskingViolation]:
    path = patch.path
    if rule.kind == "added":
        for line in patch.lines("+"):
            text = line.text.strip()
            if not _COMMENT.match(text) and rule.pattern.search(text):
                yield MaskingViolation(path, line.new_line, rule.id, f"{rule.what}: `{text}`")
    elif rule.kind == "removed":
        kept = {_squash(line.text) for line in patch.lines("+")}
        for line in patch.lines("-"):
            text = line.text.strip()
            replaced = any(_ASSERTION.search(a.text.strip()) for a in _partners(patch, line))
            if (
                not _COMMENT.match(text)
                and rule.pattern.search(text)
                and _squash(text) not in kept
                and not replaced
            ):
                yield MaskingViolation(path, line.old_line, rule.id, f"{rule.what}: `{text}`")
    elif rule.kind == "longer":
        yield from _longer(rule, patch)
    elif rule.kind == "looser":
        yield from _looser(rule, patch)
    else:
        yield from _swallowed(rule, patch)


def _squash(text: str) -> str:
    return "".join(text.split())


def _changes(patch: FilePatch) -> Iterator[tuple[list[HunkLine], list[HunkLine]]]:
    """Each run of removed lines with the added lines that replace it."""
    for hunk in patch.hunks:
        removed: list[HunkLine] = []
        added: list[HunkLine] = []
        for line in (*hunk.lines, None):
            if line is not None and line.kind == "-" and not added:
                removed.append(line)
            elif line is not None and line.kind == "+":
                added.append(line)
            else:
                if removed or added:
                    yield removed, added
                removed, added = [], []
                if line is not None and line.kind == "-":
                    removed.append(line)


def _partners(patch: FilePatch, line: HunkLine) -> list[HunkLine]:
    for removed, added in _changes(patch):
        if line in removed:
            return added
    return []


def _numbers(text: str) -> list[float]:
    return [float(n) for n in _NUMBER.findall(text)]


def _longer(rule: MaskingRule, patch: FilePatch) -> Iterator[MaskingViolation]:
    for removed, added in _changes(patch):
        olds = [r for r in removed if rule.pattern.search(r.text)]
        for line in added:
            text = line.text.strip()
            if _COMMENT.match(text) or not rule.pattern.search(text):
                continue
            new = _numbers(text)
            if not olds:
                yield MaskingViolation(patch.path, line.new_line, rule.id, f"{rule.what}: `{text}`")
                continue
            old = _numbers(olds[0].text)
            if _grew(old, new):
                was = olds[0].text.strip()
                yield MaskingViolation(
                    patch.path, line.new_line, rule.id, f"{rule.what}: `{was}` -> `{text}`"
                )
            olds = olds[1:] or olds


def _grew(old: list[float], new: list[float]) -> bool:
    """A number was added or raised: compare what changed, not the whole line (``127.0.0.1``)."""
    gone, came = list(old), []
    for n in new:
        if n in gone:
            gone.remove(n)
        else:
            came.append(n)
    return bool(came) and (not gone or max(came) > max(gone))


def _looser(rule: MaskingRule, patch: FilePatch) -> Iterator[MaskingViolation]:
    for removed, added in _changes(patch):
        for old, new in zip(removed, added, strict=False):
            before, after = old.text.strip(), new.text.strip()
            loosened = (
                (
                    bool(_STRICT_ASSERT.search(before))
                    and not _STRICT_ASSERT.search(after)
                    and bool(rule.pattern.search(after))
                )
                or _wider(before, after)
                or _bound_widened(before, after)
            )
            if loosened:
                yield MaskingViolation(
                    patch.path, new.new_line, rule.id, f"{rule.what}: `{before}` -> `{after}`"
                )


def _wider(before: str, after: str) -> bool:
    """A tolerance grew (``rel=``, ``abs=``, ``delta=``) or a digits/places count shrank."""
    old_tol = [float(m) for m in _TOLERANCE.findall(before) if _is_float(m)]
    new_tol = [float(m) for m in _TOLERANCE.findall(after) if _is_float(m)]
    if new_tol and ((not old_tol and "approx" in after) or (old_tol and max(new_tol) > max(old_tol))):
        return True
    old_d = [int(a or b) for a, b in _FEWER_DIGITS.findall(before)]
    new_d = [int(a or b) for a, b in _FEWER_DIGITS.findall(after)]
    return bool(old_d and new_d and min(new_d) < min(old_d))


def _bound_widened(before: str, after: str) -> bool:
    """A strict bound in an assertion became inclusive (``< 7`` -> ``<= 7``)."""
    if not _ASSERTION.search(before):
        return False
    return any(re.sub(rf"{op}(?!=)", f"{op}=", before) == after for op in ("<", ">"))


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _swallowed(rule: MaskingRule, patch: FilePatch) -> Iterator[MaskingViolation]:
    for hunk in patch.hunks:
        lines = [line for line in hunk.lines if line.kind != "-"]
        for i, line in enumerate(lines):
            text = line.text.strip()
            if line.kind != "+" or not rule.pattern.search(text):
                continue
            if text.startswith("except"):
                # ``except X:`` followed by a body that does nothing, or catching the assertion.
                body = next((n.text.strip() for n in lines[i + 1 :] if n.text.strip()), "")
                inline = text.split(":", 1)[1].strip() if ":" in text else ""
                does_nothing = _DOES_NOTHING.match(inline) if inline else _DOES_NOTHING.match(body)
                if not (does_nothing or "AssertionError" in text):
                    continue
            elif text.startswith(("catch", "}")) and not re.search(r"\{\s*\}", text):
                body = next((n.text.strip() for n in lines[i + 1 :] if n.text.strip()), "")
                if body != "}":
                    continue
            yield MaskingViolation(patch.path, line.new_line, rule.id, f"{rule.what}: `{text}`")


__all__ = ["RULES", "MaskingRule", "MaskingViolation", "masking_violations"]
