"""``arcs doctor`` recommends a Qdrant server once the embedded store holds many indexed chunks."""

from __future__ import annotations

from pathlib import Path

import pytest

import bot.doctor as doctor
from bot.settings import Settings
from tests.indexing.conftest import OpenIndex


def test_embedded_store_over_the_threshold_warns(
    settings: Settings, sample_repo: Path, open_index: OpenIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = open_index(sample_repo)
    chunks = index.refresh().chunks
    index.close()
    options = doctor.DoctorOptions()
    monkeypatch.setattr(doctor, "QDRANT_SERVER_POINTS", chunks)
    assert doctor.check_qdrant(settings, options).status == "ok"  # at the threshold: fine
    monkeypatch.setattr(doctor, "QDRANT_SERVER_POINTS", chunks - 1)
    result = doctor.check_qdrant(settings, options)
    assert result.status == "warn" and f"holds {chunks:,} indexed chunks" in result.summary
    assert "ARCS_QDRANT_URL" in (result.hint or "")
