"""The perfect stand-in model: the local Anthropic-compatible server answering as an oracle.

:class:`OracleModel` is a ``dynamic`` reply function for :class:`tests.fakes.anthropic_server.
FakeAnthropicServer` (reached through the real ``anthropic`` SDK). It knows the case's true fix and
answers every ``propose_patch`` request with that fix **exactly when every line the fix changes was
shown in the request** (an evidence block covering it, :mod:`bench.context.visibility`), and with a
wrong edit otherwise (a ``replace`` whose ``old`` text is in no file, so it fails to apply and
costs no test run). A ``submit_plan`` request gets a generic one-subgoal plan that carries no
knowledge of the bug (its subgoals become retrieval queries; a plan naming the bug would leak the
answer into retrieval). Every request is logged with what it showed, so the bench measures the
proposer's actual context — what the SDK sent — and not what the loop meant to send.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bench.context.visibility import TargetLine, Visibility, visibility

if TYPE_CHECKING:
    from tests.fakes.anthropic_server import ErrorReply, Reply

_FIRST_FAILURE = re.compile(r"^Observed failures:\s*\n- (?P<test>[^\s:]+(?:::[^\s:]+)*)", re.M)


def plan_for(text: str) -> dict[str, Any]:
    """The oracle's plan: one subgoal naming the first failing test the request shows."""
    m = _FIRST_FAILURE.search(text)
    goal = f"The code under test in {m.group('test')}" if m else "The code the failing tests exercise"
    return {
        "contract": "The failing tests pass; the tests that passed keep passing.",
        "sketch": "Find the code the failing tests exercise and correct it.",
        "subgoals": [goal],
    }


WRONG_OLD = "<<the oracle was not shown the lines to change>>"
_FIRST_BLOCK = re.compile(r"^### (\S+?):\d+-\d+", re.M)


def request_text(body: Mapping[str, Any]) -> str:
    """System and message text of a ``/v1/messages`` body (tool results and text blocks)."""
    parts: list[str] = []
    system = body.get("system")
    if isinstance(system, str):
        parts.append(system)
    elif isinstance(system, list):
        parts.extend(str(b.get("text", "")) for b in system if isinstance(b, dict))
    for message in body.get("messages", []) or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            for b in content:
                if not isinstance(b, dict):
                    continue
                if isinstance(b.get("text"), str):
                    parts.append(b["text"])
                elif isinstance(b.get("content"), str):  # a tool_result
                    parts.append(b["content"])
    return "\n".join(parts)


@dataclass
class LoggedRequest:
    """One request the oracle answered."""

    tool: str
    chars: int
    """Characters of system + message text (what the model reads)."""
    text: str
    visibility: Visibility | None
    """None for requests other than ``propose_patch``."""
    answer: str
    """``plan``, ``fix``, ``wrong`` or ``unexpected``."""


@dataclass
class OracleModel:
    """Dynamic replies for one case (see the module docstring)."""

    targets: Sequence[TargetLine]
    fix_edits: Sequence[Mapping[str, Any]]
    log: list[LoggedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> Reply | ErrorReply:
        return self.answer(body, request_text(body))

    def answer(self, body: dict[str, Any], text: str, *, who: str = "oracle") -> Reply | ErrorReply:
        """The plan, or the true fix exactly when every target line is in ``text`` (else a wrong
        edit); ``who`` names the stand-in in the answer."""
        from tests.fakes.anthropic_server import Reply, bad_request

        choice = body.get("tool_choice") or {}
        tool = str(choice.get("name", "")) if isinstance(choice, dict) else ""
        offered = {str(t.get("name")) for t in body.get("tools") or () if isinstance(t, dict)}
        if isinstance(choice, dict) and choice.get("type") == "any":
            # Tools offered (#15): this answer never looks around (the explorer's calls come
            # first); the proposer's request offers propose_patch, the planner's submit_plan.
            tool = "propose_patch" if "propose_patch" in offered else "submit_plan"
        if tool == "submit_plan":
            self._log(LoggedRequest(tool, len(text), text, None, "plan"))
            return Reply.tool(tool, plan_for(text), output_tokens=60)
        if tool == "propose_patch":
            seen = visibility(self.targets, [text])
            if seen.all_shown:
                payload = {"explanation": f"The {who}'s fix.", "edits": [dict(e) for e in self.fix_edits]}
                answer = "fix"
            else:
                # The guess names the first file the request showed, never the fix's file: the
                # edit error is fed back (and retrieved with) in later rounds, so naming the true
                # file would leak the answer into the loop's next queries.
                m = _FIRST_BLOCK.search(text)
                path = m.group(1) if m else "README"
                edit = {"path": path, "kind": "replace", "old": WRONG_OLD, "new": "pass"}
                payload = {"explanation": "A guess: the lines to change were not shown.", "edits": [edit]}
                answer = "wrong"
            self._log(LoggedRequest(tool, len(text), text, seen, answer))
            return Reply.tool(tool, payload, output_tokens=max(16, len(json.dumps(payload)) // 4))
        self._log(LoggedRequest(tool or "none", len(text), text, None, "unexpected"))
        return bad_request(f"the {who} has no answer for tool {tool!r}")

    def _log(self, item: LoggedRequest) -> None:
        with self._lock:
            self.log.append(item)

    @property
    def proposals(self) -> list[LoggedRequest]:
        """The ``propose_patch`` requests, in the order they arrived."""
        return [r for r in self.log if r.tool == "propose_patch"]
