"""Golden elastic runs with hand-computed times (docs/SEMANTICS.md, "Elastic jobs"): one job
moving 1 -> 4 -> 2 GPUs across a batch-size change, on one GPU type and on two.

Table rates are chosen so every duration is an exact binary fraction. ResNet-18 (50,000
samples): an epoch is 1562.5 iterations at batch size 32 and 781.25 at 64. The mode below
runs batch size 32 for epochs 0-1 and 64 afterwards. Rounds of 120 s, restart 20 s.
"""

import numpy as np
import pytest

from shockwave_gym.adaptation import register_mode
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.elastic import Allocation, ElasticSimulator
from shockwave_gym.hetero_simulator import make_simulator
from shockwave_gym.jobs import JobSpec
from shockwave_gym.metrics import compute_metrics
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs

register_mode(
    "test-elastic-golden",
    lambda job, epoch: 32 if epoch < 2 else 64,
    reachable=lambda job: (32, 64),
    overwrite=True,
)

V100 = ThroughputTable({
    ("ResNet-18", 32, 1): 10.0, ("ResNet-18", 32, 2): 18.0, ("ResNet-18", 32, 4): 32.0,
    ("ResNet-18", 64, 1): 6.0, ("ResNet-18", 64, 2): 12.5, ("ResNet-18", 64, 4): 20.0,
})
P100 = ThroughputTable({
    ("ResNet-18", 32, 1): 8.0, ("ResNet-18", 32, 2): 12.5, ("ResNet-18", 32, 4): 16.0,
    ("ResNet-18", 64, 1): 4.0, ("ResNet-18", 64, 2): 6.25, ("ResNet-18", 64, 4): 10.0,
})


def _job(epochs: int) -> JobSpec:
    # ceil(50000 / 32) = 1563 iterations per epoch at the initial size
    return JobSpec(job_id=0, model="ResNet-18", initial_batch_size=32, total_iterations=1563 * epochs,
                   gang=1, mode="test-elastic-golden", arrival_s=0.0, gangs=(1, 2, 4))


def _rounds(sim, actions):
    records = [sim.step(action) for action in actions]
    return ([r.run_s.tolist() for r in records], [r.overhead_s.tolist() for r in records],
            [r.gpu_counts.tolist() for r in records], records)


def test_one_type_1_4_2():
    sim = make_simulator([_job(6)], SimConfig(gpus=4), V100)
    assert isinstance(sim, ElasticSimulator)
    assert sim.view.allowed_counts(0) == (1, 2, 4)
    # round 0 (0-120): 1 GPU, no restart in the first round: 1200 of epoch 0's 1562.5 iterations
    # round 1 (120-240): 4 GPUs, a count change pays 20 s; 100 s at 32 it/s: epoch 0's last
    #   362.5 iterations (11.328125 s), epoch 1 (48.828125 s), then batch size 64 at 20 it/s:
    #   epoch 2 (39.0625 s) and 0.78125 s = 15.625 iterations of epoch 3
    # round 2 (240-360): 2 GPUs, pays 20 s again; 100 s at 12.5 it/s: epoch 3's last 765.625
    #   iterations (61.25 s), then 38.75 s = 484.375 iterations of epoch 4
    # round 3 (360-): 2 GPUs again, no restart: epoch 4's last 296.875 iterations (23.75 s) and
    #   epoch 5 (62.5 s): done 86.25 s in, at 446.25 s; the round ends there
    runs, overheads, counts, records = _rounds(sim, [{0: 1}, {0: 4}, Allocation([0], [2]), {0: 2}])
    assert counts == [[1], [4], [2], [2]]
    assert overheads == [[0.0], [20.0], [20.0], [0.0]]
    assert runs[:3] == [[120.0], [120.0], [120.0]]
    assert runs[3][0] == pytest.approx(86.25, abs=1e-9)
    assert [r.gpus_busy for r in records] == [1, 4, 2, 2]
    assert sim.done and sim.completion_s[0] == pytest.approx(446.25, abs=1e-9)
    assert records[-1].end_s == pytest.approx(446.25, abs=1e-9)
    metrics = compute_metrics(sim.result())
    assert metrics["avg_jct_s"] == pytest.approx(446.25, abs=1e-9)


def test_one_type_epoch_positions_follow_the_counts():
    sim = make_simulator([_job(6)], SimConfig(gpus=4), V100)
    sim.step({0: 1})
    assert sim.view.epochs_done[0] == 0
    sim.step({0: 4})
    assert sim.view.epochs_done[0] == 3 and sim.view.current_batch_size[0] == 64
    sim.step({0: 2})
    assert sim.view.epochs_done[0] == 4
    # GPU-seconds held: 120 x 1 + 120 x 4 + 120 x 2
    assert sim.gpu_time_s[0] == pytest.approx(840.0)


def test_two_types_1_4_2():
    cluster = ClusterSpec.from_counts({"v100": 4, "p100": 4})
    tables = TypedThroughputs({"v100": V100, "p100": P100})
    sim = make_simulator([_job(4)], SimConfig(cluster=cluster), tables)
    # round 0 (0-120): 1 V100: 1200 iterations of epoch 0
    # round 1 (120-240): 4 P100s (type and count change: 20 s); 100 s at 16 it/s: epoch 0's
    #   last 362.5 iterations (22.65625 s), then 77.34375 s = 1237.5 iterations of epoch 1
    # round 2 (240-360): 2 P100s (count change: 20 s); 100 s: epoch 1's last 325 iterations
    #   at 12.5 it/s (26 s), then batch size 64 at 6.25 it/s: 74 s = 462.5 iterations of epoch 2
    # round 3 (360-480): 2 P100s, no restart: epoch 2's last 318.75 iterations (51 s), then
    #   69 s = 431.25 iterations of epoch 3
    # round 4 (480-): epoch 3's last 350 iterations: 56 s; done at 536 s
    actions = [{0: ("v100", 1)}, {0: ("p100", 4)}, Allocation([0], [2], [1]), {0: (1, 2)}, {0: ("p100", 2)}]
    runs, overheads, counts, records = _rounds(sim, actions)
    assert counts == [[1], [4], [2], [2], [2]]
    assert [r.gpu_types.tolist() for r in records] == [[0], [1], [1], [1], [1]]
    assert overheads == [[0.0], [20.0], [20.0], [0.0], [0.0]]
    assert runs[4][0] == pytest.approx(56.0, abs=1e-9)
    assert sim.done and sim.completion_s[0] == pytest.approx(536.0, abs=1e-9)
    metrics = compute_metrics(sim.result())
    assert metrics["utilization_p100"] is not None


def test_reference_count_by_default_and_rigid_equivalence():
    """Job ids alone run an elastic job at its reference count (its gang), exactly as the
    rigid job would run."""
    elastic = make_simulator([_job(6)], SimConfig(gpus=4), V100)
    rigid_job = JobSpec(**{**{f: getattr(_job(6), f) for f in JobSpec.__slots__ if f != "gangs"}})
    rigid = make_simulator([rigid_job], SimConfig(gpus=4), V100)
    while not rigid.done:
        a, b = elastic.step([0]), rigid.step([0])
        assert a.run_s.tolist() == b.run_s.tolist() and a.overhead_s.tolist() == b.overhead_s.tolist()
    assert elastic.done and elastic.completion_s.tolist() == rigid.completion_s.tolist()
    assert np.array_equal(elastic.work_done_s, rigid.work_done_s)
