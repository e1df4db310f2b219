"""``bot.worker_wiring``: the worker's composition root builds plain values ``jobs.worker`` runs on."""

from __future__ import annotations

import pickle
from pathlib import Path

from bot.settings import load_settings
from bot.worker_wiring import default_wiring, worker_spec
from jobs.broker import BrokerConfig


def test_the_worker_spec_is_built_from_settings_and_survives_spawn(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "ARCS_HOME": str(tmp_path),
            "ARCS_BROKER_URL": "redis://broker:6379/0",
            "ARCS_BROKER_REQUEUE_S": "30",
        }
    )
    spec = worker_spec(settings)
    assert spec.broker == BrokerConfig(url="redis://broker:6379/0", requeue_s=30.0)
    # A multi-process worker pickles the spec into each spawned child.
    copy = pickle.loads(pickle.dumps(spec))
    assert copy.broker == spec.broker
    assert copy.wiring.func is default_wiring and copy.wiring.args[0].home == settings.home
    assert copy.on_start is not None
