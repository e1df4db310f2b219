"""go test: ``-json`` events or its text (:mod:`runners.results_compiled`)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row, flags
from runners.frameworks.shell import quote_all, regex_escape
from runners.results_compiled import parse_go_text

_GO_VALUE_FLAGS = frozenset(
    [
        "-run",
        "-skip",
        "-count",
        "-tags",
        "-timeout",
        "-p",
        "-parallel",
        "-cpu",
        "-bench",
        "-benchtime",
        "-coverprofile",
        "-covermode",
        "-coverpkg",
        "-exec",
        "-ldflags",
        "-gcflags",
        "-asmflags",
        "-o",
        "-shuffle",
        "-vet",
        "-mod",
        "-modfile",
    ]
)


def select(head: str, last: str, tokens: list[str], ids: list[str]) -> str | None:
    """``go test -run '^(A|B)$' <packages>`` (``-count=1``: never a cached result)."""
    try:
        idx = next(i for i in range(len(tokens) - 1) if tokens[i] == "go" and tokens[i + 1] == "test")
    except StopIteration:
        return None
    flags: list[str] = []
    rest = tokens[idx + 2 :]
    i = 0
    while i < len(rest):
        tok = rest[i]
        if tok == "-args":
            break
        name = tok.split("=", 1)[0]
        if tok.startswith("-"):
            if name in ("-run", "-count", "--run", "--count"):
                i += 1 if "=" in tok else 2
                continue
            flags.append(tok)
            if name in _GO_VALUE_FLAGS and "=" not in tok and i + 1 < len(rest):
                flags.append(rest[i + 1])
                i += 1
        i += 1
    packages: list[str] = []
    names: list[str] = []
    for test_id in ids:
        pkg, sep, name = test_id.rpartition("::")
        top = name.split("/", 1)[0]
        if sep and pkg not in packages:
            packages.append(pkg)
        if top not in names:
            names.append(top)
    pattern = "^(" + "|".join(regex_escape(n) for n in names) + ")$"
    # -count=1: never serve a cached result when the point is to run the test again.
    return head + quote_all(["go", "test", *flags, "-count=1", "-run", pattern, *(packages or ["./..."])])


INVOKES = re.compile(r"(?:^|\s)go\s+test(?=\s|$)")


def adapt(command: str, last: str) -> str:
    """``go test -json`` (the last ``go test`` of the line)."""
    if not INVOKES.search(last) or "-json" in last.split():
        return command
    return re.sub(r"\bgo\s+test\b(?![\s\S]*\bgo\s+test\b)", "go test -json", command)


ROW = Row(
    name="go",
    command=re.compile(r"\bgo test\b|\bgotestsum\b"),
    signature=re.compile(r"^(--- (FAIL|PASS): |=== RUN |ok  \t|FAIL\t)", re.M),
    parse=parse_go_text,
    fail_fast=flags("go", ("-failfast", "none"), ("--failfast", "none")),
    adapt=adapt,
    select=select,
    report="go-json",
    report_unadapted=INVOKES,
)
