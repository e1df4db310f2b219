"""The GitHub App end to end: the strict GitHub double, ``arcs serve`` (gunicorn) and ``arcs worker``
(subprocesses) on the real Redis, the real repair (tier 0) in the bubblewrap sandbox.

A signed ``workflow_run`` failure for a repository whose test fails goes in; a pushed ``arcs/…``
branch and exactly one pull request (with the verification table and the trace) come out. A
``/arcs fix`` from a user with read permission gets a polite refusal and nothing runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.bot.webhook_support import encode, headers, load
from tests.fakes.github_double import TEST_APP_ID, GitHubDouble, generate_app_key

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = ROOT / "bot" / "samples" / "inventory"
REDIS_DB = 12
REDIS_URL = f"redis://127.0.0.1:6379/{REDIS_DB}"
SECRET = "e2e-webhook-secret"
OWNER = "acme"
REPO = f"{OWNER}/inventory"
WAIT_S = 180.0
TARGET = "tests/test_stock.py::test_reserve_exactly_what_is_available"
INSTALLATION_NODE_ID = "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="

# Runs the CLI with `serve` and `worker` registered, whether or not the registry lists them yet.
LAUNCHER = textwrap.dedent(
    """
    import sys
    from bot.cli import app, commands, serve_cmd, worker_cmd
    for register in (serve_cmd.register, worker_cmd.register):
        if register not in commands.REGISTRY:
            commands.REGISTRY.append(register)
    raise SystemExit(app.main(sys.argv[1:]))
    """
)
REQUEUE_S = 5
"""``ARCS_BROKER_REQUEUE_S``: a SIGKILLed worker's job comes back this long after its last
heartbeat (the shortest deadline the broker accepts), so the crash test takes seconds."""

PYTEST_OUTPUT = """\
============================= test session starts ==============================
platform linux -- Python 3.11.8, pytest-8.1.1, pluggy-1.4.0
rootdir: /home/runner/work/inventory/inventory
configfile: pyproject.toml
collected 10 items

tests/test_pricing.py ....                                               [ 40%]
tests/test_report.py ..                                                  [ 60%]
tests/test_stock.py ..F.                                                 [100%]

=================================== FAILURES ===================================
____________________ test_reserve_exactly_what_is_available ____________________

    def test_reserve_exactly_what_is_available():
        stock = make_stock(5)
>       stock.reserve("o1", "BOLT", 5)

tests/test_stock.py:20:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

self = <inventory.stock.Stock object at 0x7f0519ed7c50>, order_id = 'o1'
sku = 'BOLT', quantity = 5

    def reserve(self, order_id: str, sku: str, quantity: int) -> Reservation:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if self.available(sku) > quantity:
            reservation = Reservation(order_id=order_id, sku=sku, quantity=quantity)
            self._reservations[order_id] = reservation
            return reservation
>       raise OutOfStock(f"{sku}: {self.available(sku)} available, {quantity} requested")
E       inventory.stock.OutOfStock: BOLT: 5 available, 5 requested

inventory/stock.py:46: OutOfStock
=========================== short test summary info ============================
FAILED tests/test_stock.py::test_reserve_exactly_what_is_available - inventory.stock.OutOfStock: BOLT: 5 available, 5 requested
========================= 1 failed, 9 passed in 0.26s ==========================
"""


def actions_log(output: str) -> str:
    """``output`` as the log of a GitHub Actions job whose ``python -m pytest -q`` step failed."""
    lines = [
        "Current runner version: '2.314.1'",
        "##[group]Operating System",
        "Ubuntu",
        "22.04.4",
        "##[endgroup]",
        "Complete job name: test",
        "##[group]Run actions/checkout@v4",
        "with:",
        f"  repository: {REPO}",
        "##[endgroup]",
        "##[group]Run pip install -e . pytest",
        "pip install -e . pytest",
        "shell: /usr/bin/bash -e {0}",
        "##[endgroup]",
        "Successfully installed inventory-0.1.0 pytest-8.1.1",
        "##[group]Run python -m pytest -q",
        "python -m pytest -q",
        "shell: /usr/bin/bash -e {0}",
        "##[endgroup]",
        *output.splitlines(),
        "##[error]Process completed with exit code 1.",
        "Post job cleanup.",
        "Cleaning up orphan processes",
    ]
    return "".join(f"2026-11-20T10:00:{i // 10:02d}.{i % 10}000000Z {line}\n" for i, line in enumerate(lines))


def _redis_unreachable() -> str | None:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=2):
            return None
    except OSError as exc:
        return str(exc)


def _sandbox_unusable() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    from runners.sandbox import LocalSandbox, SandboxUnavailable

    try:
        LocalSandbox().check()
    except SandboxUnavailable as exc:
        return f"bubblewrap cannot create a sandbox here ({exc})"
    return None


def _skip_reason() -> str | None:
    redis = _redis_unreachable()
    if redis is not None:
        return f"Redis on 127.0.0.1:6379 is unreachable ({redis})"
    return _sandbox_unusable()


pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], *, timeout: float = WAIT_S, stack: Stack) -> T:
    """Poll ``probe`` until it returns something truthy; fail with the processes' logs otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        stack.check_alive()
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{stack.tail()}")


def _workflow_run_payload(stack: Stack, repo_name: str, run_id: int, head_sha: str) -> dict[str, Any]:
    repo = stack.repository(repo_name)
    payload = load(
        "workflow_run.completed.failure",
        repository__id=repo["id"],
        repository__name=repo["name"],
        repository__full_name=repo_name,
        repository__owner__login=OWNER,
        workflow_run__id=run_id,
        workflow_run__head_sha=head_sha,
        workflow_run__head_branch="main",
        workflow_run__conclusion="failure",
        workflow_run__pull_requests=[],
        workflow_run__head_repository__id=repo["id"],
        workflow_run__head_repository__name=repo["name"],
        workflow_run__head_repository__full_name=repo_name,
    )
    payload["installation"] = {"id": stack.installation_id, "node_id": INSTALLATION_NODE_ID}
    return payload


class Process:
    """A CLI subprocess whose output is collected by a thread."""

    def __init__(self, name: str, args: list[str], env: Mapping[str, str], *, ready: str) -> None:
        self.name = name
        self.args = args
        self.env = dict(env)
        self.ready_marker = ready
        self.lines: list[str] = []
        self.started = 0.0
        self.start()

    def start(self) -> None:
        self.ready = threading.Event()
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, *self.args],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its children (gunicorn workers) are signalled with it
        )
        self._reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._reader.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line)
            if self.ready_marker in line:
                self.ready.set()
        self.ready.set()

    def wait_ready(self, timeout: float = 90.0) -> None:
        if not self.ready.wait(timeout) or self.proc.poll() is not None:
            raise AssertionError(f"{self.name} did not start:\n" + "".join(self.lines[-60:]))

    def events(self, name: str) -> list[dict[str, Any]]:
        out = []
        for line in list(self.lines):
            if line.startswith("{"):
                try:
                    data = json.loads(line)
                except ValueError:
                    continue
                if data.get("event") == name:
                    out.append(data)
        return out

    def kill(self) -> None:
        """SIGKILL the process group (no graceful anything)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self._reader.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=45)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._reader.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode


@dataclass
class Stack:
    """The double, the web process and the worker process."""

    double: GitHubDouble
    installation_id: int
    web: Process
    worker: Process
    base_url: str
    home: Path

    def check_alive(self) -> None:
        for process in (self.web, self.worker):
            if process.proc.poll() is not None:
                raise AssertionError(f"{process.name} exited with {process.proc.returncode}\n{self.tail()}")

    def tail(self, n: int = 80) -> str:
        return (
            "\n".join(
                f"--- {p.name} (last {n} lines) ---\n" + "".join(p.lines[-n:])
                for p in (self.web, self.worker)
            )
            + f"\n--- double: unexpected={self.double.unexpected}"
        )

    def post(self, event: str, payload: dict[str, Any], delivery: str) -> httpx.Response:
        body = encode(payload)
        with httpx.Client(base_url=self.base_url, timeout=30) as client:
            return client.post(
                "/webhooks/github",
                content=body,
                headers=headers(event, body, delivery=delivery, secret=SECRET),
            )

    def repository(self, full_name: str) -> dict[str, Any]:
        repo = self.double.repos[full_name]
        return {"id": repo.id, "name": repo.name, "full_name": full_name, "owner_login": repo.owner}


def _inventory_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for path in sorted(INVENTORY.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith(".pyc"):
            files[path.relative_to(INVENTORY).as_posix()] = path.read_text(encoding="utf-8")
    files[".arcs.yml"] = "test: python -m pytest -q\n"
    return files


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("e2e")
    key = generate_app_key()
    double = GitHubDouble(tmp / "github", app_id=TEST_APP_ID, app_public_key_pem=key.public_pem)
    double.start()
    inst = double.add_installation(OWNER)
    double.add_repo(
        REPO,
        _inventory_files(),
        installation=inst,
        collaborators={"maintainer": "admin", "visitor": "read"},
    )
    from bot.settings import load_settings
    from jobs.broker import make_enqueuer

    home = tmp / "home"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("ARCS_") and not k.startswith("ANTHROPIC_")
    }
    env.update(
        {
            "ARCS_HOME": str(home),
            "ARCS_GITHUB_API_URL": double.api_url,
            "ARCS_APP_ID": TEST_APP_ID,
            "ARCS_PRIVATE_KEY": key.private_pem,
            "ARCS_WEBHOOK_SECRET": SECRET,
            "ARCS_BROKER_URL": REDIS_URL,
            "ARCS_BROKER_REQUEUE_S": str(REQUEUE_S),
            "ARCS_DATABASE_URL": f"sqlite:///{tmp / 'arcs.db'}",
            "ARCS_EMBEDDER": "hash",
            "ARCS_LOG_FORMAT": "json",
            "HF_HUB_OFFLINE": "1",
        }
    )
    enqueuer = make_enqueuer(load_settings(env))
    enqueuer.broker.flush_all()  # a spare database: nothing left from an earlier run
    enqueuer.broker.close()
    web = Process(
        "arcs serve",
        ["serve", "--host", "127.0.0.1", "--port", "0", "--workers", "1"],
        env,
        ready="web_started",
    )
    worker = Process(
        "arcs worker",
        ["worker", "--processes", "1", "--threads", "2", "--grace", "5"],
        env,
        ready="worker.started",
    )
    try:
        web.wait_ready()
        worker.wait_ready()
        port = next(
            int(m.group(1))
            for line in web.lines
            if (m := re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", line))
        )
        yield Stack(double, inst.id, web, worker, f"http://127.0.0.1:{port}", home)
    finally:
        worker.stop()
        web.stop()
        double.stop()
    assert double.unexpected == [], "the GitHub double received unexpected requests"


def test_a_failed_workflow_run_becomes_exactly_one_pull_request(stack: Stack) -> None:
    double = stack.double
    head_sha = str(double.branch_sha(REPO, "main"))
    run = double.add_workflow_run(
        REPO, head_sha=head_sha, head_branch="main", jobs=[("test", "failure", actions_log(PYTEST_OUTPUT))]
    )
    started = time.monotonic()
    payload = _workflow_run_payload(stack, REPO, run.id, head_sha)
    reply = stack.post("workflow_run", payload, "e2e-run-1")
    assert reply.status_code == 202 and reply.json()["status"] == "queued", reply.text
    # GitHub redelivers: the same delivery again, and a second delivery of the same run.
    assert stack.post("workflow_run", payload, "e2e-run-1").json()["status"] == "duplicate"
    stack.post("workflow_run", payload, "e2e-run-1-again")

    pulls = wait_for("an opened pull request", lambda: double.open_pulls(REPO), stack=stack)
    elapsed = time.monotonic() - started
    branches = {name: sha for name, sha in double.branches(REPO).items() if name.startswith("arcs/")}
    assert list(branches) == ["arcs/fix/main"], branches
    pushed = double.read_file(REPO, branches["arcs/fix/main"], "inventory/stock.py") or ""
    assert "if self.available(sku) >= quantity:" in pushed
    assert double.commit_info(REPO, branches["arcs/fix/main"])["author_name"] == "arcs[bot]"

    (pr,) = pulls
    body = str(pr["body"])
    assert pr["head"]["ref"] == "arcs/fix/main" and pr["base"]["ref"] == "main"
    assert "## Verification" in body and "| Check | Before | After |" in body
    assert "| Target tests (1) | ❌ 1 failed" in body and "✅ " in body
    assert f"`{TARGET}`" in body
    assert "## Trace" in body and "<summary>Repair trace</summary>" in body and "ARCS trace v" in body
    assert "-        if self.available(sku) > quantity:" in body  # the diff

    # Settle: the duplicate delivery and publishing must not open a second pull request.
    wait_for(
        "the check run to complete",
        lambda: [c for c in double.repos[REPO].check_runs.values() if c.get("conclusion") == "success"],
        stack=stack,
    )
    time.sleep(3)
    assert len(double.repos[REPO].pulls) == 1
    assert len(double.mutations_matching("POST", r"/pulls$")) == 1
    (check,) = double.repos[REPO].check_runs.values()
    assert check["head_sha"] == head_sha and "| Check | Before | After |" in check["output"]["summary"]
    # Every token the worker minted was revoked after its job.
    assert all(t.revoked for t in double.tokens.values()), "installation tokens left unrevoked"
    print(f"\nE2E workflow_run -> PR #{pr['number']}: {elapsed:.1f}s")


def test_a_fix_command_from_a_reader_gets_no_reply_and_nothing_runs(stack: Stack) -> None:
    double = stack.double
    number = double.add_issue(
        REPO, "Reservations are off by one", "Reserving all 5 bolts fails.", user="visitor"
    )
    comment_id = double.add_comment(REPO, number, "/arcs fix", user="visitor")
    pushes_before = len(double.requests_matching("POST", r"git-receive-pack"))
    clones_before = len(double.requests_matching("POST", r"git-upload-pack"))
    repo = stack.repository(REPO)
    payload = load(
        "issue_comment.created",
        repository__id=repo["id"],
        repository__name=repo["name"],
        repository__full_name=REPO,
        repository__owner__login=OWNER,
        issue__number=number,
        issue__title="Reservations are off by one",
        issue__user__login="visitor",
        comment__id=comment_id,
        comment__body="/arcs fix",
        comment__user__login="visitor",
        comment__author_association="CONTRIBUTOR",
        sender__login="visitor",
    )
    payload["installation"] = {
        "id": stack.installation_id,
        "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==",
    }
    reply = stack.post("issue_comment", payload, "e2e-comment-1")
    assert reply.status_code == 202 and reply.json()["status"] == "queued", reply.text

    def refused() -> str | None:
        # The worker asked GitHub for the commenter's permission: the refusal is decided.
        asked = double.requests_matching("GET", rf"/repos/{REPO}/collaborators/visitor/permission")
        return "asked" if asked else None

    wait_for("the permission check", refused, timeout=60, stack=stack)
    time.sleep(2)
    # A reader gets no reply at all: no comment, no reaction, nothing checked out or pushed.
    assert double.reactions_on_comment(REPO, comment_id) == []
    assert [c for c in double.comments_on(REPO, number) if c["user"]["login"] == double.bot_login] == []
    assert len(double.requests_matching("POST", r"git-receive-pack")) == pushes_before
    assert len(double.requests_matching("POST", r"git-upload-pack")) == clones_before  # no checkout


def test_a_worker_killed_mid_repair_resumes_and_opens_exactly_one_pull_request(stack: Stack) -> None:
    double = stack.double
    repo_name = f"{OWNER}/inventory-kill"
    double.add_repo(repo_name, _inventory_files(), installation=double.installations[stack.installation_id])
    head_sha = str(double.branch_sha(repo_name, "main"))
    run = double.add_workflow_run(
        repo_name,
        head_sha=head_sha,
        head_branch="main",
        jobs=[("test", "failure", actions_log(PYTEST_OUTPUT))],
    )
    clone = rf"^/{re.escape(repo_name)}\.git/git-upload-pack$"
    reply = stack.post(
        "workflow_run", _workflow_run_payload(stack, repo_name, run.id, head_sha), "e2e-kill-1"
    )
    assert reply.status_code == 202, reply.text

    # The repair has started once the checkout was fetched: kill the worker there, no grace.
    wait_for("the checkout", lambda: double.requests_matching("POST", clone), stack=stack)
    stack.worker.kill()
    fetches_before_restart = len(double.requests_matching("POST", clone))
    assert double.open_pulls(repo_name) == [] and not any(
        b.startswith("arcs/") for b in double.branches(repo_name)
    )
    killed_at = time.monotonic()
    stack.worker.start()
    stack.worker.wait_ready()

    pulls = wait_for("the pull request after the restart", lambda: double.open_pulls(repo_name), stack=stack)
    print(f"\nE2E SIGKILL -> restart -> PR: {time.monotonic() - killed_at:.1f}s after the kill")
    time.sleep(3)
    assert len(pulls) == 1 and len(double.repos[repo_name].pulls) == 1
    assert len(double.mutations_matching("POST", rf"^/repos/{re.escape(repo_name)}/pulls$")) == 1
    # the resumed attempt checked the commit out again
    assert len(double.requests_matching("POST", clone)) > fetches_before_restart
    assert len(double.repos[repo_name].check_runs) == 1  # the attempt kept its check run
    assert [b for b in double.branches(repo_name) if b.startswith("arcs/")] == ["arcs/fix/main"]
