"""Which command runs a repository's tests, and how to get per-test results out of it.

Resolution order (:func:`resolve_test_command`):

1. ``explicit`` (the ``--cmd`` flag), then ``test:`` in ``.arcs.yml``;
2. the step that failed in CI: its script as the job log shows it, and its
   ``working-directory`` from ``.github/workflows/*.yml``;
3. conventions, in this order: pytest, ``npm test``, ``go test ./...``, ``cargo test``,
   ``mvn -q test`` (and gradle).

The resolved command is then *adapted* for machine-readable results (:attr:`ResolvedCommand.shell`)
by its row of :mod:`runners.frameworks`: the row says how to ask for the report (``adapt``), which
report that gives (``report``: a JUnit file, ``go test -json`` events or the text), and what the
report needs (an npm package, an exact npm test script, no yarn/pnpm in front, files to gather);
when a need is not met the note says so and the text is read (no framework is named for that here).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from runners import frameworks, npm_scripts, wsfs
from runners.config import RepoConfig
from runners.errors import UsageError
from runners.frameworks.row import Report
from runners.frameworks.shell import NPM_TEST as _NPM_TEST
from runners.frameworks.shell import last_segment as _last_segment
from runners.frameworks.shell import plain as _plain
from runners.frameworks.shell import split_last as _split_last
from runners.logs import FailedStep
from runners.results import Framework, framework_of_command
from runners.shellenv import activate_prefix, export_pythonpath, keep_pythonpath, setup_prefix
from runners.toolchains import source_folders

Source = Literal["flag", "config", "workflow", "convention"]

_CONFIG_LIMIT = 1 << 20
"""How much of a repository's config file (``package.json``, a workflow) the host reads."""

JUNIT_DIR = ".arcs"
JUNIT_PATH = f"{JUNIT_DIR}/junit.xml"
"""Workspace-relative path of the JUnit file an adapted command writes (the runner collects it)."""

BASE_ENV: Mapping[str, str] = {
    # Test runners switch to non-interactive, non-watch behaviour under CI.
    "CI": "true",
    "PYTHONDONTWRITEBYTECODE": "1",
    "CARGO_TERM_COLOR": "never",
    "NO_COLOR": "1",
    # A Python process sent SIGABRT at the deadline prints every thread's stack (runners.limits).
    "PYTHONFAULTHANDLER": "1",
}


@dataclass(frozen=True, slots=True)
class ResolvedCommand:
    """A test command, where it came from, and how ARCS runs it."""

    command: str
    """The command as the user or CI wrote it (``python -m pytest -q``)."""
    source: Source
    framework: Framework | None = None
    workdir: str = ""
    """Repository-relative folder the command runs in (``""``: the root)."""
    junit: bool = True
    """Whether :attr:`shell` asks the framework for a machine-readable report."""
    setup: str | None = None
    """``.arcs.yml`` ``setup:``, run before the tests in the same workspace."""
    env: Mapping[str, str] = field(default_factory=lambda: dict(BASE_ENV))
    note: str = ""
    """Why something was not done (e.g. "jest-junit is not installed: reading jest's text output")."""
    pythonpath: tuple[str, ...] = ()
    """Workspace-relative folders ARCS puts in front of ``PYTHONPATH`` (a ``src`` layout, its own
    plugins); kept through the user's own ``PYTHONPATH=`` (:func:`runners.shellenv.keep_pythonpath`)."""

    @property
    def report(self) -> Report:
        """Where per-test results come from when :attr:`shell` runs (the row's ``report``)."""
        row = self._row
        if not self.junit or row is None or row.report == "text":
            return "text"
        unadapted = row.report_unadapted
        if self._adapted() != self.command or (
            unadapted is not None and unadapted.search(_last_segment(self.command))
        ):
            return row.report
        return "text"

    @property
    def _row(self) -> frameworks.Row | None:
        return frameworks.BY_NAME.get(self.framework) if self.framework else None

    @property
    def junit_path(self) -> str | None:
        """The workspace-relative file to collect, when :attr:`report` is ``junit``."""
        return JUNIT_PATH if self.report == "junit" else None

    @property
    def collect(self) -> tuple[str, ...]:
        """What to pass as ``collect=`` to :meth:`runners.base.Runner.run`."""
        return (JUNIT_PATH,) if self.report == "junit" else ()

    @property
    def setup_shell(self) -> str | None:
        """The ``setup:`` step as run: in a fresh environment of its own inside the workspace
        (:func:`runners.shellenv.setup_prefix`; ARCS's is read-only), then the user's command."""
        if not self.setup:
            return None
        return setup_prefix() + self.setup

    def with_pythonpath(self, folders: Sequence[str]) -> ResolvedCommand:
        """The same command with ``folders`` (workspace-relative) also on ``PYTHONPATH``."""
        kept = tuple(dict.fromkeys((*self.pythonpath, *folders)))
        return self if kept == self.pythonpath else replace(self, pythonpath=kept)

    @property
    def shell(self) -> str:
        """The full POSIX ``sh`` command line run in the workspace root."""
        prefix = activate_prefix() if self.setup else ""
        return prefix + export_pythonpath(self.pythonpath) + self._shell_body()

    def _shell_body(self) -> str:
        adapted = keep_pythonpath(self._adapted())
        body = adapted
        if "\n" in body.strip():
            body = "set -e\n" + body  # a multi-line CI script stops at its first failure, as under bash -e
        if self.workdir:
            body = f"cd {shlex.quote(self.workdir)} && {body}"
        row = self._row
        if self.report == "junit" and row is not None:
            prefix = f'ARCS_OUT="$PWD/{JUNIT_DIR}"; mkdir -p "$ARCS_OUT"; ' + row.report_exports
            if row.report_files:
                # Reports are per class; concatenate them (the parser splits documents) and keep the exit status.
                return (
                    f"{prefix}( {body} ); arcs_status=$?; "
                    f"find . -path '{row.report_files}' -exec cat {{}} + > \"$ARCS_OUT/junit.xml\" 2>/dev/null; "
                    "exit $arcs_status"
                )
            return prefix + body
        return body

    def _adapted(self) -> str:
        if not self.junit or self.framework is None:
            return self.command
        return _adapt(self.command, self.framework)

    def selecting(self, test_ids: Sequence[str]) -> ResolvedCommand | None:
        """The same command narrowed to ``test_ids``, or None when the framework cannot select tests."""
        if not test_ids or self.framework is None:
            return None
        narrowed = _select(self.command, self.framework, list(test_ids))
        if narrowed is None:
            return None
        return replace(self, command=narrowed)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "command": self.command,
            "source": self.source,
            "framework": self.framework,
            "workdir": self.workdir,
            "report": self.report,
            "shell": self.shell,
            "note": self.note,
            "pythonpath": list(self.pythonpath),
        }


# --------------------------------------------------------------------------- adaptation


def _adapt(command: str, framework: Framework) -> str:
    """``command`` asking ``framework`` for its machine-readable report (the row's ``adapt``)."""
    last = _last_segment(command)
    row = frameworks.BY_NAME.get(framework)
    if not _plain(last) or row is None or row.adapt is None:
        return command
    return row.adapt(command, last)


# --------------------------------------------------------------------------- selection


def _select(command: str, framework: Framework, ids: list[str]) -> str | None:
    """``command`` narrowed to ``ids`` by the framework's row, or None when it cannot select."""
    row = frameworks.BY_NAME.get(framework)
    if row is None or row.select is None:
        return None
    head, last = _split_last(command)
    if not _plain(last):
        return None
    try:
        tokens = shlex.split(last)
    except ValueError:
        return None
    return row.select(head, last, tokens, ids)


# --------------------------------------------------------------------------- resolution


def resolve_test_command(
    repo: Path,
    *,
    explicit: str | None = None,
    config: RepoConfig | None = None,
    failed_step: FailedStep | str | None = None,
    toolchains: Sequence[Path] = (),
) -> ResolvedCommand:
    """Pick the test command for ``repo`` (see the module docstring for the order).

    ``toolchains`` are the folders the sandbox will expose (``--toolchain``): the note names the
    ``node`` they provide. Raises :class:`runners.errors.UsageError` when nothing applies.
    """
    repo = Path(repo)
    config = config or RepoConfig()
    setup = config.setup
    if explicit is not None and explicit.strip():
        return _resolved(repo, explicit.strip(), "flag", setup=setup, toolchains=toolchains)
    if config.test:
        return _resolved(repo, config.test, "config", setup=setup, toolchains=toolchains)
    if failed_step is not None:
        found = _from_workflow(repo, failed_step)
        if found is not None:
            command, workdir = found
            return _resolved(repo, command, "workflow", workdir=workdir, setup=setup, toolchains=toolchains)
    convention = _from_conventions(repo)
    if convention is not None:
        return _resolved(repo, convention, "convention", setup=setup, toolchains=toolchains)
    raise UsageError(
        f"no test command found for {repo}: pass --cmd, set `test:` in .arcs.yml, "
        "or add a recognised project file (pytest config, package.json test script, go.mod, Cargo.toml, pom.xml)"
    )


def _resolved(
    repo: Path,
    command: str,
    source: Source,
    *,
    workdir: str = "",
    setup: str | None = None,
    toolchains: Sequence[Path] = (),
) -> ResolvedCommand:
    root = repo / workdir if workdir else repo
    framework = framework_of_command(command) or _framework_of_script(root, command)
    junit = True
    note = ""
    if source == "convention" and re.match(r"^npm\s+test$", command):
        command, note = _without_hooks(root, command)
    elif _NPM_TEST.match(_last_segment(command)) and npm_scripts.IGNORE_HOOKS not in command:
        note = npm_scripts.describe_hooks(_package_json(root) or {})
        if note:
            note += f": a failure before any test ran may be theirs (`npm test {npm_scripts.IGNORE_HOOKS}` skips them)"
    row = frameworks.BY_NAME.get(framework) if framework else None
    last = _last_segment(command)
    npm_script = row.report_npm_script if row is not None else ""
    if npm_script and _NPM_TEST.match(last) and " ".join(_test_script(root).split()) != npm_script:
        junit = False
        note = _join(note, f"the npm test script is not exactly `{npm_script}`: reading its text output")
    if row is not None and row.report_package and not _has_node_package(root, row.report_package):
        junit = False
        note = _join(note, f"{row.report_package} is not installed: reading {row.name}'s text output")
    if row is not None and not row.report_via_yarn and re.match(r"^(?:yarn|pnpm)\s", last):
        junit = False
        note = _join(note, "report flags are not passed through yarn/pnpm scripts: reading the text output")
    if framework in frameworks.on_runtime("node") or re.match(
        r"^(?:npm|npx|yarn|pnpm|node)\s", _last_segment(command)
    ):
        note = _join(note, npm_scripts.node_line(toolchains))
    env = dict(BASE_ENV)
    if row is not None and junit:
        env.update(row.report_env)
    # A src layout's package is imported from the workspace's copy (never from an install that
    # points at the user's checkout); only for commands that may run Python tests.
    pythonpath: tuple[str, ...] = ()
    if framework is None or framework in frameworks.on_runtime("python"):
        folders, _ = source_folders(root)
        prefix = f"{workdir}/" if workdir else ""
        pythonpath = tuple(prefix + f for f in folders)
    return ResolvedCommand(
        command=command,
        source=source,
        framework=framework,
        workdir=workdir,
        junit=junit,
        setup=setup,
        env=env,
        note=note,
        pythonpath=pythonpath,
    )


def _join(note: str, more: str) -> str:
    return f"{note}; {more}" if note and more else note or more


def _without_hooks(root: Path, command: str) -> tuple[str, str]:
    """The conventional ``npm test`` without npm's pre/post hooks when it has any, and the note
    saying which hooks are left out and what the test script runs."""
    pkg = _package_json(root) or {}
    described = npm_scripts.describe_hooks(pkg)
    if not described:
        return command, ""
    runs = npm_scripts.runner_command(pkg)
    command = f"{command} {npm_scripts.IGNORE_HOOKS}"
    return command, f"{described}; reproducing with `{command}` (the test script alone: `{runs}`)"


def _package_json(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(wsfs.read_text(root, "package.json", limit=_CONFIG_LIMIT, whole=True))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _has_node_package(root: Path, name: str) -> bool:
    if (root / "node_modules" / name).is_dir():
        return True
    pkg = _package_json(root) or {}
    return any(isinstance(pkg.get(k), dict) and name in pkg[k] for k in ("dependencies", "devDependencies"))


def _test_script(root: Path) -> str:
    """package.json's ``scripts.test`` (``""`` when there is none)."""
    pkg = _package_json(root) or {}
    scripts = pkg.get("scripts") if isinstance(pkg.get("scripts"), dict) else {}
    return str((scripts or {}).get("test", ""))


def _framework_of_script(root: Path, command: str) -> Framework | None:
    """``npm test`` / ``yarn test``: the framework named by package.json's test script or dependencies."""
    if not re.search(r"\b(?:npm|yarn|pnpm)\b.*\btest\b", command):
        return None
    script = npm_scripts.runner_command(_package_json(root) or {}) or _test_script(root)
    named = framework_of_command(script)
    if named is not None:
        return named
    pkg = _package_json(root) or {}
    deps = {
        str(name)
        for key in ("dependencies", "devDependencies")
        if isinstance(pkg.get(key), dict)
        for name in pkg[key]
    }
    found = frameworks.of_packages(deps)
    if found is not None:
        return found
    try:
        installed = set(wsfs.listdir(root, "node_modules"))
    except OSError:
        return None
    return frameworks.of_packages(installed)


def _from_conventions(repo: Path) -> str | None:
    if _looks_like_pytest(repo):
        return "python -m pytest"
    pkg = _package_json(repo)
    if pkg is not None:
        scripts = pkg.get("scripts") if isinstance(pkg.get("scripts"), dict) else {}
        test = str((scripts or {}).get("test", ""))
        if test and "no test specified" not in test:
            if (repo / "pnpm-lock.yaml").is_file():
                return "pnpm test"
            if (repo / "yarn.lock").is_file():
                return "yarn test"
            return "npm test"
    if (repo / "go.mod").is_file():
        return "go test ./..."
    if (repo / "Cargo.toml").is_file():
        return "cargo test"
    if (repo / "pom.xml").is_file():
        return "./mvnw -q test" if (repo / "mvnw").is_file() else "mvn -q test"
    if (repo / "build.gradle").is_file() or (repo / "build.gradle.kts").is_file():
        return "./gradlew test" if (repo / "gradlew").is_file() else "gradle test"
    return None


_SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "vendor", "target", "build", "dist", "__pycache__", ".tox"}
)


def _looks_like_pytest(repo: Path) -> bool:
    if (repo / "pytest.ini").is_file() or (repo / "conftest.py").is_file():
        return True
    for name, marker in (
        ("pyproject.toml", "[tool.pytest"),
        ("setup.cfg", "[tool:pytest]"),
        ("tox.ini", "[pytest]"),
    ):
        try:
            if marker in wsfs.read_text(repo, name, limit=_CONFIG_LIMIT, errors="replace"):
                return True
        except OSError:
            pass
    # Test files anywhere in the first few levels (not in vendored or virtualenv folders).
    stack: list[tuple[Path, int]] = [(repo, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir():
                if depth < 4 and entry.name not in _SKIP_DIRS and not entry.name.startswith("."):
                    stack.append((entry, depth + 1))
            elif entry.suffix == ".py" and (
                entry.name.startswith("test_") or entry.name.endswith("_test.py")
            ):
                return True
    return False


def _normalize_script(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines() if line.strip())


def _expression_pattern(run: str) -> re.Pattern[str]:
    # `${{ matrix.x }}` is expanded in the log; match it as "anything on this line".
    parts = re.split(r"\$\{\{.*?\}\}", _normalize_script(run))
    return re.compile("^" + "[^\n]*?".join(re.escape(p) for p in parts) + "$")


def _from_workflow(repo: Path, failed: FailedStep | str) -> tuple[str, str] | None:
    """The failing step's script (as the log shows it) and its working directory from the workflow."""
    if isinstance(failed, FailedStep):
        if failed.uses:
            return None
        script = failed.command
    else:
        script = failed
    script = script.strip()
    if not script:
        return None
    wanted = _normalize_script(script)
    first = wanted.splitlines()[0]
    workdir = ""
    best: tuple[int, str] | None = None
    for step, defaults_dir in _workflow_run_steps(repo):
        run = str(step.get("run", ""))
        normalized = _normalize_script(run)
        if normalized == wanted or _expression_pattern(run).match(wanted):
            score = 2
        elif normalized.splitlines()[:1] == [first]:
            score = 1
        else:
            continue
        wd = step.get("working-directory", defaults_dir)
        wd = wd if isinstance(wd, str) and "${{" not in wd else ""
        if best is None or score > best[0]:
            best = (score, wd)
    if best is not None:
        workdir = best[1].strip().strip("/")
        if workdir in (".", "./"):
            workdir = ""
        if workdir and not (repo / workdir).is_dir():
            workdir = ""
    return script, workdir


def _workflow_run_steps(repo: Path) -> Iterable[tuple[dict[str, Any], str]]:
    try:
        names = wsfs.listdir(repo, ".github/workflows")
    except OSError:
        return
    for name in names:
        if not name.endswith((".yml", ".yaml")):
            continue
        try:
            text = wsfs.read_text(repo, f".github/workflows/{name}", limit=_CONFIG_LIMIT, whole=True)
            doc = yaml.safe_load(text)
        except (OSError, yaml.YAMLError, UnicodeDecodeError, RecursionError):
            continue
        if not isinstance(doc, dict):
            continue
        wf_dir = _default_workdir(doc)
        jobs = doc.get("jobs")
        if not isinstance(jobs, dict):
            continue
        for job in jobs.values():
            if not isinstance(job, dict):
                continue
            job_dir = _default_workdir(job) or wf_dir
            steps = job.get("steps")
            if not isinstance(steps, list):
                continue
            for step in steps:
                if isinstance(step, dict) and "run" in step:
                    yield step, job_dir


def _default_workdir(node: Mapping[str, Any]) -> str:
    defaults = node.get("defaults")
    if isinstance(defaults, dict):
        run = defaults.get("run")
        if isinstance(run, dict) and isinstance(run.get("working-directory"), str):
            return str(run["working-directory"])
    return ""
