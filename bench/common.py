"""Helpers shared by the benchmarks: temporary git repositories, machine facts, timing, RSS."""

from __future__ import annotations

import datetime as dt
import os
import platform
import resource
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"

# Fixed identity and dates so the temporary repositories (and their commit ids) are reproducible.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def prepare_process(threads: int | None = None) -> None:
    """Process-wide setup for a benchmark run: offline model loading, and the CPU thread budget.

    ``threads`` caps torch/BLAS threads (the benchmarks are specified for 2 cores); None leaves the
    libraries' defaults.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if threads is not None:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[var] = str(threads)
        try:
            import torch

            torch.set_num_threads(threads)
        except ImportError:  # pragma: no cover - torch is a dependency
            pass


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with the fixed benchmark identity; return stdout."""
    env = {**os.environ, **_GIT_ENV}
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True)
    return done.stdout


def init_git_repo(path: Path, message: str = "initial import") -> str:
    """``git init`` + add everything + commit in ``path``; returns the commit id."""
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
    return git(path, "rev-parse", "HEAD").strip()


def copy_as_git_repo(src: Path, dest: Path) -> str:
    """Copy a plain folder to ``dest`` and make it a committed git repository."""
    shutil.copytree(src, dest)
    return init_git_repo(dest)


def write_files(root: Path, files: Mapping[str, str]) -> None:
    """Write ``{relative path: text}`` under ``root``."""
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (``ru_maxrss`` is KiB on Linux)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (``pct`` in [0, 100]) of a non-empty sequence."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of an empty sequence")
    pos = (len(ordered) - 1) * pct / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / (1024 * 1024), 1)
                break
    except OSError:
        pass
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info: dict[str, Any] = {
        "cpu": cpu,
        "cpus_available": affinity,
        "memory_gib": mem_gib,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "accelerator": "none (CPU only)",
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    except ImportError:  # pragma: no cover
        pass
    return info


def today() -> str:
    """UTC date of the run, ISO format."""
    return dt.datetime.now(dt.UTC).date().isoformat()


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured markdown table (numbers right-aligned)."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3f}"
        return str(value)

    body = [[cell(v) for v in row] for row in rows]
    align = ["---:" if rows and isinstance(rows[0][i], int | float) else ":---" for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


RESULTS_MD = REPO_ROOT / "bench" / "RESULTS.md"


def update_results_md(section: str, key: str, generated: str, path: Path = RESULTS_MD) -> None:
    """Replace the generated block ``key`` inside ``## section`` of RESULTS.md, leaving the rest alone.

    The block is delimited by ``<!-- key:begin -->`` / ``<!-- key:end -->``. When it does not exist
    yet it is inserted right under the section heading, and the heading is appended when missing.
    Other sections (written by other benchmarks or by hand) are never touched.
    """
    begin, end = f"<!-- {key}:begin -->", f"<!-- {key}:end -->"
    block = f"{begin}\n{generated.strip()}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        heading = f"## {section}"
        lines = text.splitlines()
        if heading in lines:
            at = lines.index(heading) + 1
            lines[at:at] = ["", block]
            text = "\n".join(lines) + "\n"
        else:
            text = text.rstrip("\n") + f"\n\n{heading}\n\n{block}\n"
    path.write_text(text, encoding="utf-8")
