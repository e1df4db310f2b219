"""The non-LLM quality gates a candidate patch must pass before it is submitted.

Each gate is a pure function returning a :class:`~jobs.repair.model.GateResult` named
``applies``, ``syntax``, ``targets``, ``regressions``, ``policy`` or ``size``. ``detail`` holds
one or more human lines (PR body, feedback to the model); ``data`` the same facts, structured.
"""

from __future__ import annotations

import bisect
import functools
import re
import warnings
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from indexing.languages import code_language, is_test_path, parser_for
from jobs.repair.diffing import DiffStats, FilePatch, HunkLine, parse_patch
from jobs.repair.edits import AppliedEdits, EditError
from jobs.repair.masking import masking_violations
from jobs.repair.model import GateResult
from runners import wsfs

_MAX_LISTED = 20


def _listing(items: Sequence[str], prefix: str = "", limit: int = _MAX_LISTED) -> list[str]:
    shown = [prefix + item for item in items[:limit]]
    if len(items) > limit:
        shown.append(f"... and {len(items) - limit} more")
    return shown


def gate_summary(results: Iterable[GateResult]) -> str:
    """Markdown-friendly lines, one block per gate: ``- [x] syntax: ...`` (for PR bodies and traces)."""
    out: list[str] = []
    for r in results:
        lines = r.detail.splitlines() or [""]
        out.append(f"- [{'x' if r.passed else ' '}] {r.gate}: {lines[0]}".rstrip())
        out.extend(f"  {line}" for line in lines[1:])
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# applies
# ---------------------------------------------------------------------------------------------


def applies_gate(outcome: AppliedEdits | EditError) -> GateResult:
    """The edits applied cleanly and changed something."""
    if isinstance(outcome, EditError):
        return GateResult(
            "applies",
            False,
            str(outcome),
            {"index": outcome.index, "path": outcome.path, "reason": outcome.reason},
        )
    if outcome.empty:
        return GateResult("applies", False, "the edits change nothing", {"files": 0})
    n = len(outcome.changes)
    return GateResult(
        "applies",
        True,
        f"applied cleanly to {n} file{'s' if n != 1 else ''}",
        {"files": n, "paths": list(outcome.paths)},
    )


# ---------------------------------------------------------------------------------------------
# syntax
# ---------------------------------------------------------------------------------------------

_MAX_ERRORS_SHOWN = 3


def language_of(path: str) -> str | None:
    """The language the syntax gate checks ``path`` as, or None (not checked)."""
    return code_language(path)


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """One syntax error: 1-based line and a short description."""

    line: int
    message: str


def syntax_problems(path: str, text: str) -> list[SyntaxProblem] | None:
    """Syntax errors in ``text`` (empty list: parses), or None when the language is not checked.

    Python uses ``compile()`` (one error at most); the others tree-sitter ERROR/MISSING nodes.
    """
    language = language_of(path)
    if language is None:
        return None
    if language == "python":
        return _python_problems(path, text)
    return _tree_sitter_problems(language, text)


def _python_problems(path: str, text: str) -> list[SyntaxProblem]:
    try:
        with warnings.catch_warnings():
            # e.g. SyntaxWarning for "\d" in a string: not an error, and must not escape as one
            warnings.simplefilter("ignore")
            # a full compile (not just ast.parse) also reports symbol-table errors: return outside def
            compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return [SyntaxProblem(exc.lineno or 0, f"{type(exc).__name__}: {exc.msg}")]
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        return [SyntaxProblem(0, str(exc))]
    return []


def _tree_sitter_errors(language: str, text: str) -> list[SyntaxProblem]:
    """Every ERROR and MISSING node, nested ones included, in document order."""
    data = text.encode("utf-8", "surrogateescape")
    tree = parser_for(language).parse(data)
    if not tree.root_node.has_error:
        return []
    found: list[SyntaxProblem] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_missing:
            found.append(SyntaxProblem(node.start_point[0] + 1, f"missing {node.type!r}"))
        elif node.is_error:
            first = data[node.start_byte : node.end_byte].decode("utf-8", "replace").strip().split("\n", 1)[0]
            found.append(SyntaxProblem(node.start_point[0] + 1, f"syntax error near {first[:40]!r}"))
        if node.has_error:
            stack.extend(reversed(node.children))
    return found


def _tree_sitter_problems(language: str, text: str) -> list[SyntaxProblem]:
    # One problem per line: the outermost node on a line says the most.
    by_line: dict[int, SyntaxProblem] = {}
    for problem in _tree_sitter_errors(language, text):
        by_line.setdefault(problem.line, problem)
    return sorted(by_line.values(), key=lambda p: p.line)


def _error_count(path: str, text: str) -> int:
    """How broken ``text`` is, for "no new errors": tree-sitter error nodes, nested ones included.

    Nested nodes matter: tree-sitter often folds a second error into the ERROR node of the first.
    """
    language = language_of(path)
    return len(_tree_sitter_errors(language, text)) if language else 0


def syntax_gate(applied: AppliedEdits, *, workspace: Path | None = None) -> GateResult:
    """Every touched source file still parses.

    Checked: Python (``compile``), JavaScript, TypeScript/TSX, Go, Rust, Java (tree-sitter).
    A file that parsed before the edit must parse after it; a file already broken before is
    judged by "no new errors" (no more problems than before). When ``workspace`` is given the
    files are read from it (the state the tests will see), else from ``applied``.
    """
    failures: list[str] = []
    checked: list[str] = []
    skipped: list[str] = []
    data: dict[str, object] = {}
    for change in applied.changes:
        after = change.after
        if after is None:
            continue
        if workspace is not None:
            try:
                after = wsfs.read_text(workspace, change.path, limit=wsfs.SOURCE_LIMIT, whole=True)
            except (OSError, UnicodeDecodeError):
                pass
        problems_after = syntax_problems(change.path, after)
        if problems_after is None:
            skipped.append(change.path)
            continue
        checked.append(change.path)
        if not problems_after:
            continue
        problems_before = syntax_problems(change.path, change.before) if change.before is not None else []
        # Already broken before the edit: only new errors count. Counted with tree-sitter for every
        # language, since compile() reports one error at most (and rejects syntax newer than this
        # interpreter, which tree-sitter parses).
        if (
            problems_before
            and change.before is not None
            and _error_count(change.path, after) <= _error_count(change.path, change.before)
        ):
            continue
        shown = [f"{change.path}:{p.line}: {p.message}" for p in problems_after[:_MAX_ERRORS_SHOWN]]
        if len(problems_after) > _MAX_ERRORS_SHOWN:
            shown.append(
                f"{change.path}: ... and {len(problems_after) - _MAX_ERRORS_SHOWN} more syntax errors"
            )
        if problems_before:
            shown.append(f"{change.path}: already had syntax errors before the edit; the patch adds more")
        failures.extend(shown)
        data[change.path] = [{"line": p.line, "message": p.message} for p in problems_after]
    if failures:
        return GateResult(
            "syntax",
            False,
            "\n".join(["the patch introduces syntax errors:", *failures]),
            {"errors": data, "checked": checked},
        )
    n = len(checked)
    detail = f"{n} touched source file{'s parse' if n != 1 else ' parses'}"
    if skipped:
        detail += f" ({len(skipped)} other file{'s' if len(skipped) != 1 else ''} not checked)"
    return GateResult("syntax", True, detail, {"checked": checked, "skipped": skipped})


# ---------------------------------------------------------------------------------------------
# targets and regressions
# ---------------------------------------------------------------------------------------------

_SUBTEST_SEPARATORS = ("::", "[", "/", "#", ".")


def _covers(target: str, test_id: str) -> bool:
    """``test_id`` is ``target`` or one of its parametrizations / subtests / members."""
    if test_id == target:
        return True
    return test_id.startswith(target) and test_id[len(target) :].startswith(_SUBTEST_SEPARATORS)


def targets_gate(
    targets: Collection[str], candidate_passed: Collection[str], candidate_failed: Collection[str]
) -> GateResult:
    """Every target test passes with the candidate; a target that did not run counts as failed.

    A target also covers the ids below it (``t[1]``, ``TestX/sub``, ``file.py::test``): it
    passes when at least one of them ran and none failed.
    """
    passed, failed = set(candidate_passed), set(candidate_failed)
    failing: list[str] = []
    not_run: list[str] = []
    for target in sorted(set(targets)):
        bad = sorted(t for t in failed if _covers(target, t))
        if bad:
            failing.append(target if bad == [target] else f"{target} ({', '.join(bad[:5])})")
        elif not any(_covers(target, t) for t in passed):
            not_run.append(target)
    if not targets:
        return GateResult("targets", True, "no target tests were given", {"targets": 0})
    if not failing and not not_run:
        n = len(set(targets))
        return GateResult("targets", True, f"all {n} target test{'s' if n != 1 else ''} pass", {"targets": n})
    lines = [f"{len(failing) + len(not_run)} of {len(set(targets))} target tests do not pass:"]
    lines += _listing(failing, "failed: ")
    lines += _listing(not_run, "not run: ")
    return GateResult("targets", False, "\n".join(lines), {"failed": failing, "not_run": not_run})


def regression_gate(
    baseline_passed: Collection[str],
    candidate_failed: Collection[str],
    candidate_ran: Collection[str],
    *,
    failing_before: Collection[str] | None = None,
) -> GateResult:
    """No test that passed on the base commit fails now, or no longer runs.

    ``candidate_ran`` holds the ids that ran to a verdict (passed or failed); a test that is now
    skipped or not collected is missing from it and counts as a regression.

    With ``failing_before`` (every id the full baseline saw fail), *any* failing id that is not
    among them is a regression too: a test that was never observed before the change (a
    fail-fast run stopped first, a collection error hid it) is unknown, not passing.
    """
    failed, ran = set(candidate_failed), set(candidate_ran) | set(candidate_failed)
    now_failing = sorted(t for t in set(baseline_passed) if t in failed)
    unproven: list[str] = []
    if failing_before is not None:
        before = set(failing_before)
        unproven = sorted(
            t
            for t in failed
            if t not in before and t not in now_failing and not any(_covers(b, t) for b in before)
        )
    missing = sorted(t for t in set(baseline_passed) if t not in ran)
    if not now_failing and not missing and not unproven:
        n = len(set(baseline_passed))
        return GateResult(
            "regressions", True, f"no regressions among {n} previously passing tests", {"baseline": n}
        )
    what = "tests regressed" if unproven else "previously passing tests regressed"
    lines = [f"{len(now_failing) + len(missing) + len(unproven)} {what}:"]
    lines += _listing(now_failing, "now fails: ")
    lines += _listing(unproven, "fails, not failing before: ")
    lines += _listing(missing, "no longer runs: ")
    return GateResult(
        "regressions",
        False,
        "\n".join(lines),
        {
            "failed": now_failing,
            "missing": missing,
            **({"unproven": unproven} if failing_before is not None else {}),
        },
    )


# ---------------------------------------------------------------------------------------------
# size
# ---------------------------------------------------------------------------------------------


def size_gate(stats: DiffStats, *, max_files: int = 10, max_lines: int = 400) -> GateResult:
    """The patch touches at most ``max_files`` files and changes at most ``max_lines`` lines."""
    data = {"files": stats.files, "lines": stats.lines, "max_files": max_files, "max_lines": max_lines}
    problems = []
    if stats.files > max_files:
        problems.append(f"touches {stats.files} files (limit {max_files})")
    if stats.lines > max_lines:
        problems.append(f"changes {stats.lines} lines (limit {max_lines})")
    summary = f"{stats.files} files, +{stats.added} -{stats.removed} lines"
    if problems:
        return GateResult("size", False, f"the patch is too large: {'; '.join(problems)}", data)
    return GateResult("size", True, summary, data)


# ---------------------------------------------------------------------------------------------
# policy
# ---------------------------------------------------------------------------------------------

DEFAULT_DENIED: tuple[str, ...] = (
    "node_modules/",
    "vendor/",
    ".venv/",
    "venv/",
    "__pycache__/",
    "*.min.js",
    "*.min.css",
)
"""Extra gitignore-style globs denied unless the caller passes its own ``denied``."""

_CI_GLOBS = (
    ".github/workflows/",
    ".github/actions/",
    ".gitlab-ci.yml",
    ".gitlab-ci/",
    ".circleci/",
    "Jenkinsfile",
    "azure-pipelines.yml",
    ".azure-pipelines/",
    ".travis.yml",
    "bitbucket-pipelines.yml",
    ".buildkite/",
    ".drone.yml",
    "appveyor.yml",
)
_LOCKFILE_GLOBS = (
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "bun.lock",
    "poetry.lock",
    "Cargo.lock",
    "go.sum",
    "uv.lock",
    "pdm.lock",
    "Pipfile.lock",
    "Gemfile.lock",
    "composer.lock",
    "packages.lock.json",
)
_CODE_SUFFIXES = ("py", "js", "ts", "go", "rs", "java", "rb", "kt", "cs", "php", "c", "h", "cpp", "swift")
_SECRET_GLOBS = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".htpasswd",
    "credentials*",
    # a credentials *module* (e.g. google/auth/credentials.py) is code, not a secret
    *(f"!credentials*.{suffix}" for suffix in _CODE_SUFFIXES),
)
_CONFIG_GLOBS = (".arcs.yml", ".arcs.yaml", ".github/arcs.yml")  # jobs.config.CONFIG_NAMES


@functools.cache
def _spec(globs: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(globs)


_RUST_TEST_MARK = re.compile(r"#\[(?:\w+::)*test\b|#\[cfg\(test\)\]")

# Lines that check something. Matched against a removed line's stripped text.
_ASSERTION = re.compile(
    r"""
      ^assert\b                                       # Python assert statement
    | \b(?:debug_)?assert\w*\s*!\s*[(\[{]             # Rust assert!, assert_eq!, debug_assert_ne!
    | \bassert\w*\s*\(                                # assertEquals(, self.assertTrue(, assert(
    | \bassert\.\w+\s*\(                              # node/chai assert.equal(
    | \bexpect(?:[A-Z]\w*)?\s*\(                       # jest/chai/vitest expect(, expectThrows(
    | \.should\b | \bshould\.\w+                      # chai should
    | \b[tb]\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(   # Go testing
    | \b(?:require|assert|suite)\.\w+\s*\(            # testify
    | \b(?:Assert|Assertions)\.\w+\s*\(               # JUnit / NUnit static use
    | \bpytest\.(?:raises|warns|approx|fail)\b
    | \bself\.fail\w*\s*\(
    | \bverify\s*\(                                   # Mockito
    | ^fail\s*\(                                      # JUnit fail()
    | ^\#\[should_panic\b
    """,
    re.VERBOSE,
)
_TAUTOLOGY = re.compile(
    r"""
      ^assert\s*\(?\s*(?:True|1|not\s+(?:False|None|0))\s*\)?\s*(?:,.*)?(?:\#.*)?$
    | ^assert\s+([\w."']+)\s*(?:==|is)\s*\1\s*(?:,.*)?(?:\#.*)?$
    | \bassert\w*\s*!?\s*\(\s*(?:true|True|1)\s*\)
    | \bassert\w*\s*!?\s*\(\s*(?:true|True|1)\s*,\s*[^,]*\)\s*;?$   # assert!(true, "msg"), assertTrue(true, msg)
    | \bassert(?:_eq!|Equals?|\.equal|\.strictEqual|\.deepEqual)\s*\(\s*([\w."']+)\s*,\s*\2\s*[,)]
    | \bexpect\s*\(\s*(?:true|1)\s*\)\s*\.\s*(?:toBe\s*\(\s*(?:true|1)\s*\)|toBeTruthy\s*\(\s*\)|to\.be\.true)
    | \bexpect\s*\(\s*([\w."']+)\s*\)\s*\.\s*to(?:Be|Equal|StrictEqual)\s*\(\s*\3\s*\)
    | \bassert(?:\.ok)?\s*\(\s*true\s*\)
    """,
    re.VERBOSE,
)
_SKIPS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), label)
    for p, label in (
        (
            r"@pytest\.mark\.(?:skip|skipif|xfail)\b|\bpytest\.mark\.(?:skip|skipif|xfail)\b",
            "pytest skip/xfail marker",
        ),
        (r"\bpytest\.(?:skip|xfail)\s*\(", "pytest.skip()/xfail() call"),
        (r"@(?:unittest\.)?(?:skip|skipIf|skipUnless|expectedFailure)\b", "unittest skip decorator"),
        (r"\bunittest\.skip\w*\b", "unittest skip"),
        (r"\bself\.skipTest\s*\(|\braise\s+(?:unittest\.)?SkipTest\b", "unittest skipTest"),
        (r"\b(?:it|test|describe|context|suite|specify)\.(?:skip|todo)\b", "skipped JS test (.skip/.todo)"),
        (r"(?<![\w.$])(?:xit|xtest|xdescribe|xcontext|xspecify)\s*\(", "skipped JS test (x-prefix)"),
        (
            r"\b(?:it|test|describe|context|suite)\.only\b|(?<![\w.$])(?:fit|fdescribe)\s*\(",
            "focused JS test (.only skips the rest)",
        ),
        (r"\bthis\.skip\s*\(", "mocha this.skip()"),
        (r"\b[tb]\.(?:Skip|Skipf|SkipNow)\s*\(", "Go t.Skip"),
        (r"#\[ignore\b", "Rust #[ignore]"),
        (r"@(?:Disabled\w*|Ignore)\b", "JUnit @Disabled/@Ignore"),
        (r"\bAssumptions?\.assume\w*\s*\(|(?<![\w.])assume(?:True|False|That)\s*\(", "JUnit assumption"),
    )
)
_IMPORTORSKIP = re.compile(r"\bpytest\.importorskip\s*\(")
_DESELECT = re.compile(
    r"--deselect\b|--ignore(?:-glob)?\b|\bcollect_ignore(?:_glob)?\b|\btestPathIgnorePatterns\b"
    r"|(?:^|\s)-k\s*[\"']?not\b|--skip\b"
)
_BARE_RETURN = re.compile(r"^return\s*(?:None|nil|\(\))?\s*;?\s*$")
_CONTROL_FLOW = re.compile(r"^(?:\}\s*)?(?:if|for|while|switch|else|catch|try|do|match|with|elif|except)\b")
_TEST_CONFIG = re.compile(
    r"(^|/)(pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml|noxfile\.py|package\.json|Makefile|Cargo\.toml"
    r"|pom\.xml|build\.gradle(\.kts)?|(jest|vitest|karma|playwright|cypress)\.config\.[cm]?[jt]s|\.mocharc\.\w+)$"
)
_OPENS_FUNCTION = re.compile(
    r"(?:\bdef\s+\w+\s*\(.*\)\s*(?:->.*)?:"
    r"|\bfunc\b.*\{|\bfn\s+\w+.*\{|\bfunction\b.*\{|=>\s*\{"
    r"|\)\s*(?:throws\s+[\w.,\s]+)?\{)\s*$"
)
_COMMENT_OR_DOC = re.compile(r"""^(?:#|//|/\*|\*|"{3}|'{3}|"[^"]*"$|'[^']*'$)""")


@dataclass(frozen=True, slots=True)
class Violation:
    """One policy violation: where (line 0 = the whole file), which rule, and what was seen."""

    path: str
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


def policy_gate(
    change: AppliedEdits | str,
    *,
    about_tests: bool,
    denied: Sequence[str] = DEFAULT_DENIED,
    allowed: Sequence[str] | None = None,
) -> GateResult:
    """The patch stays within policy.

    Always: no edits to CI configuration, lockfiles, secret-looking files, ``.arcs.yml``, paths
    matching ``denied`` (gitignore-style globs), and — when ``allowed`` is given — only paths
    matching ``allowed``. Unless ``about_tests``: no deleting, skipping or weakening of tests
    (removed/changed assertions, tautological asserts, skip/xfail/ignore markers, deleted test
    files or functions, early returns, ``pytest.importorskip``, test deselection), and no
    masking of a flaky failure in the test or the code under test (:data:`masking.RULES`).

    ``change`` is an :class:`AppliedEdits` (full file texts sharpen the test-function check) or
    a unified diff.
    """
    if isinstance(change, AppliedEdits):
        patches = parse_patch(change.diff())
        texts: Mapping[str, tuple[str | None, str | None]] = {
            c.path: (c.before, c.after) for c in change.changes
        }
    else:
        patches = parse_patch(change)
        texts = {}
    violations: list[Violation] = []
    for patch in patches:
        violations.extend(_path_violations(patch, tuple(denied), None if allowed is None else tuple(allowed)))
        if not about_tests:
            violations.extend(_test_violations(patch, texts.get(patch.path)))
    if not about_tests:  # masking (retries, sleeps, looser checks, swallowed errors): masking.RULES
        seen = {(v.path, v.line) for v in violations}
        violations.extend(
            Violation(m.path, m.line, m.rule, m.message)
            for m in masking_violations(patches)
            if (m.path, m.line) not in seen
        )
    if not violations:
        n = len(patches)
        return GateResult("policy", True, f"no policy violations in {n} file{'s' if n != 1 else ''}", {})
    violations = sorted(set(violations), key=lambda v: (v.path, v.line, v.rule, v.message))
    lines = [f"{len(violations)} policy violation{'s' if len(violations) != 1 else ''}:"]
    lines += _listing([str(v) for v in violations])
    if not about_tests and any(v.rule.startswith(("tests.", "masking.")) for v in violations):
        lines.append("Fix the code under test; do not weaken, skip or delete tests.")
    return GateResult(
        "policy",
        False,
        "\n".join(lines),
        {
            "violations": [
                {"path": v.path, "line": v.line, "rule": v.rule, "message": v.message} for v in violations
            ]
        },
    )


def _path_violations(
    patch: FilePatch, denied: tuple[str, ...], allowed: tuple[str, ...] | None
) -> Iterator[Violation]:
    for path in dict.fromkeys(p for p in (patch.old_path, patch.new_path) if p):
        for rule, globs, what in (
            ("path.ci", _CI_GLOBS, "CI configuration"),
            ("path.lockfile", _LOCKFILE_GLOBS, "a lockfile"),
            ("path.secret", _SECRET_GLOBS, "a secrets/credentials file"),
            ("path.config", _CONFIG_GLOBS, "the ARCS configuration"),
        ):
            if _spec(globs).match_file(path):
                yield Violation(path, 0, rule, f"edits {what}, which the bot may not change")
        if denied and _spec(denied).match_file(path):
            yield Violation(path, 0, "path.denied", "path is denied by configuration")
        if allowed is not None and not (allowed and _spec(allowed).match_file(path)):
            yield Violation(path, 0, "path.not_allowed", "path is outside the allowed paths")


def _is_test_bearing(patch: FilePatch, texts: tuple[str | None, str | None] | None) -> bool:
    if any(is_test_path(p) for p in (patch.old_path, patch.new_path) if p):
        return True
    if not patch.path.endswith(".rs"):
        return False
    # Rust keeps unit tests inline (#[cfg(test)] mod tests) in ordinary source files.
    if texts is not None:
        return any(t is not None and _RUST_TEST_MARK.search(t) for t in texts)
    return any(_RUST_TEST_MARK.search(line.text) for hunk in patch.hunks for line in hunk.lines)


def _norm(text: str) -> str:
    return "".join(text.split())


def _test_violations(patch: FilePatch, texts: tuple[str | None, str | None] | None) -> Iterator[Violation]:
    path = patch.path
    added = list(patch.lines("+"))
    removed = list(patch.lines("-"))
    for line in added:
        stripped = line.text.strip()
        if _IMPORTORSKIP.search(stripped):
            yield Violation(
                path, line.new_line, "tests.importorskip", f"adds pytest.importorskip: `{stripped}`"
            )
        if (is_test_path(path) or _TEST_CONFIG.search(path)) and _DESELECT.search(stripped):
            yield Violation(
                path, line.new_line, "tests.deselect", f"excludes tests from the run: `{stripped}`"
            )
    if not _is_test_bearing(patch, texts):
        return
    if patch.status == "deleted":
        yield Violation(path, 0, "tests.deleted_file", "deletes a test file")
        return
    if patch.status == "renamed" and patch.old_path and not is_test_path(patch.path):
        yield Violation(
            patch.old_path, 0, "tests.deleted_file", f"moves a test file out of the tests ({patch.path})"
        )
    still_there = Counter(_norm(line.text) for line in added)
    for line in removed:
        stripped = line.text.strip()
        commented = bool(_COMMENT_OR_DOC.match(stripped)) and not stripped.startswith("#[")
        if commented or not _ASSERTION.search(stripped):
            continue
        key = _norm(line.text)
        if still_there[key] > 0:
            still_there[key] -= 1  # moved or re-indented, not removed
            continue
        yield Violation(
            path, line.old_line, "tests.assertion_removed", f"removes or changes an assertion: `{stripped}`"
        )
    for line in added:
        stripped = line.text.strip()
        if _TAUTOLOGY.search(stripped):
            yield Violation(
                path, line.new_line, "tests.tautology", f"adds an assertion that cannot fail: `{stripped}`"
            )
        for pattern, label in _SKIPS:
            if pattern.search(stripped):
                yield Violation(path, line.new_line, "tests.skip", f"adds a {label}: `{stripped}`")
                break
    yield from _early_returns(patch)
    yield from _deleted_tests(patch, texts, removed, added)


def _early_returns(patch: FilePatch) -> Iterator[Violation]:
    for hunk in patch.hunks:
        previous: HunkLine | None = None
        in_doc = False
        for line in hunk.lines:
            if line.kind == "-":
                continue
            stripped = line.text.strip()
            if in_doc or stripped.startswith(('"""', "'''")):
                closes = stripped.count('"""') + stripped.count("'''")
                in_doc = (in_doc and closes == 0) or (not in_doc and closes == 1)
                continue
            if not stripped or _COMMENT_OR_DOC.match(stripped):
                continue
            if (
                line.kind == "+"
                and _BARE_RETURN.match(stripped)
                and previous is not None
                and _OPENS_FUNCTION.search(previous.text.rstrip())
                and not _CONTROL_FLOW.match(previous.text.strip())
            ):
                yield Violation(
                    patch.path,
                    line.new_line,
                    "tests.early_return",
                    f"adds `{stripped}` at the top of a test, so the rest never runs",
                )
            previous = line


# Test definitions per language: (pattern, group with the name).
_TEST_DEFS: tuple[re.Pattern[str], ...] = (
    re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\(", re.MULTILINE),  # pytest / unittest
    re.compile(r"^[ \t]*class[ \t]+(Test\w*)\b", re.MULTILINE),
    re.compile(r"^func[ \t]+(Test\w+|Benchmark\w+|Fuzz\w+|Example\w*)[ \t]*\(", re.MULTILINE),  # Go
    re.compile(r"""(?<![\w.$])((?:it|test|describe)[ \t]*\([ \t]*(['"`])(?:(?!\2).)*\2)"""),  # JS/TS
    re.compile(
        r"#\[(?:\w+::)*test\b[^\]]*\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\w+)"
    ),
    re.compile(
        r"@(?:Test|ParameterizedTest|RepeatedTest|TestFactory)\b(?:\([^)]*\))?\s+(?:@\w+(?:\([^)]*\))?\s+)*"
        r"(?:(?:public|protected|private|static|final|synchronized)\s+)*[\w<>\[\],.? ]+?\s+(\w+)\s*\("
    ),
)
_TEST_MARKERS = re.compile(r"#\[(?:\w+::)*test\b|@(?:Test|ParameterizedTest|RepeatedTest|TestFactory)\b")


def _test_defs(text: str) -> list[tuple[str, int]]:
    """(name, 1-based line) of every test definition in ``text``."""
    newlines = [m.start() for m in re.finditer("\n", text)]
    found: list[tuple[str, int]] = []
    for pattern in _TEST_DEFS:
        for m in pattern.finditer(text):
            name = re.sub(r"\s+", " ", m.group(1))
            found.append((name, bisect.bisect_left(newlines, m.start(1)) + 1))
    return found


def _deleted_tests(
    patch: FilePatch,
    texts: tuple[str | None, str | None] | None,
    removed: Sequence[HunkLine],
    added: Sequence[HunkLine],
) -> Iterator[Violation]:
    path = patch.path
    if texts is not None and texts[0] is not None and texts[1] is not None:
        before_defs = _test_defs(texts[0])
        remaining = Counter(name for name, _ in _test_defs(texts[1]))
        for name, line in before_defs:
            if remaining[name] > 0:
                remaining[name] -= 1
                continue
            yield Violation(path, line, "tests.deleted_test", f"deletes or disables test `{name}`")
        return
    # Diff only: compare definitions on removed lines with those on added lines.
    removed_text = "\n".join(line.text for line in removed)
    added_text = "\n".join(line.text for line in added)
    remaining = Counter(name for name, _ in _test_defs(added_text))
    line_of = [line.old_line for line in removed]
    named = False
    for name, k in _test_defs(removed_text):
        if remaining[name] > 0:
            remaining[name] -= 1
            continue
        named = True
        yield Violation(path, line_of[k - 1], "tests.deleted_test", f"deletes or disables test `{name}`")
    lost = len(_TEST_MARKERS.findall(removed_text)) - len(_TEST_MARKERS.findall(added_text))
    if lost > 0 and not named:
        first = next(line for line in removed if _TEST_MARKERS.search(line.text))
        yield Violation(
            path,
            first.old_line,
            "tests.deleted_test",
            f"removes {lost} test attribute{'s' if lost != 1 else ''}/annotation{'s' if lost != 1 else ''}",
        )


__all__ = [
    "DEFAULT_DENIED",
    "SyntaxProblem",
    "Violation",
    "applies_gate",
    "gate_summary",
    "is_test_path",
    "language_of",
    "policy_gate",
    "regression_gate",
    "size_gate",
    "syntax_gate",
    "syntax_problems",
    "targets_gate",
]
