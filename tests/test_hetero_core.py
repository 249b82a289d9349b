"""The heterogeneous simulator, view API and metrics (docs/HETEROGENEOUS.md)."""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.hetero_simulator import HeteroSimulator, make_simulator
from shockwave_gym.jobs import JobSpec
from shockwave_gym.metrics import compute_metrics
from shockwave_gym.placement import Placement
from shockwave_gym.simulator import Simulator
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs

# ResNet-18 at batch size 50: 50,000 / 50 = 1000 iterations per epoch.
# V100 10 it/s -> 100 s per epoch; P100 5 it/s -> 200 s; K80 2 it/s -> 500 s.
RATES = {"v100": 10.0, "p100": 5.0, "k80": 2.0}


def _tables(rates=RATES, extra=None):
    tables = {}
    for t, r in rates.items():
        entries = {("ResNet-18", 50, 1): r}
        entries.update((extra or {}).get(t, {}))
        tables[t] = ThroughputTable(entries, f"test {t}")
    return TypedThroughputs(tables)


def _job(job_id=0, epochs=3, arrival=0.0, batch=50, gang=1):
    return JobSpec(job_id=job_id, model="ResNet-18", initial_batch_size=batch, total_iterations=1000 * epochs,
                   gang=gang, mode="static", arrival_s=arrival)


def _sim(jobs, cluster="v100=1,p100=1,k80=1", tables=None, **config):
    return HeteroSimulator(jobs, SimConfig(cluster=ClusterSpec.parse(cluster), **config), tables or _tables())


def test_golden_job_moving_between_types():
    """Hand-computed: 3 epochs of 100 s (V100) / 200 s (P100) / 500 s (K80), 120 s rounds,
    20 s restart overhead. Rounds: p100, k80 (moved: pays 20), k80 (stays), v100 (moved:
    pays 20), v100 (finishes)."""
    sim = _sim([_job()])
    view = sim.view
    assert sim.static.isolated_time_s[0] == 300.0
    # round 0 on p100: 120 s of its 200 s epoch 0 = 60% of epoch 0 -> 60 s of V100 work
    sim.step({0: "p100"})
    assert sim.work_done_s[0] == pytest.approx(60.0)
    assert view.last_type.tolist() == [1]
    assert view.epoch_progress[0] == pytest.approx(0.6)
    # round 1 on k80: moved, pays 20 s; 100 s of k80 time: epoch 0 at 300 + 100 = 400 of 500 s
    record = sim.step({0: "k80"})
    assert record.overhead_s.tolist() == [20.0]
    assert sim.work_done_s[0] == pytest.approx(80.0)
    # round 2 stays on k80: no overhead; 400 + 120 = 520 k80 s: 20 s into epoch 1 (of 500)
    record = sim.step(Placement([0], [2]))
    assert record.overhead_s.tolist() == [0.0]
    assert sim.work_done_s[0] == pytest.approx(104.0)
    assert view.epochs_done[0] == 1
    # round 3 on v100: moved, pays 20; 100 s of V100 work
    record = sim.step({0: 0})
    assert record.overhead_s.tolist() == [20.0]
    assert sim.work_done_s[0] == pytest.approx(204.0)
    # round 4 stays on v100: 96 s left, the round ends when the job does
    record = sim.step({0: "v100"})
    assert sim.done
    assert record.end_s == pytest.approx(480.0 + 96.0)
    result = sim.result()
    assert result.completion_s[0] == pytest.approx(576.0)
    assert [r.gpu_types.tolist() for r in sim.history] == [[1], [2], [2], [0], [0]]
    metrics = compute_metrics(result)
    # per type: held seconds / (1 GPU x 576 s); work = held - overhead
    assert metrics["busy_utilization_p100"] == pytest.approx(120.0 / 576.0)
    assert metrics["utilization_k80"] == pytest.approx((100.0 + 120.0) / 576.0)
    assert metrics["busy_utilization_v100"] == pytest.approx((120.0 + 96.0) / 576.0)
    assert metrics["cluster"] == "v100=1,p100=1,k80=1"


def test_golden_finish_on_a_slow_type_is_timed_on_that_type():
    """One 100 s (V100) epoch on a K80 takes 500 s: 4 full rounds, then 20 s."""
    sim = _sim([_job(epochs=1)])
    for _ in range(5):
        sim.step({0: "k80"})
    assert sim.done
    assert sim.completion_s[0] == pytest.approx(500.0)
    assert [float(r.overhead_s[0]) for r in sim.history] == [0.0] * 5


def test_default_rule_places_in_the_given_order_on_the_fastest_type_with_room():
    jobs = [_job(0), _job(1), _job(2)]
    sim = _sim(jobs)
    sim.step([2, 0, 1])  # job 2 first: v100; job 0: p100; job 1: k80
    assert sim.view.last_type.tolist() == [1, 2, 0]
    assert sim.history[-1].job_ids.tolist() == [0, 1, 2]  # the record is by ascending id
    assert sim.history[-1].gpu_types.tolist() == [1, 2, 0]


def test_default_rule_error_names_the_job_that_fits_no_type():
    sim = _sim([_job(0), _job(1)], cluster="v100=1")
    with pytest.raises(InvalidActionError, match="selection needs 2 GPUs"):
        sim.step([0, 1])
    # 4 GPUs asked of 5, but after job 0 takes 2 of the 3 V100s no type has 2 free
    sim = _sim([_job(0, gang=2), _job(1, gang=2)], cluster="v100=3,p100=1,k80=1",
               tables=_tables(extra={t: {("ResNet-18", 50, 2): 2 * r} for t, r in RATES.items()}))
    with pytest.raises(InvalidActionError, match=r"job 1 \(gang 2\) fits no GPU type.*v100=1, p100=1, k80=1"):
        sim.step([0, 1])


def test_explicit_placement_is_checked_per_type():
    sim = _sim([_job(0), _job(1)], cluster="v100=1,p100=1")
    with pytest.raises(InvalidActionError, match="needs 2 v100 GPUs; the cluster has 1"):
        sim.step({0: "v100", 1: "v100"})
    with pytest.raises(InvalidActionError, match="unknown GPU type 'k80'"):
        sim.step({0: "k80"})
    with pytest.raises(InvalidActionError, match="index 0..1"):
        sim.step({0: 5})
    with pytest.raises(InvalidActionError, match="not active"):
        HeteroSimulator([_job(0), _job(1, arrival=1000.0)], SimConfig(cluster=ClusterSpec.parse("v100=2")),
                        _tables()).step({1: "v100"})


def test_runnable_mask_and_placement_on_a_type_without_rates():
    tables = _tables()
    tables = TypedThroughputs({"v100": tables.table("v100"), "p100": tables.table("p100"),
                               "k80": ThroughputTable({("ResNet-18", 64, 1): 1.0}, "k80 without bs 50")})
    sim = _sim([_job(0), _job(1)], tables=tables)
    assert sim.view.runnable.tolist() == [[True, True, False], [True, True, False]]
    assert sim.view.throughput_by_type[0].tolist() == [10.0, 5.0, 0.0]
    assert np.isinf(sim.view.epoch_duration_by_type_s[0, 2])
    with pytest.raises(InvalidActionError, match="cannot run on k80"):
        sim.step({0: "k80"})
    with pytest.raises(InputError, match="can run on no GPU type"):
        _sim([_job(0)], cluster="k80=2", tables=tables)


def test_view_per_type_api_on_both_paths():
    jobs = [_job(0), _job(1)]
    homogeneous = Simulator(jobs, SimConfig(gpus=2), _tables().reference)
    view = homogeneous.view
    assert view.cluster == ClusterSpec.homogeneous(2) and not view.heterogeneous
    assert view.type_gpus.tolist() == [2]
    assert view.runnable.shape == (2, 1) and view.runnable.all()
    assert view.last_type.tolist() == [-1, -1]
    homogeneous.step([1])
    assert view.last_type.tolist() == [-1, 0]
    assert view.throughput_by_type[:, 0].tolist() == view.current_throughput.tolist()
    assert view.busy_gpus_by_type_last_round.tolist() == [1]
    hetero = _sim(jobs)
    hv = hetero.view
    assert hv.heterogeneous and hv.cluster.types == ("v100", "p100", "k80")
    assert hv.type_gpus.tolist() == [1, 1, 1]
    assert hv.throughput_by_type.tolist() == [[10.0, 5.0, 2.0]] * 2
    assert hv.epoch_duration_by_type_s[0].tolist() == [100.0, 200.0, 500.0]
    hetero.step({0: "k80", 1: "p100"})
    assert hv.last_type.tolist() == [2, 1]
    assert hv.busy_gpus_by_type_last_round.tolist() == [0, 1, 1]
    with pytest.raises(ValueError):
        hv.throughput_by_type[0, 0] = 1.0  # read-only
    # the information boundary holds on the heterogeneous path too
    from shockwave_gym.view import OracleAccessError

    with pytest.raises(OracleAccessError):
        hv.isolated_time_s  # noqa: B018


def test_v100_only_cluster_is_bit_identical_step_by_step():
    """Same trace, same selections: every state array equal bit for bit."""
    from shockwave_gym.traces import load_trace

    trace = load_trace("teaching-12", gpus=4)
    a = Simulator(trace.jobs, SimConfig(gpus=4))
    b = make_simulator(trace.jobs, SimConfig(cluster=ClusterSpec.parse("v100=4")))
    assert isinstance(b, HeteroSimulator)
    rng = np.random.default_rng(0)
    while not a.done:
        active = a.active_job_ids()
        order = rng.permutation(active)
        chosen, free = [], 4
        for j in order.tolist():
            if a.static.gang[j] <= free:
                chosen.append(j)
                free -= int(a.static.gang[j])
        a.step(chosen)
        b.step(chosen)
        for name in ("work_done_s", "run_time_s", "completion_s", "epoch_pos", "last_overhead_s"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert a.time_s == b.time_s
    ra, rb = compute_metrics(a.result()), compute_metrics(b.result())
    assert {k: rb[k] for k in ra} == ra
    np.testing.assert_array_equal(b.result().ftf_isolated_time_s, a.result().isolated_time_s)


def test_config_cluster_and_gpus_must_agree():
    assert SimConfig(cluster=ClusterSpec.parse("v100=2,k80=3")).gpus == 5
    assert SimConfig(gpus=5, cluster=ClusterSpec.parse("v100=2,k80=3")).heterogeneous
    assert SimConfig(gpus=4).cluster_spec == ClusterSpec.homogeneous(4)
    with pytest.raises(InputError, match="disagrees"):
        SimConfig(gpus=4, cluster=ClusterSpec.parse("v100=2,k80=3"))
    with pytest.raises(InputError, match="needs gpus"):
        SimConfig()


def test_fair_isolated_time_is_the_equal_share_mix():
    """w = (1/3, 1/3, 1/3): each epoch at (10 + 5 + 2) / 3 it/s -> 1000 / (17/3) s per epoch."""
    sim = _sim([_job(epochs=3)])
    fair = sim.typed.fair_isolated_time_s[0]
    assert fair == pytest.approx(3 * 1000.0 / (17.0 / 3.0))


def test_typed_throughputs_from_gavel_json(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"v100": {"(\'ResNet-18 (batch size 50)\', 1)": {"null": 10.0}},'
                    ' "k80": {"(\'ResNet-18 (batch size 50)\', 1)": {"null": 2.0}}}')
    bundle = TypedThroughputs.from_gavel_json(path)
    assert bundle.types == ("k80", "v100")
    assert bundle.table("k80").rate("ResNet-18", 50, 1) == 2.0
    with pytest.raises(InputError, match="p100"):
        TypedThroughputs.resolve(str(path), ("v100", "p100"))
    path.write_text('{"k80": {}}')
    with pytest.raises(InputError, match="no worker type 'v100'"):
        TypedThroughputs.from_gavel_json(path)
