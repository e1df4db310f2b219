"""cargo test (libtest's text, :mod:`runners.results_compiled`); it stops at the first failing
test binary unless told ``--no-fail-fast``."""

from __future__ import annotations

import re

from runners.frameworks.row import Row
from runners.frameworks.shell import quote_all
from runners.results_compiled import parse_cargo_text


def select(head: str, last: str, tokens: list[str], ids: list[str]) -> str | None:
    """``cargo test -- --exact <names>``."""
    if "--" in tokens:
        cut = tokens.index("--")
        return head + quote_all([*tokens[: cut + 1], "--exact", *tokens[cut + 1 :], *ids])
    return head + quote_all([*tokens, "--", "--exact", *ids])


RUN_ALL = "--no-fail-fast"


def adapt(command: str, last: str) -> str:
    """``cargo test --no-fail-fast``: without it cargo stops at the first failing test binary."""
    if not re.search(r"\bcargo\s+test\b", last) or RUN_ALL in last:
        return command
    return re.sub(r"\bcargo\s+test\b", f"cargo test {RUN_ALL}", command, count=1)


ROW = Row(
    name="cargo",
    command=re.compile(r"\bcargo (?:\+\S+ )?(?:test|nextest)\b"),
    signature=re.compile(r"^(test result: |running \d+ tests?$)", re.M),
    parse=parse_cargo_text,
    run_all=RUN_ALL,
    adapt=adapt,
    select=select,
)
