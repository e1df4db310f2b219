"""A whole repair through the worker's application functions, with only the edges faked.

GitHub is :class:`jobs.fakes.FakeGitHubGateway` (it clones the boundary fixture), the model is the
local Anthropic-compatible server (every request recorded), the tests run through the scripted
pytest of the fixture; the store, the pipeline, the engine, the loop, its gates and publishing are
the real ones. Used by the attacker-side tests of what the model may read and of what ARCS
refuses to publish (issue #22).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.settings import Settings
from bot.store.store import Store
from jobs import pipeline
from jobs.fakes import FakeGitHubGateway, FakeIndexService
from jobs.messages import JobRequest
from jobs.pipeline import Deps
from jobs.ports import PullRequestInfo
from jobs.repair_service import FixRepairService
from runners.config import RepoConfig
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import FIXTURES, RULES, TARGET, scripted_pytest
from tests.fakes.anthropic_server import FakeAnthropicServer, Reply, serving

REPO = "octo/ages"
SHA = "d" * 40
FIX = {"path": RULES, "kind": "replace", "old": "return age > ADULT_AGE", "new": "return age >= ADULT_AGE"}
PLAN = {
    "contract": "The failing test passes; the others keep passing.",
    "sketch": "Correct the comparison in is_adult.",
    "subgoals": ["is_adult(18) is True"],
}
_LOG_LINES = [
    "##[group]Run pytest -q",
    "pytest -q",
    "shell: /usr/bin/bash -e {0}",
    "##[endgroup]",
    "============================= test session starts ==============================",
    "collected 3 items",
    "",
    "tests/test_rules.py F..                                                  [100%]",
    "",
    "=================================== FAILURES ===================================",
    "____________________________ test_eighteen_is_adult ____________________________",
    "",
    "    def test_eighteen_is_adult():",
    ">       assert is_adult(18)",
    "E       assert False",
    "",
    "tests/test_rules.py:5: AssertionError",
    "=========================== short test summary info ============================",
    f"FAILED {TARGET} - assert False",
    "========================= 1 failed, 2 passed in 0.02s ==========================",
    "##[error]Process completed with exit code 1.",
]
PYTEST_LOG = "".join(
    f"2024-03-01T12:00:{i // 10:02d}.{i % 10}000000Z {line}\n" for i, line in enumerate(_LOG_LINES)
)
"""A GitHub Actions log of the fixture's failing pytest step."""


def fixture_files() -> dict[str, str]:
    """The boundary fixture's files, as the fake GitHub serves them to ``clone``."""
    root = FIXTURES / "boundary"
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in root.rglob("*") if p.is_file()}


def patch_reply(
    edits: list[dict[str, Any]], explanation: str = "Include ADULT_AGE itself."
) -> Callable[[Any], Reply]:
    """The model: a plan when asked for one, else ``edits`` as the patch."""

    def model(body: Any) -> Reply:
        choice = body.get("tool_choice") or {}
        if choice.get("name") == "submit_plan":
            return Reply.tool("submit_plan", PLAN, input_tokens=900, output_tokens=60)
        return Reply.tool(
            "propose_patch", {"explanation": explanation, "edits": edits}, input_tokens=1200, output_tokens=80
        )

    return model


@dataclass
class World:
    """The pipeline's dependencies over fakes at the edges, and the model server."""

    deps: Deps
    gh: FakeGitHubGateway
    store: Store
    server: FakeAnthropicServer
    queued: list[JobRequest] = field(default_factory=list)

    def drain(self) -> list[str]:
        """Run the follow-up jobs (publishing) the attempt queued."""
        outcomes = []
        while self.queued:
            outcomes.append(pipeline.dispatch(self.deps, self.queued.pop(0)))
        return outcomes

    def prompts(self) -> str:
        """Everything the model server received (system, context, messages), as one text."""
        return "\n\n".join(r.prompt_text for r in self.server.message_requests)

    def issue(self, number: int = 42, sender: str = "maintainer") -> str:
        """Label issue ``number`` for ARCS and run the repair."""
        job = JobRequest(
            "repair_issue",
            {
                "repo": REPO,
                "installation_id": 7,
                "issue_number": number,
                "title": "t",
                "label": "arcs",
                "sender": sender,
            },
            idempotency_key=f"issue:{REPO}#{number}:d-1",
        )
        return pipeline.repair_issue(self.deps, job)

    def revise(self, instructions: str, number: int = 100) -> str:
        """``/arcs revise <instructions>`` by a maintainer on ARCS' pull request ``number``."""
        self.gh.pull_requests[number] = PullRequestInfo(
            number, SHA, "arcs/fix/main", "main", f"https://github.test/{REPO}/pull/{number}", head_repo=REPO
        )
        command = {"verb": "revise", "tier": "small", "budget_usd": None, "iterations": None}
        job = JobRequest(
            "handle_command",
            {
                "repo": REPO,
                "installation_id": 7,
                "delivery_id": "d-2",
                "issue_number": number,
                "is_pull_request": True,
                "comment_id": 9001,
                "author": "maintainer",
                "command": {**command, "instructions": instructions},
                "error": None,
                "refusal": None,
            },
            idempotency_key=f"cmd:{REPO}:9001",
        )
        return pipeline.handle_command(self.deps, job)

    def ci_failure(self, run_id: int = 555) -> str:
        """A failed workflow run of ``SHA`` on ``main`` (its log: :data:`PYTEST_LOG`)."""
        self.gh.logs[run_id] = PYTEST_LOG
        job = JobRequest(
            "repair_ci_failure",
            {
                "repo": REPO,
                "installation_id": 7,
                "delivery_id": "d-1",
                "source": "workflow_run",
                "run_id": run_id,
                "head_sha": SHA,
                "head_branch": "main",
                "conclusion": "failure",
                "pull_requests": [],
                "retry_of": None,
            },
            context={"delivery_id": "d-1", "repo": REPO},
            idempotency_key=f"ci:{REPO}:workflow_run:{run_id}",
        )
        return pipeline.repair_ci_failure(self.deps, job)


@pytest.fixture
def world(settings: Settings, tmp_path: Path, migrated_db: Path) -> Iterator[World]:
    """A :class:`World` whose repository asks for the ``small`` tier (the model proposes first)."""
    with serving(api_key="sk-test") as server:
        llm_settings = settings.model_copy(
            update={
                "anthropic_api_key": SecretStr("sk-test"),
                "anthropic_base_url": server.base_url,
                "model": "claude-haiku-4-5",
            }
        )
        gh = FakeGitHubGateway(files=fixture_files(), config=RepoConfig(extra={"tier": "small"}))
        gh.heads["main"] = SHA
        shutil.copyfile(migrated_db, tmp_path / "arcs.db")
        store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}", upgrade=False)
        runner = FakeRunner().on("pytest", scripted_pytest)
        repair = FixRepairService(llm_settings, runner=runner, toolchains=(), use_index=False, parallel=1)
        queued: list[JobRequest] = []
        deps = Deps(
            settings=llm_settings,
            store=store,
            github=lambda _installation: gh,
            repair=repair,
            enqueue=queued.append,
            index=FakeIndexService(),
        )
        try:
            yield World(deps, gh, store, server, queued)
        finally:
            store.close()
