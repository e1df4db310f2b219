"""Record/replay of model calls: equality of replayed proposals and divergence detection."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.llm_anthropic import AnthropicLLM
from jobs.repair.budget import Budget
from jobs.repair.llm import LLMRequest, Message, request_fingerprint
from jobs.repair.model import Evidence
from jobs.repair.ports import Proposer
from jobs.repair.proposers.anthropic import AnthropicProposer
from jobs.repair.proposers.replay import (
    END_OF_RECORDING,
    CallRecord,
    RecordingLLM,
    ReplayDivergence,
    ReplayLLM,
    ReplayProposer,
    dump_records,
    load_records,
)
from jobs.repair.roles import plan
from tests.fakes.anthropic_server import FakeAnthropicServer, Reply, auth_error, overloaded, serving
from tests.jobs.test_anthropic_proposer import GOOD_INPUT, make_request

MODEL = "claude-sonnet-4-6"
BUDGET = Budget(tokens=400_000, usd=2.0)
SECOND_INPUT = {
    "explanation": "Root cause: add() adds 1.",
    "edits": [{"path": "calc.py", "kind": "replace", "old": "a + b + 1", "new": "a + b"}],
}


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with serving() as srv:
        yield srv


@pytest.fixture
def recording(server: FakeAnthropicServer) -> Iterator[RecordingLLM]:
    with AnthropicLLM("sk-test", MODEL, base_url=server.base_url, sleep=lambda s: None) as client:
        yield RecordingLLM(client)


def record_round(server: FakeAnthropicServer, recording: RecordingLLM) -> list[object]:
    server.enqueue(
        Reply.tool(
            "propose_patch",
            GOOD_INPUT,
            input_tokens=2000,
            output_tokens=100,
            cache_creation_input_tokens=1500,
        ),
        overloaded(),
        Reply.tool(
            "propose_patch", SECOND_INPUT, input_tokens=500, output_tokens=90, cache_read_input_tokens=1500
        ),
    )
    return list(AnthropicProposer(recording).propose(make_request(n=2), BUDGET))


def test_replay_reproduces_the_recorded_proposals(
    server: FakeAnthropicServer, recording: RecordingLLM
) -> None:
    original = record_round(server, recording)
    assert len(original) == 2 and len(recording.records) == 2
    assert recording.records[1].attempts == 2  # the 529 retry is part of the record
    replayer = ReplayProposer(load_records(dump_records(recording.records)))
    assert isinstance(replayer, Proposer)
    replayed = replayer.propose(make_request(n=2), BUDGET)
    assert replayed == original
    assert replayer.llm.exhausted
    assert len(server.requests) == 3  # nothing new reached the server


def test_divergence_is_detected(server: FakeAnthropicServer, recording: RecordingLLM) -> None:
    record_round(server, recording)
    replayer = ReplayProposer(recording.records)
    extra = Evidence("new", "code", "new.py", 1, 1, "def new(): ...", score=1.0)
    changed = make_request(n=2, evidence=(extra,))
    with pytest.raises(ReplayDivergence) as exc_info:
        replayer.propose(changed, BUDGET)
    divergence = exc_info.value
    assert divergence.call_index == 0
    assert divergence.expected_fingerprint == recording.records[0].fingerprint
    assert divergence.got_fingerprint != divergence.expected_fingerprint
    assert divergence.purpose == "propose:minimal"


def test_asking_beyond_the_recording_diverges(server: FakeAnthropicServer, recording: RecordingLLM) -> None:
    record_round(server, recording)
    replayer = ReplayProposer(recording.records)
    with pytest.raises(ReplayDivergence) as exc_info:
        replayer.propose(make_request(n=3), BUDGET)
    assert exc_info.value.call_index == 2 and exc_info.value.expected_fingerprint == END_OF_RECORDING


def test_recorded_errors_are_replayed(server: FakeAnthropicServer, recording: RecordingLLM) -> None:
    server.enqueue(auth_error())
    proposer = AnthropicProposer(recording)
    assert proposer.propose(make_request(), BUDGET) == []
    (record,) = recording.records
    assert record.error_kind == "auth" and record.raw == "" and record.error_status == 401
    replayer = ReplayProposer(load_records(dump_records(recording.records)))
    assert replayer.propose(make_request(), BUDGET) == []
    assert [(e.kind, e.status, e.retryable) for e in replayer.last_errors] == [("auth", 401, False)]


def test_roles_replay_through_the_same_records(server: FakeAnthropicServer, recording: RecordingLLM) -> None:
    server.enqueue(Reply.tool("submit_plan", {"contract": "c", "sketch": "s", "subgoals": ["fix add"]}))
    task = make_request().task
    original = plan(recording, task)
    assert plan(ReplayLLM(recording.records), task) == original


def test_replay_llm_model_defaults_to_the_recording() -> None:
    assert ReplayLLM([CallRecord("f", "claude-haiku-4-5")]).model == "claude-haiku-4-5"
    assert ReplayLLM([], model="m").model == "m"
    assert ReplayLLM([]).exhausted


def test_load_records_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        load_records('{"fingerprint": "f", "model": "m", "attempts": "two"}\n')


def test_fingerprint_is_stable_across_processes(tmp_path: Path) -> None:
    req = LLMRequest(system="s", context="ctx ü", messages=(Message("user", "hi"),))
    script = (
        "from jobs.repair.llm import LLMRequest, Message, request_fingerprint\n"
        "print(request_fingerprint('m', LLMRequest(system='s', context='ctx \\u00fc', "
        "messages=(Message('user', 'hi'),))))\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == request_fingerprint("m", req)
