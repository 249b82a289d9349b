"""What ``Agent.act`` may return (``shockwave_agents.base.Decision``), each form played through
:func:`~shockwave_gym.runner.run_episode`: job ids as a list or an array, a ``Placement``, a
``{job_id: type}`` mapping by name or by index. On a heterogeneous cluster the last two place
the jobs where they say; on a homogeneous one only their ids count."""

from __future__ import annotations

import typing

import numpy as np
import pytest

from shockwave_agents.base import Agent, Decision
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.jobs import JobSpec
from shockwave_gym.placement import Placement
from shockwave_gym.runner import run_episode
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs
from shockwave_gym.traces import Trace

RATES = {"v100": 10.0, "p100": 5.0}  # ResNet-18 at batch size 50: 100 s per epoch on a V100


def _trace() -> Trace:
    jobs = [JobSpec(job_id=j, model="ResNet-18", initial_batch_size=50, total_iterations=3000, gang=1,
                    mode="static", arrival_s=0.0) for j in range(2)]
    return Trace("decision-forms", tuple(jobs))


def _tables() -> TypedThroughputs:
    return TypedThroughputs({t: ThroughputTable({("ResNet-18", 50, 1): r}, f"test {t}") for t, r in RATES.items()})


class _Returns(Agent):
    """Runs every active job each round, in the form ``form`` (job 0 on the slow p100 when the
    form says where jobs go)."""

    def __init__(self, form: str):
        self.form = form

    def act(self, view) -> Decision:
        ids = [int(j) for j in view.active_job_ids]
        slow = {j: (1 if j == 0 else 0) for j in ids}  # type index: 0 v100, 1 p100
        return {
            "list": ids,
            "array": np.asarray(ids, dtype=np.int64),
            "placement": Placement(np.asarray(ids, np.int64), np.asarray([slow[j] for j in ids], np.int64)),
            "mapping-by-name": {j: ("p100" if t else "v100") for j, t in slow.items()},
            "mapping-by-index": slow,
        }[self.form]


FORMS = ("list", "array", "placement", "mapping-by-name", "mapping-by-index")


def test_the_alias_names_every_form():
    assert {typing.get_origin(arg) or arg for arg in typing.get_args(Decision)} >= {
        np.ndarray, Placement, typing.get_origin(typing.Sequence[int]), typing.get_origin(typing.Mapping[int, str])}


@pytest.mark.parametrize("form", FORMS)
def test_each_form_places_jobs_on_a_heterogeneous_cluster(form):
    config = SimConfig(cluster=ClusterSpec.parse("v100=1,p100=1"))
    outcome = run_episode(_trace(), _Returns(form), config, _tables(), progress=False)
    result = outcome.result
    first_ids, first_types = result.round_job_ids[0].tolist(), result.round_gpu_types[0].tolist()
    if form in ("list", "array"):  # the default rule, in the order given: job 0 takes the free V100
        assert dict(zip(first_ids, first_types, strict=True)) == {0: 0, 1: 1}
    else:  # as placed: job 0 on the P100
        assert dict(zip(first_ids, first_types, strict=True)) == {0: 1, 1: 0}
    assert np.isfinite(result.completion_s).all()


@pytest.mark.parametrize("form", FORMS)
def test_on_a_homogeneous_cluster_only_the_ids_count(form):
    table = _tables().table("v100")
    outcome = run_episode(_trace(), _Returns(form), SimConfig(2), table, progress=False)
    reference = run_episode(_trace(), _Returns("list"), SimConfig(2), table, progress=False)
    assert outcome.result.completion_s.tolist() == reference.result.completion_s.tolist()
    assert outcome.result.round_job_ids[0].tolist() == [0, 1]
