"""Validate the localization corpus: ``python -m bench.localization.check_corpus``.

Checks, for every case in ``cases.jsonl``:

1. the repository exists and ``expected.path`` is one of its files;
2. ``expected.symbol`` is a function/method of that file (independent parser, see ``symbols.py``);
3. for traceback/ci_log cases, every frame that resolves to a repository file points at a non-blank
   line inside the file, and when the frame names its function, inside a function of that simple
   name (closures count as their enclosing function);
4. every hint resolves to a repository file and line, and the hints equal what ``frames.py``
   extracts from the query (so ``cases.jsonl`` is in sync with the text);
5. no unresolved ``{{...|...}}`` placeholder is left, ids are unique, and ``cases.jsonl`` matches
   what ``build_cases.py`` would write from ``cases/*.yaml``.

With ``--chunker`` it also checks, once ``indexing.chunker`` exists, that the chunker produces a
chunk that the benchmark would count as a hit for each expected symbol (otherwise the case could never
be found). It prints corpus statistics, including how often the function to fix is the deepest
repository frame, is on the stack but not deepest, or is absent from the stack.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter

from bench.localization.build_cases import CorpusError, build_all
from bench.localization.corpus import (
    CASES_FILE,
    REPOS_DIR,
    Case,
    file_lines,
    file_symbols,
    find_symbol,
    load_cases,
    repo_files,
    repo_names,
)
from bench.localization.frames import (
    extract_hints,
    innermost_last,
    parse_frames,
    resolve_path,
    simple_func_name,
)

_LEFTOVER = re.compile(r"\{\{(?:L:)?[\w./-]+\|")


def check_case(case: Case) -> tuple[list[str], str]:
    """Problems found in one case, and where the expected symbol sits relative to the stack."""
    problems: list[str] = []
    if not (REPOS_DIR / case.repo).is_dir():
        return [f"unknown repo {case.repo}"], "n/a"
    files = repo_files(case.repo)
    if case.expected_path not in files:
        return [f"expected path {case.expected_path} not in repo"], "n/a"
    target = find_symbol(case.repo, case.expected_path, case.expected_symbol)
    if target is None:
        names = [s.name for s in file_symbols(case.repo, case.expected_path)]
        problems.append(f"expected symbol {case.expected_symbol} not in {case.expected_path} (has {names})")
    if _LEFTOVER.search(case.query):
        problems.append("unresolved placeholder in query")

    position = "n/a"
    if case.kind != "issue":
        repo_frames: list[tuple[str, int]] = []
        for frame in parse_frames(case.query):
            path = resolve_path(frame.path, files)
            if path is None:
                continue
            lines = file_lines(case.repo, path)
            if not 1 <= frame.line <= len(lines) or not lines[frame.line - 1].strip():
                problems.append(f"frame {path}:{frame.line} is not a non-blank line of the file")
                continue
            repo_frames.append((path, frame.line))
            name = simple_func_name(frame.func) if frame.func else None
            if name is None:
                continue
            syms = [s for s in file_symbols(case.repo, path) if s.last == name and s.contains(frame.line)]
            if not syms:
                problems.append(f"frame {path}:{frame.line} is not inside a function named {name}")
        if not repo_frames:
            problems.append("traceback/ci_log case without any repository frame")
        expected_hints = extract_hints(case.query, files)
        if list(case.hints) != expected_hints:
            problems.append(f"hints {list(case.hints)} != extracted {expected_hints} (rebuild cases.jsonl)")
        if target is not None:
            on_stack = [
                (p, line) for p, line in repo_frames if p == case.expected_path and target.contains(line)
            ]
            if not on_stack:
                position = "not on stack"
            else:
                deepest = _deepest(case.query, repo_frames)
                position = "deepest frame" if deepest in on_stack else "on stack, not deepest"
    for path, line in case.hints:
        if path not in files:
            problems.append(f"hint path {path} not in repo")
        elif not 1 <= line <= len(file_lines(case.repo, path)):
            problems.append(f"hint {path}:{line} out of range")
    return problems, position


def _deepest(query: str, frames: list[tuple[str, int]]) -> tuple[str, int]:
    # CPython and pytest print the innermost frame last; Go, Rust, V8 and vitest print it first.
    return frames[-1] if innermost_last(query) else frames[0]


def check_chunker(cases: list[Case]) -> list[str]:
    """Problems where the chunker yields no chunk that could count as a hit for a case."""
    try:
        from indexing.chunker import chunk_file
    except ImportError as exc:
        return [f"chunker not available ({exc}); skipped"]
    from bench.localization.run import symbol_matches

    problems = []
    for case in cases:
        text = (REPOS_DIR / case.repo / case.expected_path).read_text(encoding="utf-8")
        result = chunk_file(case.expected_path, text)
        chunks = result.chunks
        if not any(symbol_matches(c, case.expected_path, case.expected_symbol) for c in chunks):
            names = sorted({c.qualified_name for c in chunks})
            problems.append(f"{case.id}: no chunk matches {case.expected_symbol}; chunker has {names}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Run all checks and print a summary; exit status 1 on any problem."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--chunker", action="store_true", help="also check expected symbols against the chunker"
    )
    args = parser.parse_args(argv)

    failures = 0
    cases = load_cases()
    try:
        rebuilt = build_all()
    except CorpusError as exc:
        print(f"FAIL build: {exc}")
        return 1
    if [json.dumps(c.as_json()) for c in rebuilt] != [json.dumps(c.as_json()) for c in cases]:
        print(f"FAIL {CASES_FILE.name} is out of date; run python -m bench.localization.build_cases")
        failures += 1
    ids = Counter(c.id for c in cases)
    for dup in [i for i, n in ids.items() if n > 1]:
        print(f"FAIL duplicate id {dup}")
        failures += 1

    positions: Counter[str] = Counter()
    for case in cases:
        problems, position = check_case(case)
        if case.kind != "issue":
            positions[position] += 1
        for problem in problems:
            print(f"FAIL {case.id}: {problem}")
        failures += bool(problems)

    if args.chunker:
        for problem in check_chunker(cases):
            print(f"{'WARN' if 'skipped' in problem else 'FAIL'} chunker: {problem}")
            failures += "skipped" not in problem

    by_repo = Counter(c.repo for c in cases)
    by_kind = Counter(c.kind for c in cases)
    print(
        f"{len(cases)} cases over {len(by_repo)} repos ({', '.join(f'{r}: {n}' for r, n in sorted(by_repo.items()))})"
    )
    print(f"kinds: {', '.join(f'{k}: {n}' for k, n in sorted(by_kind.items()))}")
    for repo in repo_names():
        files = repo_files(repo)
        code_lines = sum(
            len(file_lines(repo, f)) for f in files if not f.endswith((".md", ".json", ".toml", ".mod"))
        )
        print(f"repo {repo}: {len(files)} files, {code_lines} code lines")
    print(f"expected symbol vs stack (traceback + ci_log): {dict(sorted(positions.items()))}")
    print("OK" if failures == 0 else f"{failures} failing case(s)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
