"""Fidelity of the six Gavel-family baselines to the authors' simulator (issue acceptance).

On the authors' canonical trace (bundled as ``authors-canonical-120``) with the built-in V100
table (32 GPUs), each baseline's makespan and average JCT must lie within +-10% of the authors'
results (bundled, :mod:`shockwave_gym.reference`); where two baselines' authors' makespans
differ by more than 3%, ours must order them the same way; and our per-job JCTs must rank like
theirs (Spearman). JCT is compared on the authors' basis, from arrival: their trace driver
records each job's arrival time as its start (docs/METRICS.md).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.stats import spearmanr

from shockwave_agents import make_agent
from shockwave_gym.reference import authors_canonical
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import load_trace

BASELINES = ("allox", "gandiva_fair", "gavel", "mst", "ossp", "themis")
BAND = 0.10


@pytest.fixture(scope="module")
def authors():
    return authors_canonical()


@functools.cache
def _canonical():
    table = ThroughputTable.builtin("v100")
    return load_trace("authors-canonical-120", table, gpus=32), table


@functools.cache
def _episode(name: str):
    trace, table = _canonical()
    return run_episode(trace, make_agent(name), SimConfig(gpus=32), table, progress=False)


class _Episodes:
    """Episodes by agent name, run on first use (each xdist worker runs only what it needs)."""

    def __getitem__(self, name: str):
        return _episode(name)


@pytest.fixture(scope="module")
def ours() -> _Episodes:
    return _Episodes()


@pytest.mark.parametrize("name", BASELINES)
def test_makespan_and_avg_jct_within_ten_percent(name, ours, authors):
    metrics, reference = ours[name].metrics, authors.policy(name)
    assert metrics["completed_jobs"] == 120
    assert metrics["makespan_s"] == pytest.approx(reference.makespan_s, rel=BAND)
    # JCT from arrival, the authors' basis (their driver stores the arrival as the start)
    assert metrics["avg_jct_s"] == pytest.approx(reference.avg_jct_s, rel=BAND)


@pytest.mark.parametrize("name", BASELINES)
def test_per_job_jcts_rank_like_the_authors(name, ours, authors):
    reference = np.asarray(authors.policy(name).jct_s)
    rho = spearmanr(ours[name].result.jct_s, reference).statistic
    assert rho >= 0.85, f"{name}: Spearman {rho:.3f}"


def test_makespans_keep_the_authors_order_where_they_differ_by_over_three_percent(ours, authors):
    names = BASELINES
    checked = 0
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ref_a, ref_b = (authors.policy(n).makespan_s for n in (a, b))
            if abs(ref_a - ref_b) / min(ref_a, ref_b) <= 0.03:
                continue
            checked += 1
            ours_a, ours_b = (ours[n].metrics["makespan_s"] for n in (a, b))
            assert (ours_a < ours_b) == (ref_a < ref_b), f"{a} vs {b}"
    assert checked >= 5  # OSSP against every other, at least


def test_gavel_matches_the_authors_on_the_arrival_basis(ours, authors):
    """Gavel, the authors' reference policy: avg JCT 11,254 s from arrival against their
    11,274 s (-0.2%); from admission (11,200 s) the gap is over three times larger."""
    metrics, reference = ours["gavel"].metrics, authors.policy("gavel")
    arrival_gap = abs(metrics["avg_jct_s"] / reference.avg_jct_s - 1.0)
    admission_gap = abs(metrics["avg_jct_admission_s"] / reference.avg_jct_s - 1.0)
    assert arrival_gap <= 0.005 and admission_gap > 3 * arrival_gap


def test_gavel_new_arrivals_wait_for_the_second_recompute(ours):
    # docs/SEMANTICS.md M1: jobs arriving at 172-1179 s first run at 1200 s while 26 of 32 GPUs idle
    result = ours["gavel"].result
    first_run = {}
    for start, ids in zip(result.round_start_s.tolist(), result.round_job_ids, strict=True):
        for job_id in ids.tolist():
            first_run.setdefault(job_id, start)
    waiting = np.flatnonzero((result.arrival_s >= 172.0) & (result.arrival_s <= 1179.0))
    assert waiting.size > 0 and {first_run[j] for j in waiting.tolist()} == {1200.0}
    idle_rounds = (result.round_start_s >= 240.0) & (result.round_start_s < 1200.0)
    assert np.all(result.round_gpus_busy[idle_rounds] == 6)
