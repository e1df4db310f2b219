"""Hand-injected one-line bugs in outside packages for tier 0 (issue #29): ``bench/outside/injected/``.

The bug kinds the issue names (an augmented assignment ``-=``/``+=`` swapped, a comparison reached
only through ``in``, swapped call arguments, a call target, a removed clause or ``not``, literals,
a wrong field), written by hand into two pinned sdists no bench used before (``parse`` 1.20.2,
``pathspec`` 0.12.1; :data:`bench.outside.corpus.INJECTED`). Each mutant was kept only when the
package's own suite, run directly, fails with test failures (checked before any ARCS run; rejected:
three mutants no test detects and one that hangs). The split alternates ``tuning``/``held_out`` in
the order of :data:`MUTANTS`, written here before the first run.

    python -m bench.outside.injected          # (re)write bench/outside/injected/<id>/case.json
"""

from __future__ import annotations

import json
import sys

from bench.outside.build import Mutant, _fix_edit
from bench.outside.corpus import BY_NAME, HERE, unpacked

OUT = HERE / "injected"
COMMAND = "python -m pytest -q tests"

# (id, package, path, line, function, bug class, old fragment, new fragment)
MUTANTS: tuple[tuple[str, str, str, int, str, str, str, str], ...] = (
    (
        "parse-augassign-L233",
        "parse",
        "parse.py",
        233,
        "date_convert",
        "wrong_operator",
        "H -= 12",
        "H += 12",
    ),
    (
        "parse-contains-L883",
        "parse",
        "parse.py",
        883,
        "Result.__contains__",
        "wrong_operator",
        "name in self.named",
        "name not in self.named",
    ),
    (
        "parse-swapargs-L260",
        "parse",
        "parse.py",
        260,
        "date_convert",
        "swapped_arguments",
        "FixedTzOffset(offset, tz)",
        "FixedTzOffset(tz, offset)",
    ),
    (
        "parse-swapargs-L280",
        "parse",
        "parse.py",
        280,
        "strf_date_convert",
        "swapped_arguments",
        "strptime(x, type)",
        "strptime(type, x)",
    ),
    (
        "parse-operands-L257",
        "parse",
        "parse.py",
        257,
        "date_convert",
        "wrong_variable",
        "int(tzm) + int(tzh) * 60",
        "int(tzh) + int(tzm) * 60",
    ),
    (
        "parse-literal-L258",
        "parse",
        "parse.py",
        258,
        "date_convert",
        "wrong_constant",
        'sign == "-"',
        'sign == "+"',
    ),
    (
        "parse-augassign-L238",
        "parse",
        "parse.py",
        238,
        "date_convert",
        "wrong_operator",
        "H += 12",
        "H -= 12",
    ),
    (
        "parse-field-L876",
        "parse",
        "parse.py",
        876,
        "Result.__getitem__",
        "wrong_variable",
        "self.fixed[item]",
        "self.named[item]",
    ),
    (
        "pathspec-calltarget-L443",
        "pathspec",
        "pathspec/util.py",
        443,
        "normalize_file",
        "wrong_call",
        "startswith('/')",
        "endswith('/')",
    ),
    (
        "pathspec-removenot-L188",
        "pathspec",
        "pathspec/util.py",
        188,
        "_is_iterable",
        "negated_condition",
        "and not isinstance",
        "and isinstance",
    ),
    (
        "pathspec-clause-L123",
        "pathspec",
        "pathspec/patterns/gitwildmatch.py",
        123,
        "GitWildMatchPattern.pattern_to_regex",
        "missing_clause",
        " and not pattern_segs[1]",
        "",
    ),
    (
        "pathspec-slice-L445",
        "pathspec",
        "pathspec/util.py",
        445,
        "normalize_file",
        "off_by_one",
        "norm_file[1:]",
        "norm_file[2:]",
    ),
    (
        "pathspec-name-L380",
        "pathspec",
        "pathspec/patterns/gitwildmatch.py",
        380,
        "GitWildMatchPattern.escape",
        "wrong_variable",
        "return_type is bytes",
        "return_type is str",
    ),
    (
        "pathspec-cmpnegate-L305",
        "pathspec",
        "pathspec/patterns/gitwildmatch.py",
        305,
        "GitWildMatchPattern._translate_segment_glob",
        "wrong_operator",
        "pattern[j] != ']'",
        "pattern[j] == ']'",
    ),
)


def build() -> list[dict[str, object]]:
    """The case records (see the module docstring)."""
    cases: list[dict[str, object]] = []
    for i, (cid, package, path, line, function, bug_class, old, new) in enumerate(MUTANTS):
        pkg = BY_NAME[package]
        tree = unpacked(pkg)
        original = (tree / path).read_text(encoding="utf-8").split("\n")[line - 1]
        if original.count(old) != 1:
            raise SystemExit(f"{cid}: {old!r} is not once in {path}:{line}")
        m = Mutant(path, line, original, original.replace(old, new), bug_class, function)
        fix = _fix_edit(tree, m)
        cases.append(
            {
                "id": cid,
                "language": "python",
                "bug_class": bug_class,
                "description": f"{bug_class}: `{old}` -> `{new}` in {function}() ({path}:{line}) of {package} {pkg.version}.",
                "test_command": COMMAND,
                "tags": ["mutant", "injected"],
                "split": "tuning" if i % 2 == 0 else "held_out",
                "expected_fix": {"path": path, "contains": fix["new"]},
                "llm_fix": {"explanation": "Restore the original line.", "edits": [fix]},
                "source": {
                    "package": package,
                    "version": pkg.version,
                    "sdist": pkg.sdist,
                    "sha256": pkg.sha256,
                    "mutation": {
                        "path": path,
                        "line": line,
                        "function": function,
                        "operator": bug_class,
                        "original": m.original,
                        "mutated": m.mutated,
                    },
                },
                "generated": {"by": "hand", "detected_by_command": "fail"},
            }
        )
    return cases


def main() -> int:
    """Write every case's ``case.json``."""
    for case in build():
        folder = OUT / str(case["id"])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "case.json").write_text(json.dumps(case, indent=2) + "\n", encoding="utf-8")
        print(case["id"], case["split"], file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
