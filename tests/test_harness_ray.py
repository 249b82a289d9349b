"""The Ray backend gives exactly the process backend's results (a local Ray, 2 CPUs).

Skipped only when Ray is not installed (the ``ray`` extra: ``make install`` in a clone).
"""

from __future__ import annotations

import os

import pandas as pd
import pytest
from helpers import harness_agents as helpers

from shockwave_gym.harness import evaluate

ray = pytest.importorskip("ray", reason="Ray is not installed (the optional 'ray' extra: make install)")


def test_ray_backend_matches_process_backend(tmp_path, monkeypatch):
    # Ray workers must import the test agents' module; the local Ray started by the harness
    # passes this environment on to them.
    monkeypatch.setenv("PYTHONPATH", helpers.subprocess_env()["PYTHONPATH"])
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    agents = helpers.three_agents()
    kwargs = {"seeds": helpers.SEEDS, "progress": False, "figures": False}
    on_ray = evaluate(agents, helpers.TRACE, backend="ray", workers=2, out=tmp_path / "ray", **kwargs)
    assert not ray.is_initialized()  # the harness shut down the Ray it started
    in_pool = evaluate(agents, helpers.TRACE, backend="process", workers=2, out=tmp_path / "pool", **kwargs)
    columns = ["trace", "agent", "seed", "key_hash", *helpers.METRIC_COLUMNS]
    pd.testing.assert_frame_equal(on_ray[columns], in_pool[columns], check_exact=True)
    ray_jobs = pd.read_csv(tmp_path / "ray" / "jobs.csv")
    pool_jobs = pd.read_csv(tmp_path / "pool" / "jobs.csv")
    pd.testing.assert_frame_equal(ray_jobs, pool_jobs, check_exact=True)
    assert os.environ.get("RAY_ADDRESS") is None
