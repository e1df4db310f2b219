"""unittest: its verbose/default text (:mod:`runners.results_python`)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row, flags
from runners.frameworks.shell import quote_all
from runners.results_python import parse_unittest_text


def select(head: str, last: str, tokens: list[str], ids: list[str]) -> str | None:
    """``python -m unittest`` with the dotted ids (output options kept)."""
    idx = next((i for i, t in enumerate(tokens) if t == "unittest"), None)
    if idx is None:
        return None
    opts = [t for t in tokens[idx + 1 :] if t in ("-v", "--verbose", "-b", "--buffer", "-q", "--quiet")]
    return head + quote_all([*tokens[: idx + 1], *opts, *ids])


ROW = Row(
    name="unittest",
    command=re.compile(r"\bunittest\b"),
    signature=re.compile(r"^Ran \d+ tests? in ", re.M),
    parse=parse_unittest_text,
    fail_fast=flags("unittest", ("-f", "none"), ("--failfast", "none")),
    select=select,
)
