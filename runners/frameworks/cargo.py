"""cargo test (libtest's text, :mod:`runners.results_compiled`); it stops at the first failing
test binary unless told ``--no-fail-fast``."""

from __future__ import annotations

import re

from runners.frameworks.row import Row
from runners.results_compiled import parse_cargo_text

ROW = Row(
    name="cargo",
    command=re.compile(r"\bcargo (?:\+\S+ )?(?:test|nextest)\b"),
    signature=re.compile(r"^(test result: |running \d+ tests?$)", re.M),
    parse=parse_cargo_text,
    run_all="--no-fail-fast",
)
