"""Value types of the repair core: tasks' failures, edits, proposals, evidence, feedback, gate results."""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

EditKind = Literal["replace", "create", "insert", "delete_file"]


@dataclass(frozen=True, slots=True)
class Edit:
    """One structured edit of a workspace file.

    - ``replace``: ``old`` must occur exactly once in the file; it becomes ``new``.
    - ``create``: a new file with content ``new`` (fails if it exists).
    - ``insert``: ``new`` inserted after line ``line`` (0 = top of file).
    - ``delete_file``: remove the file (policy gates usually forbid it for tests).
    """

    path: str
    kind: EditKind = "replace"
    old: str = ""
    new: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class Frame:
    """A stack frame pointing into the repository."""

    path: str
    line: int
    function: str = ""


@dataclass(frozen=True, slots=True)
class Failure:
    """One observed failure (a failing test, or a build/lint error), as the loop sees it."""

    test_id: str
    type: str = ""
    """Exception / error type (``AssertionError``, ``NameError``, ``E0308``, ``TS2345``…)."""
    message: str = ""
    path: str = ""
    line: int = 0
    frames: tuple[Frame, ...] = ()
    """Innermost last, repository frames only, trimmed."""


@dataclass(frozen=True, slots=True)
class Usage:
    """LLM consumption of one or more calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    usd: float = 0.0
    calls: int = 0
    estimated: bool = False
    """True when a price came from the conservative default (unknown model)."""

    @property
    def tokens(self) -> int:
        """All tokens billed (input, output, cache reads and writes)."""
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            usd=round(self.usd + other.usd, 10),
            calls=self.calls + other.calls,
            estimated=self.estimated or other.estimated,
        )


@dataclass(frozen=True, slots=True)
class Proposal:
    """A candidate patch from a proposer, before it is applied or executed."""

    edits: tuple[Edit, ...]
    explanation: str = ""
    """The proposer's account of the root cause and the change (goes into the PR body)."""
    proposer: str = ""
    variant: str = ""
    """Which prompt variant / template produced it (diversified prompting, template class)."""
    usage: Usage = field(default_factory=Usage)
    raw: str = ""
    """The raw model response, recorded for deterministic replay."""

    @property
    def key(self) -> str:
        """Stable key of the change: the sorted (path, old, new) triples of the edits, hashed.

        Order-independent and blind to explanation, proposer and usage; the loop hands these keys
        back to proposers in ``ProposalRequest.tried``.
        """
        triples = sorted((e.path, e.old, e.new) for e in self.edits)
        return hashlib.sha256(
            json.dumps(triples, ensure_ascii=False).encode("utf-8", "surrogatepass")
        ).hexdigest()[:24]


EvidenceSource = Literal["code", "doc", "feedback", "verified", "test"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """One item of the knowledge soup shown to a proposer."""

    id: str
    source: EvidenceSource
    path: str
    start_line: int
    end_line: int
    text: str
    symbol: str = ""
    score: float = 0.0
    why: str = ""


@dataclass(frozen=True, slots=True)
class Feedback:
    """Encoded execution feedback of one round (observed failures only)."""

    round: int
    summary: str
    failures: tuple[Failure, ...] = ()
    edit_errors: tuple[str, ...] = ()
    gate_failures: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GateResult:
    """The verdict of one quality gate on one candidate."""

    gate: str
    passed: bool
    detail: str = ""
    data: Mapping[str, object] = field(default_factory=dict)


def normalize_repo_path(path: object) -> str | None:
    """A clean repository-relative POSIX path, or None when ``path`` is empty, absolute or escapes
    (a path the model named: tool inputs, planned and proposed edits)."""
    if not isinstance(path, str):
        return None
    text = path.strip().replace("\\", "/")
    if not text or text.startswith("/") or re.match(r"^[A-Za-z]:", text) or "\x00" in text:
        return None
    norm = posixpath.normpath(text)
    if norm in (".", "") or norm == ".." or norm.startswith("../"):
        return None
    return norm
