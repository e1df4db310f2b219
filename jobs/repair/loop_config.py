"""The loop's settings: :class:`LoopConfig` (recorded in the trace, so a replay rebuilds the same
loop) and :class:`GateConfig` (limits and path rules of the non-LLM gates)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from jobs.repair.gates import DEFAULT_DENIED

QualityMode = Literal["auto", "always", "never"]


@dataclass(frozen=True, slots=True)
class GateConfig:
    """Limits and path rules of the non-LLM gates."""

    max_files: int = 10
    max_lines: int = 400
    denied: tuple[str, ...] = DEFAULT_DENIED
    allowed: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class LoopConfig:
    """Controller settings (recorded in the trace so a replay rebuilds the same loop)."""

    gates: GateConfig = field(default_factory=GateConfig)
    test_timeout_s: float = 600.0
    """Wall-clock cap of one test run (further capped by the wall budget left). The reproduction
    run gets it whole; later runs get :attr:`timeout_factor` times the measured baseline duration,
    at least :attr:`timeout_floor_s` and at most this, so a hanging candidate costs seconds."""
    timeout_factor: float = 5.0
    timeout_floor_s: float = 10.0
    hang_probe_s: float = 30.0
    """Timeout of later runs while no run has completed (the baseline itself hung)."""
    pairs: int = 4
    """Tier 0: when no candidate of a round passes every gate, up to this many pairs of candidates
    that each fixed different targets are combined and tried (0: never)."""
    triage_runs: int = 2
    """Re-runs of the failing targets on the base code before repairing (0: no triage)."""
    regression_select: tuple[str, ...] | None = None
    """Test ids the regression gate runs (None: the full suite)."""
    quality_check: QualityMode = "auto"
    """``auto``: the Code Quality Checker runs for issue tasks with weak or synthesized tests."""
    design_tests: bool = True
    """Let the Test Designer write a reproduction test for issues without a failing test."""
    history_chars: int = 12_000
    evidence_chars: int = 40_000
    prompt_chars: int = 60_000
    llm_safety: float = 0.8
    """Share of the remaining tokens/USD a proposer is told it may spend (its input estimate is
    chars/4; the margin keeps the real spend under the bound)."""
    min_wall_s: float = 1.0
    """Reserve kept for the bookkeeping after a test run: a run is started only with at least
    twice this much wall budget left, and its timeout leaves this much over."""
    max_frame_context: int = 6
    soup_size: int = 2
    """Verified snippets kept in the knowledge soup."""
    parallel: int = 1
    """Target runs of up to this many candidates of a round execute concurrently. Batches are
    fixed before they run, so the trace does not depend on timing."""
    tools: bool = True
    """Offer the active-retrieval tools to the model in tiers whose ``tool_calls`` > 0
    (:mod:`jobs.repair.tools`). Traces recorded before tools existed replay with tools off."""
    tool_result_chars: int = 8_000
    """Characters of one tool result sent back to the model (longer ones are clipped)."""
    spectrum: bool = True
    """Trace the tests once (when the workbench can) and show the functions the failing tests ran
    and the passing ones did not (:mod:`jobs.repair.spectrum`) from the first round of a tier that
    retrieves. Traces recorded before the spectrum existed replay with it off."""
    spectrum_chars: int = 12_000
    """Characters of spectrum evidence per round (a share of :attr:`evidence_chars`)."""
    tier0_spectrum: bool = True
    """Tier 0 ranks its edit sites by the same traced run (issue #29). Traces recorded before
    replay with it off."""
    plausible_extra: int = 4
    """Tier 0 runs up to this many more candidates of the round after the first one that passes
    every gate, and the selection rule (:func:`jobs.repair.select.select_best`) picks among the
    plausible ones instead of the first (issue #29). Traces recorded before replay with 0."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "gates": {
                "max_files": self.gates.max_files,
                "max_lines": self.gates.max_lines,
                "denied": list(self.gates.denied),
                "allowed": None if self.gates.allowed is None else list(self.gates.allowed),
            },
            "test_timeout_s": self.test_timeout_s,
            "timeout_factor": self.timeout_factor,
            "timeout_floor_s": self.timeout_floor_s,
            "hang_probe_s": self.hang_probe_s,
            "pairs": self.pairs,
            "triage_runs": self.triage_runs,
            "regression_select": None if self.regression_select is None else list(self.regression_select),
            "quality_check": self.quality_check,
            "design_tests": self.design_tests,
            "history_chars": self.history_chars,
            "evidence_chars": self.evidence_chars,
            "prompt_chars": self.prompt_chars,
            "llm_safety": self.llm_safety,
            "min_wall_s": self.min_wall_s,
            "max_frame_context": self.max_frame_context,
            "soup_size": self.soup_size,
            "parallel": self.parallel,
            "tools": self.tools,
            "tool_result_chars": self.tool_result_chars,
            "spectrum": self.spectrum,
            "spectrum_chars": self.spectrum_chars,
            "tier0_spectrum": self.tier0_spectrum,
            "plausible_extra": self.plausible_extra,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoopConfig:
        """Inverse of :meth:`to_json` (unknown keys ignored, missing keys default)."""
        g = dict(data.get("gates", {}))
        default = cls()
        allowed = g.get("allowed")
        select = data.get("regression_select")
        return cls(
            gates=GateConfig(
                max_files=int(g.get("max_files", default.gates.max_files)),
                max_lines=int(g.get("max_lines", default.gates.max_lines)),
                denied=tuple(g.get("denied", default.gates.denied)),
                allowed=None if allowed is None else tuple(allowed),
            ),
            test_timeout_s=float(data.get("test_timeout_s", default.test_timeout_s)),
            timeout_factor=float(data.get("timeout_factor", default.timeout_factor)),
            timeout_floor_s=float(data.get("timeout_floor_s", default.timeout_floor_s)),
            hang_probe_s=float(data.get("hang_probe_s", default.hang_probe_s)),
            # Traces recorded before pairs existed never combined candidates.
            pairs=int(data.get("pairs", 0)),
            triage_runs=int(data.get("triage_runs", default.triage_runs)),
            regression_select=None if select is None else tuple(select),
            quality_check=data.get("quality_check", default.quality_check),
            design_tests=bool(data.get("design_tests", default.design_tests)),
            history_chars=int(data.get("history_chars", default.history_chars)),
            evidence_chars=int(data.get("evidence_chars", default.evidence_chars)),
            prompt_chars=int(data.get("prompt_chars", default.prompt_chars)),
            llm_safety=float(data.get("llm_safety", default.llm_safety)),
            min_wall_s=float(data.get("min_wall_s", default.min_wall_s)),
            max_frame_context=int(data.get("max_frame_context", default.max_frame_context)),
            soup_size=int(data.get("soup_size", default.soup_size)),
            parallel=int(data.get("parallel", default.parallel)),
            # Traces recorded before tools existed never offered any.
            tools=bool(data.get("tools", False)),
            tool_result_chars=int(data.get("tool_result_chars", default.tool_result_chars)),
            # Traces recorded before the spectrum existed never traced the tests.
            spectrum=bool(data.get("spectrum", False)),
            spectrum_chars=int(data.get("spectrum_chars", default.spectrum_chars)),
            # Traces recorded before #29: tier 0 never traced, and the first plausible candidate won.
            tier0_spectrum=bool(data.get("tier0_spectrum", False)),
            plausible_extra=int(data.get("plausible_extra", 0)),
        )


__all__ = ["GateConfig", "LoopConfig", "QualityMode"]
