"""Which language a repository file is in, and the tree-sitter grammars for the code languages.

Detection is by file name only (extension, or a few well-known extensionless names), so it is cheap
and deterministic. ``None`` means "not worth indexing" (images, archives, lock files, data dumps…).
"""

from __future__ import annotations

import threading
from functools import cache
from pathlib import PurePosixPath

import tree_sitter

CODE_LANGUAGES: frozenset[str] = frozenset(
    {"python", "javascript", "typescript", "tsx", "go", "rust", "java"}
)
"""Languages chunked along their syntax tree (each has a grammar wheel)."""

DOC_LANGUAGES: frozenset[str] = frozenset({"markdown", "rst"})
"""Languages chunked by section heading."""

_BY_SUFFIX: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
}

# Other indexable text: configuration, prose, and source in languages without a grammar here
# (indexed by line windows, which still beats not finding them at all).
_TEXT_SUFFIXES: frozenset[str] = frozenset(
    {
        # prose and configuration
        ".txt", ".text", ".toml", ".yaml", ".yml", ".json", ".jsonc", ".json5", ".cfg", ".ini",
        ".conf", ".properties", ".xml", ".gradle", ".sbt", ".mod", ".mk", ".cmake", ".dockerfile",
        ".tf", ".hcl", ".nix", ".proto", ".graphql", ".gql", ".sql", ".env.example", ".in",
        ".adoc", ".asciidoc", ".org", ".tex", ".bib", ".csproj", ".editorconfig",
        # source code without a grammar wheel
        ".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx", ".cs", ".rb", ".php", ".kt",
        ".kts", ".swift", ".scala", ".lua", ".r", ".pl", ".pm", ".sh", ".bash", ".zsh", ".fish",
        ".ps1", ".bat", ".cmd", ".vue", ".svelte", ".html", ".htm", ".css", ".scss", ".sass",
        ".less", ".ex", ".exs", ".erl", ".hs", ".ml", ".mli", ".clj", ".dart", ".jl", ".zig",
        ".nim", ".pyx", ".pxd", ".groovy", ".m", ".mm", ".f90", ".cu", ".cuh",
    }
)  # fmt: skip

# Extensionless (or oddly named) files that are worth indexing, matched case-insensitively.
_TEXT_NAMES: frozenset[str] = frozenset(
    {
        "readme", "changelog", "changes", "history", "contributing", "authors", "todo",
        "dockerfile", "containerfile", "makefile", "gnumakefile", "procfile", "jenkinsfile",
        "vagrantfile", "gemfile", "rakefile", "justfile", "pipfile", "codeowners", "manifest.in",
        ".gitignore", ".gitattributes", ".dockerignore", ".editorconfig", ".flake8", ".pylintrc",
        ".coveragerc", ".npmrc", ".nvmrc", ".python-version", ".pre-commit-config.yaml",
    }
)  # fmt: skip

# Big, machine-written or legal boilerplate: retrieval noise for a repair bot.
_SKIP_NAMES: frozenset[str] = frozenset(
    {
        "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock",
        "pipfile.lock", "cargo.lock", "go.sum", "composer.lock", "gemfile.lock", "uv.lock",
        "pdm.lock", "bun.lockb", "license", "license.txt", "license.md", "licence", "copying",
        "notice",
    }
)  # fmt: skip


def language_for_path(path: str) -> str | None:
    """The language of ``path`` (repo-relative, POSIX), or ``None`` when it is not indexable.

    Code languages are those in :data:`CODE_LANGUAGES`; ``markdown``/``rst`` documents are chunked by
    section; ``text`` covers other useful text (configuration, README, build files, and source in
    languages without a grammar), which is chunked by line windows.
    """
    name = PurePosixPath(path).name
    lower = name.lower()
    if not lower or lower in _SKIP_NAMES or lower.endswith(".lock"):
        return None
    if lower.endswith((".min.js", ".min.css", ".map")):
        return None
    suffix = PurePosixPath(lower).suffix
    if suffix in _BY_SUFFIX:
        return _BY_SUFFIX[suffix]
    if suffix in _TEXT_SUFFIXES or lower in _TEXT_NAMES:
        return "text"
    stem = lower.split(".", 1)[0]
    if stem in _TEXT_NAMES and stem not in {".gitignore", ".dockerignore"}:
        # README.txt is handled above; this catches Dockerfile.dev, Makefile.am, CHANGES.old …
        return "text"
    if lower.startswith(("requirements", "constraints")) and suffix in {".txt", ".in", ""}:
        return "text"
    return None


@cache
def grammar(language: str) -> tree_sitter.Language:
    """The tree-sitter grammar for a code language (loaded once). Raises KeyError for others."""
    # Imported lazily: no grammar is loaded unless a file of that language is chunked.
    if language == "python":
        import tree_sitter_python as mod

        return tree_sitter.Language(mod.language())
    if language == "javascript":
        import tree_sitter_javascript as js

        return tree_sitter.Language(js.language())
    if language in ("typescript", "tsx"):
        import tree_sitter_typescript as tsm

        return tree_sitter.Language(tsm.language_tsx() if language == "tsx" else tsm.language_typescript())
    if language == "go":
        import tree_sitter_go as go

        return tree_sitter.Language(go.language())
    if language == "rust":
        import tree_sitter_rust as rs

        return tree_sitter.Language(rs.language())
    if language == "java":
        import tree_sitter_java as java

        return tree_sitter.Language(java.language())
    raise KeyError(f"no tree-sitter grammar for {language!r}")


_local = threading.local()


def parser_for(language: str) -> tree_sitter.Parser:
    """A parser for ``language``, cached per thread (parsers are not safe to share across threads)."""
    parsers: dict[str, tree_sitter.Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = {}
        _local.parsers = parsers
    parser = parsers.get(language)
    if parser is None:
        parser = tree_sitter.Parser(grammar(language))
        parsers[language] = parser
    return parser
