"""A fresh install of ARCS resolved from the package index alone, before and after #24 (no torch).

For each variant, in scratch virtual environments under ``--work`` (nothing is installed into the
environment running this script):

1. resolution: ``pip install --dry-run --ignore-installed --report`` of the variant's requirements:
   how many distributions, and which of them are torch, ``nvidia-*`` or triton;
2. download: ``pip download --no-cache-dir`` of the same into an empty folder (timed; bytes on disk);
3. install: a new venv, then the variant's ``pip install`` steps from that folder only (timed;
   installed size is the venv's growth), and the distributions that ended up installed;
4. smoke test (variants whose code builds the graph without torch): in the new venv, from a folder
   outside the source, embed the fixed texts of tests/indexing/fixtures with the default embedder
   (graph built on first use) and compare with the recorded torch vectors; torch must not import.

Variants: ``before-action`` is what ``scripts/bootstrap`` and ``action.yml`` ran on the base commit
(``pip install torch==2.13.0``, then ARCS); ``before`` is ``pip install <ARCS>`` on the base commit;
``after`` is ``pip install <ARCS>`` on ``--head``. Every pip call runs with ``PIP_CONFIG_FILE=/dev/null``
and no ``PIP_*`` variables, so a machine's local wheel folder or mirror cannot hide what the index
serves. The download runs against whatever index mirror the machine reaches: compare bytes, and read
the seconds as this machine's. Writes ``bench/results/install.json`` and the ``## Install`` block of
``bench/RESULTS.md``.

    python -m bench.install.run [--base 1b28552] [--head HEAD] [--variants before-action,after]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine_info, markdown_table, today, update_results_md

DENIED_PREFIXES = ("torch", "nvidia-", "triton")
SRC = "{src}"
VARIANTS: dict[str, tuple[str, list[list[str]]]] = {
    "before-action": ("base", [["torch==2.13.0"], [SRC]]),
    "before": ("base", [[SRC]]),
    "after": ("head", [[SRC]]),
}
"""label -> (which ref, the pip install steps; ``{src}`` is the variant's source folder)."""

_SMOKE = r"""
import json, os, sys, tempfile, time
from pathlib import Path
import numpy as np
fixture = Path(sys.argv[1])
meta = json.loads(fixture.with_suffix(".json").read_text())
ref = np.load(fixture.with_suffix(".npz"))["minilm"]
try:
    import torch  # noqa: F401
    torch_importable = True
except ImportError:
    torch_importable = False
from indexing.embedders import embedder_for
with tempfile.TemporaryDirectory() as home:
    t = time.perf_counter()
    vecs = embedder_for("onnx", cache_dir=Path(home)).embed(meta["texts"])
    first = time.perf_counter() - t
print(json.dumps({"torch_importable": torch_importable, "first_embed_s": round(first, 2),
                  "texts": len(meta["texts"]), "min_cosine_to_torch": float((vecs * ref).sum(1).min())}))
"""


def pip_env() -> dict[str, str]:
    """The environment of every pip call: no config file, no PIP_* settings of this machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(
        {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_DEFAULT_TIMEOUT": "180"}
    )
    return env


def load() -> list[float]:
    """The 1-, 5- and 15-minute load averages (what ``uptime`` prints)."""
    return [round(x, 2) for x in os.getloadavg()]


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` with the clean pip environment; raise with its output when it fails."""
    done = subprocess.run(cmd, env=pip_env(), capture_output=True, text=True, check=False, **kw)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        )
    return done


def du(path: Path) -> int:
    """Bytes of the files under ``path`` (apparent size, links not followed)."""
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def new_venv(path: Path) -> Path:
    """A venv at ``path`` with pip upgraded from the index (not part of any timing); its python."""
    shutil.rmtree(path, ignore_errors=True)
    run([sys.executable, "-m", "venv", str(path)])
    python = path / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    return python


def denied(names: list[str]) -> list[str]:
    """The names that are torch, its CUDA wheels or triton."""
    return sorted(n for n in names if n.lower().startswith(DENIED_PREFIXES))


def source(ref: str, dest: Path) -> Path:
    """The repository at ``ref`` as plain files in ``dest`` (``git archive``)."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def measure(
    label: str, ref: str, steps: list[list[str]], work: Path, *, dry_run_only: bool
) -> dict[str, Any]:
    """All the figures of one variant."""
    root = work / label
    src = source(ref, root / "src")
    out: dict[str, Any] = {
        "label": label,
        "ref": ref,
        "steps": [" ".join(s).replace(SRC, ".") for s in steps],
    }
    steps = [[a.replace(SRC, str(src)) for a in step] for step in steps]
    flat = [a for step in steps for a in step]
    out["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()

    python = new_venv(root / "resolver")
    out["pip"] = run([str(python), "-m", "pip", "--version"]).stdout.split()[1]
    report = root / "report.json"
    out["load_before"] = load()
    t = time.perf_counter()
    run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--dry-run",
            "--ignore-installed",
            "--report",
            str(report),
            *flat,
        ]
    )
    out["resolve_s"] = round(time.perf_counter() - t, 1)
    installs = json.loads(report.read_text())["install"]
    names = sorted(i["metadata"]["name"] for i in installs)
    out["resolved"] = {i["metadata"]["name"]: i["metadata"]["version"] for i in installs}
    out["resolved_count"] = len(names)
    out["resolved_denied"] = denied(names)
    if dry_run_only:
        out["load_after"] = load()
        return out

    wheels = root / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    t = time.perf_counter()
    # setuptools/wheel too: ARCS is built from source, and the install below reads nothing but this folder.
    run(
        [
            str(python),
            "-m",
            "pip",
            "download",
            "-q",
            "--no-cache-dir",
            "-d",
            str(wheels),
            *flat,
            "setuptools>=69",
            "wheel",
        ]
    )
    out["download_s"] = round(time.perf_counter() - t, 1)
    files = sorted(wheels.iterdir(), key=lambda p: -p.stat().st_size)
    out["download_bytes"] = sum(p.stat().st_size for p in files)
    out["download_files"] = len(files)
    out["largest_downloads"] = {p.name: p.stat().st_size for p in files[:6]}

    venv = root / "venv"
    python = new_venv(venv)
    empty = du(venv)
    t = time.perf_counter()
    for step in steps:
        run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--no-cache-dir",
                "--no-index",
                "--find-links",
                str(wheels),
                *step,
            ]
        )
    out["install_s"] = round(time.perf_counter() - t, 1)
    out["installed_bytes"] = du(venv) - empty
    listed = json.loads(run([str(python), "-m", "pip", "list", "--format", "json"]).stdout)
    out["installed_count"] = len(listed)
    out["installed_denied"] = denied([d["name"] for d in listed])

    fixture = src / "tests" / "indexing" / "fixtures" / "minilm_reference"
    if (src / "indexing" / "minilm_graph.py").exists() and fixture.with_suffix(".npz").exists():
        done = run([str(python), "-c", _SMOKE, str(fixture)], cwd=str(root))  # not src: the installed package
        out["smoke"] = json.loads(done.stdout.strip().splitlines()[-1])
    out["load_after"] = load()
    shutil.rmtree(wheels, ignore_errors=True)  # gigabytes: keep the numbers, not the files
    shutil.rmtree(venv, ignore_errors=True)
    return out


def _mb(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:,.0f} MB"


def render(report: dict[str, Any]) -> str:
    """The RESULTS.md block."""
    rows = []
    for v in report["variants"]:
        rows.append(
            [
                v["label"],
                f"`{v['commit']}`",
                "; ".join(f"`pip install {s}`" for s in v["steps"]),
                v["resolved_count"],
                ", ".join(v["resolved_denied"][:3])
                + (f" +{len(v['resolved_denied']) - 3}" if len(v["resolved_denied"]) > 3 else "")
                or "none",
                _mb(v.get("download_bytes")),
                _mb(v.get("installed_bytes")),
                "-" if "install_s" not in v else f"{v['download_s']} + {v['install_s']}",
                f"{v['load_before'][0]} -> {v['load_after'][0]}",
            ]
        )
    table = markdown_table(
        [
            "variant",
            "commit",
            "steps",
            "packages",
            "torch / nvidia / triton",
            "download",
            "installed",
            "seconds (download + install)",
            "load 1-min",
        ],
        rows,
    )
    m = report["machine"]
    lines = [
        f"Run {report['date']}: `{report['command']}`; {m['cpu']}, {m['cpus_available']} CPUs, "
        f"Python {m['python']}, pip {report['variants'][0].get('pip')}. Every pip call with "
        "`PIP_CONFIG_FILE=/dev/null` and no `PIP_*` variables (this machine's local wheel folder, "
        "which holds a CPU torch, is not seen); resolution by `pip install --dry-run --ignore-installed "
        "--report`, download by `pip download --no-cache-dir` (file sizes), install from those files "
        "into a new venv (its growth). The download ran against this machine's index mirror: compare "
        "the bytes; the seconds are this shared 2-core machine's.",
        "",
        table,
    ]
    by = {v["label"]: v for v in report["variants"]}
    before = by.get("before-action") or by.get("before")
    after = by.get("after")
    if before and after and before.get("download_bytes") and after.get("download_bytes"):
        lines += [
            "",
            f"After/before: download {after['download_bytes'] / before['download_bytes']:.3f}x, installed "
            f"{after['installed_bytes'] / before['installed_bytes']:.3f}x, download + install time "
            f"{(after['download_s'] + after['install_s']) / (before['download_s'] + before['install_s']):.3f}x "
            f"({before['label']} as the baseline).",
        ]
    if after and "smoke" in after:
        s = after["smoke"]
        lines += [
            "",
            f"Smoke test of the `after` install (from outside the source tree): torch importable: "
            f"{s['torch_importable']}; the default `onnx` embedder built its graph and embedded the "
            f"{s['texts']} reference texts in {s['first_embed_s']} s; minimum cosine to the recorded "
            f"torch vectors {s['min_cosine_to_torch']:.7f}.",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure the variants; write the JSON and the RESULTS.md block."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--base", default="1b28552", help="the commit before #24 (default 1b28552)")
    parser.add_argument("--head", default="HEAD", help="the commit to measure as 'after' (default HEAD)")
    parser.add_argument("--variants", default="before-action,before,after")
    parser.add_argument("--dry-run-only", default="before", help="variants measured by resolution only")
    parser.add_argument("--work", type=Path, default=Path("/tmp/arcs-install-bench"))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    refs = {"base": args.base, "head": args.head}
    only = set(filter(None, args.dry_run_only.split(",")))
    variants = []
    for label in filter(None, args.variants.split(",")):
        which, steps = VARIANTS[label]
        print(f"install bench: {label} ...", file=sys.stderr, flush=True)
        variants.append(measure(label, refs[which], steps, args.work, dry_run_only=label in only))
        print(
            json.dumps({k: v for k, v in variants[-1].items() if k != "resolved"}),
            file=sys.stderr,
            flush=True,
        )
    report = {
        "date": today(),
        "command": "python -m bench.install.run " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {k: v for k, v in machine_info().items() if not k.startswith("torch")},
        "variants": variants,
    }
    text = render(report)
    print(text)
    if not args.no_write:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        (RESULTS_DIR / "install.json").write_text(json.dumps(report, indent=1) + "\n")
        update_results_md("Install", "install", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
