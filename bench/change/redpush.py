"""The "red after a push" corpus: real release histories of Python and JS packages, one breaking commit.

    .venv/bin/python -m bench.change.redpush_run [--only ID] [--label after]   # builds, then measures

This module holds the corpus data and the breaks; :mod:`bench.change.redpush_build` builds a case.

Per package (:data:`PACKAGES`: three PyPI sdists, two npm tarballs, each at two adjacent releases
``old`` -> ``new``): the last green commit is the ``old`` release (for a format/lint case made clean
for the check once: ``ruff format .``, ``ruff check --fix .``, ``prettier --write``,
``eslint --fix``; the project "uses" that tool). The commits on top are the real release diff
``old`` -> ``new``, split by file (the feature: the changed source and test files, one commit; the
rest, docs/changelog/version/examples, one to three files a commit), plus one breaking commit at a
seeded position, ``k`` commits in all (``k`` seeded in 1..8, capped by what the release holds).
Breaking commits, by kind:

* ``test``: a one-token mutant of a source line the release does not change (``==``/``!=``,
  ``<``/``<=``, ``+ 1``/``- 1``, ``and``/``or``, ``&&``/``||``, ``True``/``False``, a dropped
  ``not``/``!``): the package's own tests fail; a revert is a right fix.
* ``format``: a bad reformat of a source file (Python: the bench/change/autofix.py mutators; JS:
  double quotes, squeezed commas, spaces for tabs); the check is ``ruff format --check .`` or
  ``prettier --check``.
* ``lint_fix`` / ``lint_unfix``: a lint violation the tool's fix mode repairs (an unused import;
  a missing semicolon) or does not (an unused local variable: F841 / ``no-unused-vars``); the
  check is ``ruff check .`` (``ruff.toml``) or ``eslint .`` (``eslint.config.js``).
* ``fwd_test`` / ``fwd_format``: the breaking commit IS the release's feature commit (source and
  its tests), with a mutant on one of the lines it adds, or badly formatted. Undoing it removes
  the feature (and its tests, which the policy gate refuses): the right fix is forward.

Later commits that rewrite a broken file keep the break (it is re-applied, like a rebase), so the
history is green before the culprit and red from it on; :func:`build` checks exactly that on the
host and rejects the case otherwise. Every case's check runs offline: the npm tools (tape,
prettier, eslint) are installed once into ``bench/change/.cache/node`` (npm registry, build time
only) and each JS case's ``node_modules`` is a link to it (git-ignored, exposed read-only to the
sandbox as a toolchain), ruff and pytest come from this virtual environment.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.change import autofix as pyfmt

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
NODE = CACHE / "node"
VENV_BIN = Path(sys.prefix) / "bin"
AUTHORS = ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov")
KINDS = ("test", "test", "format", "lint_fix", "lint_unfix", "fwd_test", "fwd_format")
HELD_OUT = frozenset({"toolz", "qs"})
"""Packages never looked at while building or tuning (decided before the first run)."""
NODE_TOOLS = (
    "tape@5.9.0 prettier@3.3.3 eslint@9.9.1 @eslint/js@9.9.1 globals@15.9.0 side-channel@1.0.6 "
    "es-value-fixtures@1.4.2 for-each@0.3.3 has-symbols@1.0.3 has-override-mistake@1.0.1 "
    "has-property-descriptors@1.0.2 iconv-lite@0.5.2 mock-property@1.0.3 object-inspect@1.13.2 "
    "safer-buffer@2.1.2 qs-iconv@1.0.4"
)
RUFF_TOML = """[lint]
select = ["F401", "F841", "F821", "I001"]

[lint.per-file-ignores]
"**/__init__.py" = ["F401", "F821"]
"**/tests/**" = ["F401", "F841"]
"test/**" = ["F401", "F841"]
"""
PRETTIER_RC = '{\n\t"useTabs": true,\n\t"singleQuote": true,\n\t"printWidth": 120\n}\n'
ESLINT_CONFIG = """'use strict';

const globals = require('globals');

module.exports = [
	{ ignores: ['dist/**', 'node_modules/**', 'test/**'] },
	{
		files: ['**/*.js'],
		linterOptions: { reportUnusedDisableDirectives: 'off' },
		languageOptions: { ecmaVersion: 2020, sourceType: 'commonjs', globals: { ...globals.node } },
		rules: {
			'no-unused-vars': ['error', { args: 'none', caughtErrors: 'none' }],
			'no-undef': 'error',
			semi: ['error', 'always'],
		},
	},
];
"""


@dataclass(frozen=True)
class Package:
    """Two adjacent releases of a package whose own tests run offline."""

    name: str
    lang: str
    """``python`` or ``js``."""
    old: str
    new: str
    sources: tuple[str, ...]
    """Source files the breaks go into."""
    test: str
    """The package's own test command (run in the sandbox)."""

    def archive(self, version: str) -> Path:
        """The cached sdist/tarball of ``version`` (fetched once with pip/npm)."""
        if self.lang == "python":
            return CACHE / "py" / f"{self.name}-{version}.tar.gz"
        return CACHE / "npm" / f"{self.name}-{version}.tgz"


PYTEST = "python -m pytest -q -x -p no:cacheprovider -o addopts="
PACKAGES: tuple[Package, ...] = (
    Package("tabulate", "python", "0.8.9", "0.8.10", ("tabulate.py",), f"{PYTEST} test"),
    Package("semver", "python", "3.0.1", "3.0.2", ("src/semver/version.py",), f"{PYTEST} tests"),
    Package(
        "toolz",
        "python",
        "0.12.1",
        "1.0.0",
        ("toolz/itertoolz.py", "toolz/functoolz.py", "toolz/dicttoolz.py"),
        f"{PYTEST} toolz/tests",
    ),
    Package("minimist", "js", "1.2.7", "1.2.8", ("index.js",), "node_modules/.bin/tape 'test/**/*.js'"),
    Package(
        "qs",
        "js",
        "6.12.3",
        "6.13.0",
        ("lib/parse.js", "lib/stringify.js", "lib/utils.js"),
        "node_modules/.bin/tape 'test/**/*.js'",
    ),
)
CHECKS = {
    ("python", "format"): ("ruff format --check .", "ruff format {files}", ".py"),
    ("python", "lint"): ("ruff check .", "ruff check --fix {files}", ".py"),
    ("js", "format"): (
        "node_modules/.bin/prettier --check '**/*.js'",
        "node_modules/.bin/prettier --write {files}",
        ".js",
    ),
    ("js", "lint"): ("node_modules/.bin/eslint .", "node_modules/.bin/eslint --fix {files}", ".js"),
}
"""(language, tool kind) -> (the CI check, the normalizer used at build time, the suffix it covers)."""


def tool_kind(kind: str) -> str:
    """``test``, ``format`` or ``lint``: which CI step the case's check is."""
    return "format" if kind.endswith("format") else "lint" if kind.startswith("lint") else "test"


# -- fetching and unpacking ---------------------------------------------------------------------


def fetch(pkg: Package) -> None:
    """Download both releases once (pip / npm registry), and the npm tools for JS."""
    for version in (pkg.old, pkg.new):
        target = pkg.archive(version)
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if pkg.lang == "python":
            cmd = [str(VENV_BIN / "python"), "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
            cmd += ["--no-build-isolation", "-q", "-d", str(target.parent), f"{pkg.name}=={version}"]
        else:
            cmd = ["npm", "pack", "-q", f"{pkg.name}@{version}"]
        subprocess.run(cmd, cwd=target.parent, check=True, capture_output=True)
    if pkg.lang == "js" and not (NODE / "node_modules" / ".bin" / "tape").exists():
        NODE.mkdir(parents=True, exist_ok=True)
        (NODE / "package.json").write_text('{"name": "arcs-bench-node-tools", "private": true}\n')
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "-q", *NODE_TOOLS.split()],
            cwd=NODE,
            check=True,
            capture_output=True,
        )


def unpack(pkg: Package, version: str) -> dict[str, str]:
    """The release's text files: path -> text (metadata and binary files left out)."""
    out: dict[str, str] = {}
    with tarfile.open(pkg.archive(version)) as tar:
        for m in tar.getmembers():
            if not m.isfile():
                continue
            rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
            if rel == "PKG-INFO" or ".egg-info/" in rel or rel.startswith(".eslintrc"):
                continue
            handle = tar.extractfile(m)
            if handle is None:
                continue
            try:
                out[rel] = handle.read().decode("utf-8")
            except UnicodeDecodeError:
                continue
    return out


# -- breaks: text -> text | None ----------------------------------------------------------------

Break = Callable[[str], str | None]
PY_OPS = (
    (" == ", " != "),
    (" != ", " == "),
    (" < ", " <= "),
    (" > ", " >= "),
    (" + 1", " - 1"),
    (" - 1", " + 1"),
    (" and ", " or "),
    (" or ", " and "),
    ("True", "False"),
    ("False", "True"),
    ("if not ", "if "),
    (" is None", " is not None"),
    (" is not None", " is None"),
)
JS_OPS = (
    (" === ", " !== "),
    (" !== ", " === "),
    (" < ", " <= "),
    (" > ", " >= "),
    (" + 1", " - 1"),
    (" - 1", " + 1"),
    (" && ", " || "),
    (" || ", " && "),
    ("true", "false"),
    ("false", "true"),
    ("if (!", "if ("),
)


def mutants(text: str, lang: str, lines: set[int] | None, rng: random.Random) -> list[tuple[str, str]]:
    """Seeded ``(original line, mutated line)`` pairs (each original unique in ``text``)."""
    ops = PY_OPS if lang == "python" else JS_OPS
    all_lines = text.split("\n")
    out: list[tuple[str, str]] = []
    for i, line in enumerate(all_lines, 1):
        s = line.strip()
        if (lines is not None and i not in lines) or not s or s.startswith(("#", "//", "*", "/*")):
            continue
        if all_lines.count(line) != 1 or '"""' in line:
            continue
        for a, b in ops:
            if a in line:
                out.append((line, line.replace(a, b, 1)))
                break
    rng.shuffle(out)
    return out


def line_swap(original: str, mutated: str) -> Break:
    """Replace the one line ``original`` by ``mutated`` (None when it is not there once)."""

    def apply(text: str) -> str | None:
        lines = text.split("\n")
        if lines.count(original) != 1:
            return None
        lines[lines.index(original)] = mutated
        return "\n".join(lines)

    return apply


def js_format(kind: str, rng: random.Random) -> Break:
    """A bad reformat of JS code lines (outside strings and comments as far as a regex can tell)."""

    def apply(text: str) -> str | None:
        lines = text.split("\n")
        code = [
            i for i, ln in enumerate(lines) if ln.strip() and not ln.strip().startswith(("//", "*", "/*"))
        ]
        if kind == "quotes":
            picked = [i for i in code if re.search(r"'[\w .-]*'", lines[i])]
            for i in picked[:: max(1, len(picked) // 6)][:6]:
                lines[i] = re.sub(r"'([\w .-]*)'", r'"\1"', lines[i])
        elif kind == "spacing":
            picked = [i for i in code if ", " in lines[i] and "'" not in lines[i] and '"' not in lines[i]]
            for i in picked[:: max(1, len(picked) // 6)][:6]:
                lines[i] = lines[i].replace(", ", ",")
        else:  # spaces for tabs
            picked = [i for i in code if lines[i].startswith("\t\t")]
            for i in picked[:: max(1, len(picked) // 10)][:10]:
                n = len(lines[i]) - len(lines[i].lstrip("\t"))
                lines[i] = "  " * n + lines[i][n:]
        return "\n".join(lines) if picked else None

    return apply


def py_format(kind: str, seed: str) -> Break:
    """One of bench/change/autofix.py's bad reformats (seeded, so it re-applies identically)."""
    return lambda text: pyfmt.MUTATORS[kind](text, random.Random(seed))


def lint_fixable(lang: str) -> Break:
    """An unused stdlib import (ruff F401, fixed by --fix); a dropped semicolon (eslint ``semi``)."""

    def apply(text: str) -> str | None:
        lines = text.split("\n")
        if lang == "python":
            tops = [i for i, ln in enumerate(lines) if ln.startswith(("import ", "from ")) and "(" not in ln]
            if not tops:
                return None
            lines.insert(tops[-1] + 1, "import textwrap" if "textwrap" not in text else "import zlib")
            return "\n".join(lines)
        ends = [i for i, ln in enumerate(lines) if re.match(r"^\s+(var \w+ = |return )[^;'\"]*;$", ln)]
        if not ends:
            return None
        i = ends[len(ends) // 2]
        lines[i] = lines[i][:-1]
        return "\n".join(lines)

    return apply


def lint_unfixable(lang: str) -> Break:
    """An unused local variable (F841, whose fix is unsafe; ``no-unused-vars``, no fix)."""

    def apply(text: str) -> str | None:
        lines = text.split("\n")
        if lang == "python":
            heads = [
                i for i, ln in enumerate(lines) if re.match(r"^    def \w+\(.*\):$|^def \w+\(.*\):$", ln)
            ]
        else:
            heads = [i for i, ln in enumerate(lines) if re.search(r"function\s*\w*\s*\([^)]*\)\s*\{$", ln)]
        heads = [i for i in heads if i + 1 < len(lines) and lines[i + 1].strip()]
        if not heads:
            return None
        i = heads[len(heads) // 2]
        body = lines[i + 1]
        indent = body[: len(body) - len(body.lstrip())]
        lines.insert(
            i + 1, f"{indent}debug_value = None" if lang == "python" else f"{indent}var debugValue = null;"
        )
        return "\n".join(lines)

    return apply


# -- a case -------------------------------------------------------------------------------------


@dataclass
class Case:
    """One built history (see the module docstring)."""

    id: str
    package: Package
    kind: str
    check: str
    repo: Path
    green: str = ""
    commits: list[str] = field(default_factory=list)
    culprit: str = ""
    culprit_title: str = ""
    feature_lines: list[str] = field(default_factory=list)
    """The feature's added source lines (forward kinds): a right fix keeps them."""
    red_tests: dict[str, str] = field(default_factory=dict)
    """The red commit's test files: the oracle runs the package's tests with these restored."""

    @property
    def held_out(self) -> bool:
        """Never tuned on."""
        return self.package.name in HELD_OUT

    @property
    def lang(self) -> str:
        """``python`` or ``js``."""
        return self.package.lang


def is_test(pkg: Package, path: str) -> bool:
    """A test file of the package."""
    return bool(re.search(r"(^|/)tests?/|(^|/)test_[^/]*\.py$", path)) and path.endswith((".py", ".js"))


def sh(cwd: Path, command: str, timeout: float = 300) -> int:
    """Run ``command`` on the host (the builder's checks); its exit code."""
    env = {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(cwd),
        "NO_COLOR": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        command, shell=True, cwd=cwd, env=env, capture_output=True, timeout=timeout, check=False
    )
    return done.returncode


def git(repo: Path, *args: str, author: str = "bench") -> str:
    """git in ``repo`` with a fixed identity and no user configuration."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": f"{author.split()[0].lower()}@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@arcs.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    ).stdout


__all__ = ["CHECKS", "HELD_OUT", "KINDS", "PACKAGES", "Case", "Package", "fetch", "tool_kind"]
