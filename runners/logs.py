"""CI-failure analysis: read a GitHub Actions job log and say what failed, where, and whether to repair it.

:func:`analyze_log` is pure: it takes the text of a job log (as downloaded from the Actions API or
the web UI, with timestamps, ANSI colours, ``##[group]``/``##[endgroup]`` folds and ``##[error]``
annotations) and returns a :class:`FailureReport`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from runners.results import (
    RepoPaths,
    detect_framework,
    framework_of_command,
    normalize_path,
    parse_text,
    strip_ansi,
)

FailureClass = Literal["test", "build", "lint", "dependency", "infrastructure", "timeout", "unknown"]
FAILURE_CLASSES: tuple[FailureClass, ...] = (
    "test",
    "build",
    "lint",
    "dependency",
    "infrastructure",
    "timeout",
    "unknown",
)
REPAIRABLE_DEFAULT: frozenset[FailureClass] = frozenset({"test", "build", "lint"})
"""Classes ARCS repairs unless configured otherwise: the code is wrong, not the world around it."""

MAX_ERROR_LINES = 30
MAX_LOCATIONS = 50


@dataclass(frozen=True, slots=True)
class FileRef:
    """A ``path:line[:column]`` reference, path relative to the repository root."""

    path: str
    line: int
    column: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True, slots=True)
class FailedStep:
    """The step of the job that failed, as the log shows it."""

    title: str
    """The fold title after ``Run ``: the first line of a ``run:`` script, or ``owner/action@ref``."""
    command: str
    """The whole ``run:`` script as echoed in the log (equal to ``title`` for a ``uses:`` step)."""
    exit_code: int | None = None
    uses: bool = False
    """True for a ``uses:`` (action) step rather than a ``run:`` script."""
    index: int = 0
    """Position among the job's steps (0-based, set-up steps included)."""


@dataclass(frozen=True, slots=True)
class FailureReport:
    """What :func:`analyze_log` concluded about one failed job."""

    failure_class: FailureClass
    repairable: bool
    reason: str
    """One line: why this class, and why it is (not) repaired."""
    step: FailedStep | None = None
    error_lines: tuple[str, ...] = ()
    test_ids: tuple[str, ...] = ()
    locations: tuple[FileRef, ...] = ()
    framework: str | None = None
    tool: str | None = None
    """The linter / type checker / compiler the failing command ran, when recognised."""
    job: str | None = None
    flaky_suspect: bool = False
    """The log shows signs of flakiness (reruns, resets, timeouts inside tests); triage decides."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """The ``arcs triage --json`` document."""
        return {
            "class": self.failure_class,
            "repairable": self.repairable,
            "reason": self.reason,
            "job": self.job,
            "step": None
            if self.step is None
            else {
                "title": self.step.title,
                "command": self.step.command,
                "exit_code": self.step.exit_code,
                "uses": self.step.uses,
            },
            "framework": self.framework,
            "tool": self.tool,
            "test_ids": list(self.test_ids),
            "locations": [
                {"path": r.path, "line": r.line, "column": r.column, "ref": str(r)} for r in self.locations
            ],
            "error_lines": list(self.error_lines),
            "flaky_suspect": self.flaky_suspect,
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------- log structure

_STAMP = r"\ufeff?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d"
# GitHub writes `2024-03-06T14:00:00.0137007Z `; exports and other runners drop the fraction, the
# zone or the `T` (`2024-03-06T14:00:00 `, `…+00:00 `, `2024-03-06 14:00:00 `): all are prefixes.
_TIMESTAMP = re.compile(rf"^{_STAMP}(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? ?")
_STEP_START = re.compile(r"^##\[group\]Run (?P<title>.+)$")
_POST_START = re.compile(r"^(Post job cleanup\.|Cleaning up orphan processes)$")
_EXIT = re.compile(r"^##\[error\]Process completed with exit code (?P<code>-?\d+)\.?$")
_ERROR_ANNOTATION = re.compile(r"^##\[error\](?P<msg>.*)$")
_JOB_NAME = re.compile(r"^Complete job name: (?P<name>.+)$")


_GH_CLI_PREFIX = re.compile(rf"^[^\t\n]+\t[^\t\n]+\t(?={_STAMP})")


def clean_log(text: str) -> list[str]:
    """The log's lines without timestamps, ANSI escapes or carriage-return progress noise.

    Also accepts ``gh run view --log`` output, whose lines start with ``<job>\\t<step>\\t``.
    """
    raw_lines = strip_ansi(text).split("\n")
    nonblank = [ln for ln in raw_lines if ln.strip()]
    gh_cli = bool(nonblank) and sum(1 for ln in nonblank if _GH_CLI_PREFIX.match(ln)) * 2 > len(nonblank)
    lines: list[str] = []
    for raw in raw_lines:
        if gh_cli:
            raw = _GH_CLI_PREFIX.sub("", raw)
        lines.append(_TIMESTAMP.sub("", raw).rstrip())
    return lines


@dataclass
class _Step:
    title: str
    index: int
    header: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    uses: bool = False
    exit_code: int | None = None
    errors: list[str] = field(default_factory=list)
    is_post: bool = False

    @property
    def script(self) -> str:
        if self.uses:
            return self.title
        lines: list[str] = []
        for line in self.header:
            if line.startswith(("shell: ", "env:", "with:")):
                break
            lines.append(line)
        return "\n".join(lines).strip() or self.title


def split_steps(lines: Sequence[str]) -> list[_Step]:
    """Cut a cleaned job log into steps at each ``##[group]Run`` fold (and at post-job cleanup)."""
    steps: list[_Step] = [_Step(title="Set up job", index=0)]
    in_header = False
    for line in lines:
        m = _STEP_START.match(line)
        if m:
            steps.append(_Step(title=m["title"].strip(), index=len(steps)))
            in_header = True
            continue
        if _POST_START.match(line) and not steps[-1].is_post:
            steps.append(_Step(title=line, index=len(steps), is_post=True))
            in_header = False
            continue
        step = steps[-1]
        if in_header:
            if line == "##[endgroup]":
                in_header = False
                step.uses = (bool(step.header) and step.header[0] == "with:") or _looks_like_action(
                    step.title
                )
                continue
            step.header.append(line)
            continue
        if m2 := _EXIT.match(line):
            step.exit_code = int(m2["code"])
            continue
        if m3 := _ERROR_ANNOTATION.match(line):
            step.errors.append(m3["msg"].strip())
        step.body.append(line)
    return steps


def _looks_like_action(title: str) -> bool:
    return bool(re.fullmatch(r"[\w.-]+/[\w./-]+@[\w.\-/]+|\./[\w./-]+|docker://\S+", title))


# --------------------------------------------------------------------------- signatures

_INFRA_HARD: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"lost communication with the server", re.I),
        "the runner lost communication with the server",
    ),
    (re.compile(r"runner has received a shutdown signal", re.I), "the runner received a shutdown signal"),
    (
        re.compile(r"No space left on device|ENOSPC|\[Errno 28\]|disk quota exceeded", re.I),
        "the runner's disk is full",
    ),
    (re.compile(r"The hosted runner encountered an error", re.I), "the hosted runner failed"),
    (
        re.compile(r"Unable to (?:get|acquire) (?:a )?runner|No runner (?:is )?available", re.I),
        "no runner was available",
    ),
    (
        re.compile(r"System\.IO\.IOException|Runner\.Worker\.|GitHub\.Runner", re.I),
        "the runner process failed",
    ),
    (
        re.compile(r"(?:Killed|exit code 137).*(?:OOM|out of memory)|Out of memory: Killed process", re.I),
        "the runner ran out of memory",
    ),
)
_TIMEOUT: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"has exceeded the maximum execution time of (\d+) minutes", re.I),
        "the job exceeded its maximum execution time",
    ),
    (re.compile(r"has timed out after (\d+) minutes", re.I), "a step exceeded its timeout-minutes"),
    (
        re.compile(r"The job has exceeded the maximum execution time", re.I),
        "the job exceeded its maximum execution time",
    ),
)
_CANCELLED = re.compile(r"^##\[error\]The operation was canceled\.?$|^Error: The operation was canceled\.?$")
_DEPENDENCY: tuple[re.Pattern[str], ...] = (
    re.compile(
        r"ResolutionImpossible|Could not find a version that satisfies the requirement|No matching distribution found"
    ),
    re.compile(
        r"conflicting dependencies|version solving failed|SolverProblemError|Because .* depends on .* version solving failed"
    ),
    re.compile(
        r"npm (?:ERR!|error) code (?:ETARGET|ERESOLVE|E404)|notarget No matching version|ERESOLVE unable to resolve"
    ),
    re.compile(
        r"Couldn't find any versions for|error Couldn't find package|ERR_PNPM_NO_MATCHING_VERSION|ERR_PNPM_PEER_DEP"
    ),
    re.compile(
        r"missing go\.sum entry|go: .*: (?:unknown revision|invalid version|reading .*: 404|reading .*: 410 Gone)"
    ),
    re.compile(r"verifying .*: checksum mismatch|go: updates to go\.mod needed"),
    re.compile(
        r"failed to select a version for|no matching package named .* found|failed to load source for dependency"
    ),
    re.compile(
        r"Could not resolve dependencies for project|Could not find artifact|Could not resolve all (?:files|dependencies)"
    ),
    re.compile(
        r"the lock file (?:is not up to date|needs to be updated)|lockfile.*(?:out of date|needs to be updated)|--locked was passed"
    ),
)
_NETWORK = re.compile(
    r"ETIMEDOUT|ECONNRESET|ECONNREFUSED|EAI_AGAIN|ENOTFOUND|getaddrinfo|Could not resolve host|"
    r"Temporary failure in name resolution|Connection timed out|Read timed out|ReadTimeoutError|"
    r"Failed to establish a new connection|TLS handshake timeout|i/o timeout|502 Bad Gateway|"
    r"503 Service Unavailable|504 Gateway|Connection reset by peer|[Nn]etwork is unreachable|"
    r"Could not transfer artifact|network request to .* failed|unexpected EOF while reading|"
    r"rate limit exceeded|API rate limit",
)

_LINT_TOOLS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ruff", re.compile(r"\bruff\b")),
    ("flake8", re.compile(r"\bflake8\b")),
    ("pylint", re.compile(r"\bpylint\b")),
    ("black", re.compile(r"\bblack\b")),
    ("isort", re.compile(r"\bisort\b")),
    ("eslint", re.compile(r"\beslint\b")),
    ("prettier", re.compile(r"\bprettier\b")),
    ("stylelint", re.compile(r"\bstylelint\b")),
    ("biome", re.compile(r"\bbiome\b")),
    ("golangci-lint", re.compile(r"golangci")),
    ("staticcheck", re.compile(r"\bstaticcheck\b")),
    ("go vet", re.compile(r"\bgo vet\b")),
    ("gofmt", re.compile(r"\bgofmt\b|\bgoimports\b")),
    ("clippy", re.compile(r"\bclippy\b")),
    ("rustfmt", re.compile(r"\bcargo fmt\b|\brustfmt\b")),
    ("checkstyle", re.compile(r"checkstyle")),
    ("spotless", re.compile(r"spotless")),
    ("ktlint", re.compile(r"\bktlint\b")),
    ("rubocop", re.compile(r"\brubocop\b")),
    ("shellcheck", re.compile(r"\bshellcheck\b")),
    ("pre-commit", re.compile(r"\bpre-commit\b")),
    ("lint", re.compile(r"\b(?:npm|yarn|pnpm)(?: run)? lint\b|\bmake lint\b")),
)
_TYPE_TOOLS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("mypy", re.compile(r"\bmypy\b")),
    ("pyright", re.compile(r"\bpyright\b|\bbasedpyright\b")),
    ("tsc", re.compile(r"\btsc\b|\bvue-tsc\b|\btypecheck\b|\btype-check\b")),
)
_BUILD_SIGNATURES: tuple[re.Pattern[str], ...] = (
    re.compile(r"^error\[E\d{4}\]:|^error: could not compile", re.M),
    re.compile(r"^\S+\.go:\d+:\d+: ", re.M),
    re.compile(r"\[build failed\]|\[setup failed\]"),
    re.compile(r"error TS\d+:"),
    re.compile(r"COMPILATION ERROR|Compilation failure|maven-compiler-plugin.*(?:compile|testCompile)"),
    re.compile(r"^\[ERROR\] \S+\.(?:java|kt):\[\d+,\d+\]", re.M),
    re.compile(r"^\S+\.(?:java|kt|scala):\d+: error: ", re.M),
    re.compile(r"\b(?:SyntaxError|IndentationError|TabError)\b"),
    re.compile(
        r"ImportError while importing test module|^E\s+(?:ModuleNotFoundError|ImportError)\b|ERROR collecting ",
        re.M,
    ),
    re.compile(r"^\S+\.py:\d+: error: ", re.M),
    re.compile(r"Module not found: Error: Can't resolve|Cannot find module '|ERR_MODULE_NOT_FOUND"),
    re.compile(r"Test suite failed to run"),
    re.compile(r"^\S+\.(?:c|cc|cpp|h|hpp):\d+:\d+: (?:fatal )?error: ", re.M),
    re.compile(r"BUILD FAILED|Build failed with an exception|> Compilation failed"),
)
_TEST_SIGNATURES: tuple[re.Pattern[str], ...] = (
    re.compile(r"^=+ .*\b\d+ (?:failed|error)", re.M),
    re.compile(r"^(?:FAILED|ERROR) \S+::", re.M),
    re.compile(r"^FAILED \((?:failures|errors)=", re.M),
    re.compile(r"^--- FAIL: ", re.M),
    re.compile(r"^test result: FAILED", re.M),
    re.compile(r"^Tests:\s+\d+ failed", re.M),
    re.compile(r"^\s*Tests?\s+\d+ failed", re.M),
    re.compile(
        r"There are test failures|Tests run: \d+, Failures: [1-9]|Tests run: \d+, Failures: \d+, Errors: [1-9]"
    ),
    re.compile(r"\d+ tests? completed, \d+ failed"),
)
_LINT_SIGNATURES: tuple[re.Pattern[str], ...] = (
    re.compile(r"^Found \d+ errors?\.", re.M),
    re.compile(r"^\S+:\d+:\d+: [A-Z]{1,4}\d{2,4}\b", re.M),
    re.compile(r"✖ \d+ problems? \(\d+ errors?"),
    re.compile(
        r"\((?:errcheck|govet|staticcheck|unused|ineffassign|gosimple|revive|gofmt|goimports|typecheck)\)$",
        re.M,
    ),
    re.compile(r"would reformat |Oh no! 💥|files? would be reformatted"),
    re.compile(r"Code style issues found|Imports are incorrectly sorted"),
    re.compile(r"^Diff in .* at line \d+:", re.M),
)
_FLAKY_HINTS = re.compile(
    r"\bflaky\b|\bretry(?:ing)? \d|Connection reset|ECONNRESET|deadline exceeded|"
    r"address already in use|Timeout >|timed out after|TimeoutError|socket hang up",
    re.I,
)
# pytest-rerunfailures: "RERUN" in verbose mode, "2 rerun" in the summary (case matters: cargo says "to rerun pass").
_RERUNS = re.compile(r"\bRERUN\b|\b\d+ rerun\b")

_ERROR_LINE = re.compile(
    r"^E\s{2,}\S"
    r"|^(?:FAILED|ERROR) \S"
    r"|^\s*--- FAIL: "
    r"|^(?:error|ERROR)(?:\[[\w-]+\])?: "
    r"|^(?:npm ERR!|npm error) (?!\s*$)(?!A complete log)(?!network\s*$)"
    r"|error TS\d+:"
    r"|^\[ERROR\] (?!\s*$)(?!-> \[Help)(?!To see the full)(?!Re-run Maven)(?!For more information)(?!\[Help \d\])(?!Please refer to)"
    r"|panicked at"
    r"|^\s+● (?!Console)"
    r"|^\s*(?:FAIL|FAILED)\s+\S"
    r"|^\S+\.go:\d+:\d+: "
    r"|^\S+:\d+(?::\d+)?: error: "
    r"|^\S+:\d+:\d+: [A-Z]{1,4}\d{2,4}\b"
    r"|^\s+\d+:\d+\s+(?:error|warning)\s"
    r"|^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)(?::\s|$)"
    r"|^Error: "
    r"|^\S+\(\d+,\d+\): error "
    r"|^thread '.*' panicked"
    r"|\((?:errcheck|govet|staticcheck|unused|ineffassign)\)$"
)
_ERROR_NOISE = re.compile(r"^Process completed with exit code|^\s*$")


# --------------------------------------------------------------------------- file references

_SOURCE_EXT = (
    r"py|pyi|pyx|js|jsx|mjs|cjs|ts|tsx|mts|cts|vue|svelte|go|rs|java|kt|kts|scala|groovy|c|h|cc|cpp|cxx|hpp|"
    r"cs|rb|php|swift|m|mm|toml|ya?ml|json|cfg|ini|xml|gradle|sh|proto|sql|html|css|scss"
)
_REF_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)'),
    re.compile(r"-->\s*(?P<path>[^\s:]+):(?P<line>\d+):(?P<col>\d+)"),
    re.compile(rf"(?P<path>[\w./\\@+-]+\.(?:{_SOURCE_EXT}))\((?P<line>\d+),(?P<col>\d+)\)"),
    re.compile(rf"(?P<path>[\w./\\@+-]+\.(?:{_SOURCE_EXT})):\[(?P<line>\d+),(?P<col>\d+)\]"),
    re.compile(
        rf"(?:^|[\s(\"'`=,\[])(?P<path>(?:[A-Za-z]:)?[\w./\\@+-]*\.(?:{_SOURCE_EXT})):(?P<line>\d+)(?::(?P<col>\d+))?(?=$|[\s:),'\"`\]])"
    ),
)
_JAVA_REF = re.compile(
    r"at (?:[\w.\-]+/)?(?P<func>[\w$.<>]+)\((?P<file>[\w$-]+\.(?:java|kt|scala|groovy)):(?P<line>\d+)\)"
)
_JAVA_THIRD_PARTY = re.compile(
    r"^(?:java|javax|jdk|sun|com\.sun|org\.junit|junit|org\.opentest4j|org\.apache\.maven|org\.assertj|org\.hamcrest|org\.mockito|org\.gradle|kotlin|scala)\."
)
_ESLINT_FILE = re.compile(rf"^(?P<path>(?:/|[A-Za-z]:\\|\.{{0,2}}/?)?[\w./\\@+-]+\.(?:{_SOURCE_EXT}))$")
_ESLINT_ROW = re.compile(r"^\s+(?P<line>\d+):(?P<col>\d+)\s+(?:error|warning)\s")


def extract_locations(lines: Iterable[str], *, repo_files: Collection[str] | None = None) -> list[FileRef]:
    """Every ``path:line`` reference in ``lines`` that points into the repository, in order of appearance."""
    refs: list[FileRef] = []
    seen: set[tuple[str, int]] = set()
    index = RepoPaths.of(repo_files) if repo_files is not None else None

    def add(path: str, line: int, col: int | None) -> None:
        norm = normalize_path(path, repo_files=index)
        if norm is None or norm.startswith("<") or (norm, line) in seen:
            return
        seen.add((norm, line))
        refs.append(FileRef(norm, line, col))

    eslint_file: str | None = None
    for line in lines:
        if line.startswith("##[") and not line.startswith("##[error]") and not line.startswith("##[warning]"):
            continue
        text = re.sub(r"^##\[(?:error|warning)\]", "", line)
        if m := _ESLINT_FILE.match(text.strip()):
            eslint_file = m["path"]
            continue
        if eslint_file and (m := _ESLINT_ROW.match(text)):
            add(eslint_file, int(m["line"]), int(m["col"]))
            continue
        if text.strip():
            eslint_file = None if not text.startswith(" ") else eslint_file
        if m := _JAVA_REF.search(text):
            func = m["func"]
            if _JAVA_THIRD_PARTY.match(func):
                continue
            pkg = [p for p in func.split(".")[:-2] if p and p[0].islower()]
            add("/".join([*pkg, m["file"]]), int(m["line"]), None)
            continue
        for pattern in _REF_PATTERNS:
            for m in pattern.finditer(text):
                col = m.groupdict().get("col")
                add(m["path"], int(m["line"]), int(col) if col else None)
        if len(refs) >= MAX_LOCATIONS:
            break
    return refs[:MAX_LOCATIONS]


# --------------------------------------------------------------------------- analysis


def _tool_of(command: str) -> tuple[str | None, str | None]:
    """(tool, kind) where kind is "lint" or "type"."""
    for name, pattern in _TYPE_TOOLS:
        if pattern.search(command):
            return name, "type"
    for name, pattern in _LINT_TOOLS:
        if pattern.search(command):
            return name, "lint"
    return None, None


def _first_match(patterns: Iterable[re.Pattern[str]], text: str) -> re.Match[str] | None:
    for pattern in patterns:
        if m := pattern.search(text):
            return m
    return None


def _error_lines(lines: Sequence[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    follow = False
    eslint_file: str | None = None
    for line in lines:
        if follow and line.strip():
            # Rust >= 1.73 prints the panic message on the line after "panicked at file:line:col:".
            follow = False
            if line.strip() not in seen:
                seen.add(line.strip())
                out.append(line.strip()[:300])
            continue
        follow = bool(re.search(r"panicked at \S+:\d+:\d+:$", line))
        if m := _ESLINT_FILE.match(line.strip()):
            eslint_file = normalize_path(m["path"]) or m["path"]
            continue
        if eslint_file and _ESLINT_ROW.match(line):
            # eslint's "stylish" rows carry no file name; prefix the file header they belong to.
            row = f"{eslint_file}:{' '.join(line.split())}"
            if row not in seen:
                seen.add(row)
                out.append(row[:300])
            continue
        text = line
        if text.startswith("##[error]"):
            text = text.removeprefix("##[error]")
        elif text.startswith("##[") or not _ERROR_LINE.search(text):
            continue
        text = text.strip()
        if _ERROR_NOISE.search(text) or text in seen:
            continue
        seen.add(text)
        out.append(text[:300])
        if len(out) >= MAX_ERROR_LINES:
            break
    return out


def analyze_log(
    text: str,
    *,
    repo_files: Collection[str] | None = None,
    repairable: Collection[FailureClass] = REPAIRABLE_DEFAULT,
) -> FailureReport:
    """Analyze a GitHub Actions job log.

    Finds the failing step (the ``##[group]Run`` fold holding ``##[error]Process completed with
    exit code N``, else the last step with an ``##[error]`` annotation), its command, the error
    lines, the failing test ids, the repository ``path:line`` references (runner paths made
    relative; with ``repo_files`` only files of the repository are kept) and the failure class.
    """
    lines = clean_log(text)
    steps = split_steps(lines)
    job = next((m["name"] for line in lines if (m := _JOB_NAME.match(line))), None)
    failing = _failing_step(steps)
    focus_lines = failing.body if failing is not None else lines
    focus = "\n".join(focus_lines)
    whole = "\n".join(lines)
    step = (
        FailedStep(
            title=failing.title,
            command=failing.script,
            exit_code=failing.exit_code,
            uses=failing.uses,
            index=failing.index,
        )
        if failing is not None
        else None
    )
    command = step.command if step is not None else ""
    framework: str | None = framework_of_command(command) if command else None
    tool, tool_kind = _tool_of(command) if command else (None, None)
    if tool == "lint":
        # "npm run lint": the script echo ("> eslint src") names the real tool.
        echoed = "\n".join(line[2:] for line in focus_lines[:40] if line.startswith("> "))
        specific, kind = _tool_of(echoed)
        if specific is not None and kind == "lint":
            tool = specific
    if framework is None and tool is None:
        detected = detect_framework(focus)
        framework = detected[0] if detected else None
    error_lines = tuple(_error_lines(focus_lines))
    locations = tuple(extract_locations(focus_lines, repo_files=repo_files))
    flaky = bool(_FLAKY_HINTS.search(focus) or _RERUNS.search(focus))

    def report(
        cls: FailureClass, reason: str, *, test_ids: Sequence[str] = (), notes: Sequence[str] = ()
    ) -> FailureReport:
        is_repairable = cls in repairable
        if not is_repairable and cls in REPAIRABLE_DEFAULT:
            reason += " (this class is not enabled for repair)"
        return FailureReport(
            failure_class=cls,
            repairable=is_repairable,
            reason=reason,
            step=step,
            error_lines=error_lines,
            test_ids=tuple(test_ids),
            locations=locations if cls in ("test", "build", "lint", "unknown") else (),
            framework=framework if cls in ("test", "build") else None,
            tool=tool,
            job=job,
            flaky_suspect=flaky and cls == "test",
            notes=tuple(notes),
        )

    where = f"`{_one_line(command)}`" if command else "the job"

    # 1. The runner itself failed: nothing in the code to fix.
    for pattern, why in _INFRA_HARD:
        if pattern.search(whole):
            return report("infrastructure", f"{why}; re-run the job, this is not a code failure")
    # 2. Time limits.
    for pattern, why in _TIMEOUT:
        if pattern.search(whole):
            return report("timeout", f"{why}; not repaired by default (a hang or a slow suite needs a human)")
    if failing is None or (
        failing.exit_code is None and all(_CANCELLED.match("##[error]" + e) for e in failing.errors)
    ):
        if any(_CANCELLED.match(line) for line in lines):
            return report("unknown", "the run was cancelled before it finished (no failure to repair)")
        if failing is None:
            return report("unknown", "no failing step found in the log")

    parsed = parse_text(focus, framework) if framework is not None or detect_framework(focus) else None
    test_ids = [r.id for r in parsed.results if r.outcome in ("failed", "error")] if parsed else []
    collection_errors = list(parsed.errors) if parsed else []
    network = _NETWORK.search(focus)
    dep = _first_match(_DEPENDENCY, focus)

    # 3. Dependency resolution (or a network failure while fetching dependencies).
    if dep is not None and not test_ids:
        if network is not None:
            return report(
                "infrastructure",
                f"network failure while fetching dependencies ({network.group(0)}); re-run the job",
            )
        return report(
            "dependency",
            f"dependency resolution failed in {where} ({dep.group(0)}); "
            "ARCS does not change dependency pins by default",
        )
    # 4. Tests ran and failed.
    if test_ids:
        n = len(test_ids)
        return report(
            "test",
            f"{n} failing test{'s' if n != 1 else ''} in {where}",
            test_ids=test_ids,
        )
    # 5. The command is a linter / type checker.
    if tool_kind == "lint":
        return report("lint", f"{tool} reported problems in {where}")
    if tool_kind == "type":
        return report("build", f"type check: {tool} reported errors in {where}")
    build = _first_match(_BUILD_SIGNATURES, focus)
    # 6. Compile / type / import / syntax errors.
    if build is not None or collection_errors:
        what = build.group(0).strip() if build is not None else collection_errors[0].id
        return report("build", f"compile/import error in {where} ({_one_line(what)[:120]})")
    if _first_match(_TEST_SIGNATURES, focus):
        return report("test", f"tests failed in {where} (no per-test ids could be read)")
    lint = _first_match(_LINT_SIGNATURES, focus)
    if lint is not None:
        return report("lint", f"lint problems reported in {where}")
    if network is not None:
        return report(
            "infrastructure",
            f"network failure in {where} ({network.group(0)}); re-run the job",
        )
    exit_note = f" exited with code {failing.exit_code}" if failing.exit_code is not None else " failed"
    return report("unknown", f"could not classify the failure: {where}{exit_note}")


def _failing_step(steps: Sequence[_Step]) -> _Step | None:
    with_exit = [s for s in steps if s.exit_code is not None and s.exit_code != 0 and not s.is_post]
    if with_exit:
        return with_exit[0]
    with_errors = [s for s in steps if s.errors and not s.is_post and s.index > 0]
    if with_errors:
        # Prefer a step whose errors are not only the generic cancellation annotation.
        real = [s for s in with_errors if any(not _CANCELLED.match("##[error]" + e) for e in s.errors)]
        return (real or with_errors)[0]
    return None


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first + (" …" if "\n" in text.strip() else "")
