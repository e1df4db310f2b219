"""Deterministic record/replay of model calls, and the replay proposer.

:class:`RecordingLLM` wraps any :class:`~jobs.repair.llm.LLM` and keeps, per call, the request
fingerprint, the raw response body and its usage (or the error). :class:`ReplayLLM` serves those
records in order without a network: the request at position ``i`` must have the fingerprint
recorded at ``i``, otherwise :class:`ReplayDivergence` is raised. The fingerprint is the sha256
of the canonical JSON of (model, system, messages, tools) — see
:func:`jobs.repair.llm.request_fingerprint` — so it is stable across processes and machines.

A divergence is not model trouble; it means the run being replayed differs from the recorded
one (code, prompts, evidence or budget changed), so it is raised even through proposers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import cast

from jobs.repair.budget import Budget
from jobs.repair.llm import (
    LLM,
    LLMError,
    LLMErrorKind,
    LLMRequest,
    LLMResponse,
    parse_message,
    request_fingerprint,
)
from jobs.repair.model import Proposal, Usage
from jobs.repair.ports import ProposalRequest
from jobs.repair.pricing import PriceTable
from jobs.repair.proposers.anthropic import VARIANTS, AnthropicProposer

END_OF_RECORDING = "<end of recording>"


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One recorded model call: its request fingerprint and either the raw response or the error."""

    fingerprint: str
    model: str
    purpose: str = ""
    raw: str = ""
    usage: Usage = field(default_factory=Usage)
    attempts: int = 1
    price_estimated: bool = False
    error_kind: str = ""
    """Set when the call raised :class:`LLMError` (then ``raw`` is empty)."""
    error_message: str = ""
    error_retryable: bool = False
    error_status: int | None = None

    def to_json(self) -> dict[str, object]:
        """A JSON-serializable mapping."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> CallRecord:
        """Inverse of :meth:`to_json`."""
        usage = data.get("usage") or {}
        if not isinstance(usage, Mapping):
            raise ValueError("record usage must be an object")
        status = data.get("error_status")
        return cls(
            fingerprint=str(data["fingerprint"]),
            model=str(data["model"]),
            purpose=str(data.get("purpose", "")),
            raw=str(data.get("raw", "")),
            usage=Usage(
                input_tokens=_int(usage.get("input_tokens")),
                output_tokens=_int(usage.get("output_tokens")),
                cache_read_tokens=_int(usage.get("cache_read_tokens")),
                cache_write_tokens=_int(usage.get("cache_write_tokens")),
                usd=float(cast(float, usage.get("usd", 0.0))),
                calls=_int(usage.get("calls")),
            ),
            attempts=_int(data.get("attempts", 1)),
            price_estimated=bool(data.get("price_estimated", False)),
            error_kind=str(data.get("error_kind", "")),
            error_message=str(data.get("error_message", "")),
            error_retryable=bool(data.get("error_retryable", False)),
            error_status=None if status is None else _int(status),
        )


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer in a call record, got {value!r}")
    return value


def dump_records(records: Iterable[CallRecord]) -> str:
    """Records as JSON Lines."""
    return "".join(json.dumps(r.to_json(), sort_keys=True, ensure_ascii=False) + "\n" for r in records)


def load_records(text: str) -> list[CallRecord]:
    """Parse :func:`dump_records` output."""
    return [CallRecord.from_json(json.loads(line)) for line in text.splitlines() if line.strip()]


class ReplayDivergence(Exception):
    """The replayed run asked for something other than what was recorded at this position."""

    def __init__(
        self, call_index: int, expected_fingerprint: str, got_fingerprint: str, purpose: str = ""
    ) -> None:
        super().__init__(
            f"replay diverged at call {call_index}{f' ({purpose})' if purpose else ''}: "
            f"recorded {expected_fingerprint[:16]}, got {got_fingerprint[:16]}"
        )
        self.call_index = call_index
        self.expected_fingerprint = expected_fingerprint
        self.got_fingerprint = got_fingerprint
        self.purpose = purpose


class RecordingLLM:
    """Passes calls to ``inner`` and records each one (successes and :class:`LLMError` failures)."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.records: list[CallRecord] = []

    @property
    def model(self) -> str:
        """The inner model id."""
        return self.inner.model

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Forward ``request`` and record the outcome."""
        fingerprint = request_fingerprint(self.model, request)
        try:
            response = self.inner.complete(request)
        except LLMError as exc:
            self.records.append(
                CallRecord(
                    fingerprint,
                    self.model,
                    request.purpose,
                    attempts=exc.attempts,
                    error_kind=exc.kind,
                    error_message=exc.message,
                    error_retryable=exc.retryable,
                    error_status=exc.status,
                )
            )
            raise
        self.records.append(
            CallRecord(
                fingerprint,
                self.model,
                request.purpose,
                raw=response.raw,
                usage=response.usage,
                attempts=response.attempts,
                price_estimated=response.price_estimated,
            )
        )
        return response


class ReplayLLM:
    """Serves recorded calls in order; raises :class:`ReplayDivergence` on any mismatch."""

    def __init__(self, records: Iterable[CallRecord], *, model: str | None = None) -> None:
        self.records: tuple[CallRecord, ...] = tuple(records)
        self._model = model or (self.records[0].model if self.records else "replay")
        self.position = 0
        """Index of the next record to serve."""

    @property
    def model(self) -> str:
        """The recorded model id (part of every fingerprint)."""
        return self._model

    @property
    def exhausted(self) -> bool:
        """Every record was served."""
        return self.position >= len(self.records)

    def complete(self, request: LLMRequest) -> LLMResponse:
        """The next recorded response (or error) if ``request`` matches its fingerprint."""
        got = request_fingerprint(self._model, request)
        index = self.position
        if index >= len(self.records):
            raise ReplayDivergence(index, END_OF_RECORDING, got, request.purpose)
        record = self.records[index]
        if record.fingerprint != got:
            raise ReplayDivergence(index, record.fingerprint, got, request.purpose)
        self.position += 1
        if record.error_kind:
            raise LLMError(
                cast(LLMErrorKind, record.error_kind),
                record.error_message,
                retryable=record.error_retryable,
                status=record.error_status,
                attempts=record.attempts,
            )
        response = parse_message(record.raw, default_model=record.model)
        # The recorded accounting wins over today's price table: a replay must be exact.
        return replace(
            response, usage=record.usage, attempts=record.attempts, price_estimated=record.price_estimated
        )


class ReplayProposer:
    """A :class:`~jobs.repair.ports.Proposer` that replays a recorded :class:`AnthropicProposer` run.

    It runs the same prompt construction over a :class:`ReplayLLM`, so the proposals (edits,
    explanations, variants, usage, raw) equal the recorded ones, and any change in what would
    be asked raises :class:`ReplayDivergence`. Proposals keep ``proposer="anthropic"``.
    """

    name = "replay"

    def __init__(
        self,
        records: Iterable[CallRecord],
        *,
        model: str | None = None,
        variants: Sequence[str] = VARIANTS,
        context_chars: int = 60_000,
        max_output_tokens: int = 8_192,
        min_output_tokens: int = 1_024,
        price_table: PriceTable | None = None,
    ) -> None:
        self.llm = ReplayLLM(records, model=model)
        self._inner = AnthropicProposer(
            self.llm,
            variants=variants,
            context_chars=context_chars,
            max_output_tokens=max_output_tokens,
            min_output_tokens=min_output_tokens,
            price_table=price_table,
        )

    @property
    def last_errors(self) -> list[LLMError]:
        """Recorded errors replayed by the latest :meth:`propose`."""
        return self._inner.last_errors

    def propose(self, request: ProposalRequest, remaining: Budget) -> list[Proposal]:
        """Replay the proposals of the recorded run for ``request``."""
        return self._inner.propose(request, remaining)


__all__ = [
    "END_OF_RECORDING",
    "CallRecord",
    "RecordingLLM",
    "ReplayDivergence",
    "ReplayLLM",
    "ReplayProposer",
    "dump_records",
    "load_records",
]
