"""Build one "red after a push" history (see :mod:`bench.change.redpush` for the corpus)."""

from __future__ import annotations

import random
import re
import shlex
import shutil
from pathlib import Path

from bench.change.redpush import (
    AUTHORS,
    CHECKS,
    ESLINT_CONFIG,
    NODE,
    PRETTIER_RC,
    RUFF_TOML,
    Break,
    Case,
    Package,
    git,
    is_test,
    js_format,
    line_swap,
    lint_fixable,
    lint_unfixable,
    mutants,
    py_format,
    sh,
    tool_kind,
    unpack,
)

PY_FORMATS = ("indent2", "collapse", "spacing", "quotes", "blank_lines", "trailing")
JS_FORMATS = ("quotes", "spacing", "tabs")
MAX_MUTANT_TRIES = 20


class Rejected(Exception):
    """The seeded history does not hold (a break that does not apply or does not turn it red)."""


def norm(line: str) -> str:
    """A line with whitespace and quote characters removed (formatting-insensitive comparison)."""
    return re.sub(r"[\s'\"]", "", line)


def _write(repo: Path, files: dict[str, str | None]) -> None:
    for rel, text in files.items():
        path = repo / rel
        if text is None:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _normalize(repo: Path, pkg: Package, kind: str, paths: list[str] | None) -> None:
    """The tool's fix mode on ``paths`` (None: every file it covers): the project keeps it clean."""
    tk = tool_kind(kind)
    if tk == "test":
        return
    _check, fixer, suffix = CHECKS[(pkg.lang, tk)]
    if paths is None:
        targets = "." if pkg.lang == "python" or tk == "lint" else "'**/*.js'"
    else:
        keep = [p for p in paths if p.endswith(suffix) and (repo / p).exists()]
        if not keep:
            return
        targets = " ".join(shlex.quote(p) for p in keep)
    sh(repo, fixer.format(files=targets))


def _enclosing(text: str, line: str) -> str:
    """The name of the function around ``line`` (for a commit title)."""
    lines = text.split("\n")
    at = lines.index(line) if line in lines else len(lines) - 1
    for ln in reversed(lines[: at + 1]):
        m = re.match(r"\s*(?:def|function|async function)\s+(\w+)", ln) or re.match(
            r"\s*(?:var|const|let)\s+(\w+)\s*=\s*function", ln
        )
        if m:
            return m.group(1)
    return "module"


def _pick_mutant(
    repo: Path, pkg: Package, path: str, allowed: set[str] | None, rng: random.Random
) -> tuple[Break, str]:
    """A mutant of ``path`` (on lines whose text is in ``allowed``, when given) the tests detect."""
    text = (repo / path).read_text()
    numbers = None if allowed is None else {i for i, ln in enumerate(text.split("\n"), 1) if ln in allowed}
    for original, mutated in mutants(text, pkg.lang, numbers, rng)[:MAX_MUTANT_TRIES]:
        apply = line_swap(original, mutated)
        broken = apply(text)
        if broken is None:
            continue
        (repo / path).write_text(broken)
        failed = sh(repo, pkg.test) == 1
        (repo / path).write_text(text)
        if failed:
            return apply, f"{_enclosing(text, original)}: simplify the condition"
    raise Rejected(f"no detected mutant in {path}")


def _break_for(kind: str, pkg: Package, rng: random.Random, seed: str) -> tuple[Break, str]:
    if kind.endswith("format"):
        if pkg.lang == "python":
            style = rng.choice(PY_FORMATS)
            return py_format(style, seed), f"tidy ({style})"
        style = rng.choice(JS_FORMATS)
        return js_format(style, rng), f"tidy ({style})"
    if kind == "lint_fix":
        return lint_fixable(pkg.lang), "import what the next change needs" if pkg.lang == "python" else "tidy"
    return lint_unfixable(pkg.lang), "keep a debug value around"


def _title(path: str, version: str) -> str:
    low = path.lower()
    if low.startswith(("readme", "changelog", "docs/", "license", "release")) or low.endswith(
        (".md", ".rst")
    ):
        return f"docs: update {path}"
    if low in {"setup.py", "setup.cfg", "package.json", "pyproject.toml", "tox.ini"} or "version" in low:
        return f"chore: {version} metadata in {path}"
    return f"chore: update {path}"


def build(pkg: Package, kind: str, number: int, seed: int, dest: Path) -> Case:
    """The history of case ``<pkg>-<kind>-<number>`` in ``dest`` (raises :class:`Rejected`)."""
    tag = f"{seed}:{pkg.name}:{kind}:{number}"
    rng = random.Random(tag)
    old, new = unpack(pkg, pkg.old), unpack(pkg, pkg.new)
    changed = sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))
    feature = [p for p in changed if p in pkg.sources or is_test(pkg, p)]
    benign = [p for p in changed if p not in feature]
    rng.shuffle(benign)
    forward = kind.startswith("fwd")
    tk = tool_kind(kind)
    check = pkg.test if tk == "test" else CHECKS[(pkg.lang, tk)][0]

    k = rng.randint(1, 8)
    units: list[list[str]] = [] if forward else [feature]
    room = max(0, k - 1 - len(units))
    if benign and room:
        size = -(-len(benign) // room)  # ceil: every benign file lands somewhere
        units += [benign[i : i + size] for i in range(0, len(benign), size)]
    rng.shuffle(units)
    units = units[: k - 1]
    k = len(units) + 1
    at = rng.randrange(k)

    repo = dest
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    extra: dict[str, str | None] = {}
    if pkg.lang == "js":
        (repo / "node_modules").symlink_to(NODE / "node_modules")
        extra[".gitignore"] = "node_modules\n"
        if tk == "format":
            extra[".prettierrc"] = PRETTIER_RC
            extra[".prettierignore"] = "node_modules\ndist\n"
        if tk == "lint":
            extra["eslint.config.js"] = ESLINT_CONFIG
    elif tk == "lint":
        extra["ruff.toml"] = RUFF_TOML
    _write(repo, {**old, **extra})
    _normalize(repo, pkg, kind, None)
    if sh(repo, check) != 0:
        raise Rejected(f"green ({pkg.old}) does not pass {check!r}")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"release {pkg.old}")
    green = git(repo, "rev-parse", "HEAD").strip()

    case = Case(f"{pkg.name}-{kind}-{number}", pkg, kind, check, repo, green=green)
    active: tuple[str, Break] | None = None
    for i in range(k):
        if i == at:
            if forward:
                _write(repo, {p: new.get(p) for p in feature})
                _normalize(repo, pkg, kind, feature)
                src = [p for p in feature if p in pkg.sources and p in new]
                if not src:
                    raise Rejected("the release changes no source file")
                path = rng.choice(src)
                text = (repo / path).read_text()
                before = {norm(ln) for ln in old.get(path, "").split("\n")}
                added = {ln for ln in text.split("\n") if ln.strip() and norm(ln) not in before}
                case.feature_lines = sorted({norm(ln) for ln in added if len(norm(ln)) > 3})
                if kind == "fwd_test":
                    brk, _ = _pick_mutant(repo, pkg, path, added, rng)
                else:
                    brk, _ = _break_for(kind, pkg, rng, tag)
                title = f"{path}: changes for {pkg.new}"
            else:
                path = rng.choice([p for p in pkg.sources if (repo / p).exists()])
                if kind == "test":
                    later = any(path in u for u in units[at:])
                    unchanged = set(old.get(path, "").split("\n")) & set(new.get(path, "").split("\n"))
                    brk, title = _pick_mutant(repo, pkg, path, unchanged if later else None, rng)
                else:
                    brk, what = _break_for(kind, pkg, rng, tag)
                    title = f"{path}: {what}"
            broken = brk((repo / path).read_text())
            if broken is None:
                raise Rejected(f"the break does not apply to {path}")
            (repo / path).write_text(broken)
            active = (path, brk)
        else:
            files = units[i if i < at else i - 1]
            _write(repo, {p: new.get(p) for p in files})
            _normalize(repo, pkg, kind, files)
            if active is not None and active[0] in files:  # rebase the break onto the rewrite
                again = active[1]((repo / active[0]).read_text())
                if again is None:
                    raise Rejected(f"the break no longer applies to {active[0]}")
                (repo / active[0]).write_text(again)
            title = (
                _title(files[0], pkg.new) if len(files) == 1 else f"{pkg.new}: update {', '.join(files[:3])}"
            )
        git(repo, "add", "-A")
        if not git(repo, "status", "--porcelain").strip():
            raise Rejected(f"commit {i} changes nothing")
        git(repo, "commit", "-q", "-m", title, author=rng.choice(AUTHORS))
        sha = git(repo, "rev-parse", "HEAD").strip()
        case.commits.append(sha)
        failed = sh(repo, check) != 0
        if failed != (i >= at):
            raise Rejected(f"commit {i} ({title}) is {'red' if failed else 'green'}; the culprit is {at}")
        if i == at:
            case.culprit, case.culprit_title = sha, title
    case.red_tests = {
        p: (repo / p).read_text()
        for p in git(repo, "ls-files").split()
        if is_test(pkg, p) and (repo / p).is_file()
    }
    return case


__all__ = ["Rejected", "build", "norm"]
