"""Build ``cases.jsonl`` from the authored ``cases/<repo>.yaml`` files.

The YAML files are the source: readable multi-line queries. Stack frames that were not captured from
a real run are written with placeholders that this script resolves against the repository, so their
line numbers cannot drift from the code:

* ``{{path|Symbol.name|snippet}}`` -> ``line:column`` of the first occurrence of ``snippet`` inside
  the function ``Symbol.name`` of ``path`` (an empty symbol searches the whole file and then
  requires the snippet to be unique);
* ``{{L:path|Symbol.name|snippet}}`` -> just the line.

``hints`` are then extracted from the resolved text of traceback/ci_log cases with
:func:`bench.localization.frames.extract_hints`. Run ``python -m bench.localization.build_cases``
after editing a YAML file or a corpus repository, then ``python -m bench.localization.check_corpus``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

from bench.localization.corpus import CASES_FILE, CASES_SRC_DIR, Case, file_lines, find_symbol, repo_files
from bench.localization.frames import extract_hints

_PLACEHOLDER = re.compile(r"\{\{(?P<body>(?:L:)?[\w./-]+\|.*?)\}\}")


class CorpusError(Exception):
    """A case that cannot be built."""


def resolve_placeholder(repo: str, body: str) -> str:
    """Resolve one placeholder body (without braces) to ``line:col`` or ``line``."""
    line_only = body.startswith("L:")
    if line_only:
        body = body[2:]
    try:
        path, symbol, snippet = body.split("|", 2)
    except ValueError:
        raise CorpusError(f"bad placeholder {{{{{body}}}}}") from None
    lines = file_lines(repo, path)
    if symbol:
        sym = find_symbol(repo, path, symbol)
        if sym is None:
            raise CorpusError(f"{repo}/{path}: no symbol {symbol}")
        candidates = [i for i in range(sym.start, sym.end + 1) if snippet in lines[i - 1]]
        candidates = candidates[:1]
    else:
        candidates = [i + 1 for i, text in enumerate(lines) if snippet in text]
        if len(candidates) > 1:
            raise CorpusError(f"{repo}/{path}: snippet {snippet!r} is not unique: lines {candidates}")
    if not candidates:
        raise CorpusError(f"{repo}/{path}: snippet {snippet!r} not found in {symbol or 'file'}")
    line = candidates[0]
    if line_only:
        return str(line)
    return f"{line}:{lines[line - 1].index(snippet) + 1}"


def build_case(repo: str, raw: dict[str, object]) -> Case:
    """One YAML record -> :class:`Case` with placeholders resolved and hints extracted."""
    query = str(raw["query"])
    query = _PLACEHOLDER.sub(lambda m: resolve_placeholder(repo, m.group("body")), query)
    kind = str(raw["kind"])
    if kind not in ("traceback", "ci_log", "issue"):
        raise CorpusError(f"{raw['id']}: unknown kind {kind}")
    expected = raw["expected"]
    assert isinstance(expected, dict)
    hints = tuple(extract_hints(query, repo_files(repo))) if kind != "issue" else ()
    return Case(
        id=str(raw["id"]),
        repo=repo,
        kind=kind,  # type: ignore[arg-type]
        query=query,
        expected_path=str(expected["path"]),
        expected_symbol=str(expected["symbol"]),
        hints=hints,
        note=str(raw.get("note", "")),
    )


def build_all(src_dir: Path = CASES_SRC_DIR) -> list[Case]:
    """Every case of every ``cases/<repo>.yaml``, in file order."""
    cases: list[Case] = []
    for src in sorted(src_dir.glob("*.yaml")):
        records = yaml.safe_load(src.read_text(encoding="utf-8"))
        cases.extend(build_case(src.stem, record) for record in records)
    ids = [c.id for c in cases]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise CorpusError(f"duplicate case ids: {sorted(dupes)}")
    return cases


def main(argv: list[str] | None = None) -> int:
    """Write ``cases.jsonl`` (or check that it is up to date with ``--check``)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail if cases.jsonl is not up to date")
    args = parser.parse_args(argv)
    try:
        cases = build_all()
    except CorpusError as exc:
        print(f"build_cases: {exc}", file=sys.stderr)
        return 1
    text = "".join(json.dumps(c.as_json(), ensure_ascii=False) + "\n" for c in cases)
    if args.check:
        current = CASES_FILE.read_text(encoding="utf-8") if CASES_FILE.exists() else ""
        if current != text:
            print("build_cases: cases.jsonl is out of date; run python -m bench.localization.build_cases")
            return 1
        print(f"cases.jsonl up to date ({len(cases)} cases)")
        return 0
    CASES_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {CASES_FILE.name}: {len(cases)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
