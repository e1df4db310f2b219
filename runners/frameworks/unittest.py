"""unittest: its verbose/default text (:mod:`runners.results_python`)."""

from __future__ import annotations

import re
import shlex

from runners.frameworks.row import Row, flags
from runners.frameworks.shell import quote_all, split_last
from runners.results_python import parse_unittest_text


def select(head: str, last: str, tokens: list[str], ids: list[str]) -> str | None:
    """``python -m unittest`` with the dotted ids (output options kept)."""
    idx = next((i for i, t in enumerate(tokens) if t == "unittest"), None)
    if idx is None:
        return None
    opts = [t for t in tokens[idx + 1 :] if t in ("-v", "--verbose", "-b", "--buffer", "-q", "--quiet")]
    return head + quote_all([*tokens[: idx + 1], *opts, *ids])


def adapt(command: str, last: str) -> str:
    """``python -m unittest`` names passing tests only with ``-v``: without it a fixed target reads
    as "not run". The flag goes right after ``unittest`` (or after ``discover``, which must come first)."""
    try:
        tokens = shlex.split(last)
    except ValueError:
        return command
    if "unittest" not in tokens or {"-v", "--verbose"} & set(tokens):
        return command
    at = tokens.index("unittest") + 1
    if at < len(tokens) and tokens[at] == "discover":
        at += 1
    head, _ = split_last(command)
    return head + quote_all([*tokens[:at], "-v", *tokens[at:]])


ROW = Row(
    name="unittest",
    command=re.compile(r"\bunittest\b"),
    signature=re.compile(r"^Ran \d+ tests? in ", re.M),
    parse=parse_unittest_text,
    fail_fast=flags("unittest", ("-f", "none"), ("--failfast", "none")),
    adapt=adapt,
    select=select,
    runtime="python",
)
