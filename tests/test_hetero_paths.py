"""Heterogeneous runs end to end: progress map on real (batch-size changing) jobs, the CLI's
--cluster, the harness, the generator and the bundled pair."""

from __future__ import annotations

import json

import numpy as np
import pytest

from shockwave_gym.cli import main
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError
from shockwave_gym.hetero_simulator import HeteroSimulator
from shockwave_gym.throughput import TypedThroughputs
from shockwave_gym.traces import (
    BUNDLED_CLUSTERS,
    BUNDLED_GPUS,
    GeneratorConfig,
    generate_trace,
    load_trace,
    resolve_cluster,
)
from shockwave_gym.traces.generator import v100_equivalent_gpus

CLUSTER = ClusterSpec.parse("v100=12,p100=12,k80=12")


def _adaptive_jobs(n=6):
    """Jobs of the bundled pair whose batch size changes during the run."""
    from dataclasses import replace

    from shockwave_gym.profile import job_profile
    from shockwave_gym.throughput import ThroughputTable

    trace = load_trace("hetero-120", gpus=36)
    table = ThroughputTable.builtin()
    jobs = [job for job in trace.jobs if np.unique(job_profile(job, table).batch_sizes).size > 1][:n]
    assert len(jobs) == n

    return [replace(job, job_id=i, arrival_s=0.0) for i, job in enumerate(jobs)]


@pytest.mark.parametrize("gpu_type", ["v100", "p100", "k80"])
def test_a_job_alone_on_one_type_takes_exactly_its_type_time(gpu_type):
    """Staying on one type pays no restart, so a job completes at the sum of its epoch
    durations on that type, across its batch-size changes."""
    from dataclasses import replace

    checked = 0
    for job in _adaptive_jobs(3):
        job = replace(job, job_id=0)
        sim = HeteroSimulator([job], SimConfig(cluster=CLUSTER))
        t = CLUSTER.index(gpu_type)
        if not sim.typed.runnable[0, t] or CLUSTER.count(gpu_type) < job.gang:
            continue
        while not sim.done:
            sim.step({0: gpu_type})
        assert sim.completion_s[0] == pytest.approx(sim.typed.isolated_time_s[0, t], rel=1e-12)
        assert sim.work_done_s[0] == sim.static.isolated_time_s[0]
        assert len(set(sim.static.epoch_batch_size.tolist())) > 1
        checked += 1
    assert checked >= 2


def test_the_progress_map_round_trips_on_every_type():
    jobs = _adaptive_jobs()
    sim = HeteroSimulator(jobs, SimConfig(cluster=CLUSTER))
    s, typed = sim.static, sim.typed
    rng = np.random.default_rng(0)
    for j in range(len(jobs)):
        for t in range(3):
            if not typed.runnable[j, t]:
                continue
            work = np.sort(rng.uniform(0, s.isolated_time_s[j], size=20))
            ids = np.full(work.size, j)
            types = np.full(work.size, t)
            pos = sim._epoch_position(s.job_base_s[ids], work)
            tau, total = typed.to_type_time(s, ids, types, work, pos)
            assert np.all(np.diff(tau) >= 0) and np.all(tau <= total)
            back = typed.to_reference_work(s, ids, types, tau)
            np.testing.assert_allclose(back, work, rtol=1e-9, atol=1e-6)


def test_a_job_switching_types_every_round_completes_at_the_hand_sum():
    """Alternating v100 / k80 each round: each round after the first pays 20 s; the job's
    type-time bookkeeping must add up to its completion time."""
    job = _adaptive_jobs(1)[0]
    sim = HeteroSimulator([job], SimConfig(cluster=CLUSTER))
    names = ["v100", "k80"]
    k = 0
    while not sim.done:
        sim.step({0: names[k % 2]})
        k += 1
    overhead = sum(float(r.overhead_s[0]) for r in sim.history)
    assert overhead == 20.0 * sum(1 for r in sim.history[1:] if r.overhead_s[0] > 0)
    assert all(r.overhead_s[0] == 20.0 for r in sim.history[1:-1])  # every move but a short last one
    run = sum(float(r.run_s[0]) for r in sim.history)
    assert sim.completion_s[0] == pytest.approx(run, rel=1e-12)
    # between the pure-V100 and pure-K80 times, plus the overheads
    iso_v, iso_k = sim.typed.isolated_time_s[0, 0], sim.typed.isolated_time_s[0, 2]
    assert iso_v + overhead < sim.completion_s[0] < iso_k + overhead


def test_cli_run_takes_cluster_and_the_bundled_pair_default(capsys):
    assert main(["run", "--agent", "fifo", "--trace", "hetero-120", "--json", "--progress-every-s", "0"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert default["cluster"] == BUNDLED_CLUSTERS["hetero-120"] and default["gpus"] == 36
    assert main(["run", "--agent", "fifo", "--trace", "hetero-120", "--cluster", "k80=12,v100=12,p100=12",
                 "--json", "--progress-every-s", "0"]) == 0
    explicit = json.loads(capsys.readouterr().out)
    assert explicit["makespan_s"] == default["makespan_s"]
    assert main(["run", "--agent", "fifo", "--trace", "hetero-120", "--gpus", "36", "--json",
                 "--progress-every-s", "0"]) == 0
    homogeneous = json.loads(capsys.readouterr().out)
    assert "cluster" not in homogeneous and homogeneous["makespan_s"] != default["makespan_s"]
    assert main(["run", "--agent", "fifo", "--trace", "teaching-12", "--gpus", "4", "--cluster", "v100=5"]) == 2
    assert "--gpus 4 and --cluster v100=5 (5 GPUs) disagree" in capsys.readouterr().err


def test_resolve_cluster_rules():
    assert resolve_cluster("teaching-12", None, None) == (4, None)
    assert resolve_cluster("teaching-12", 8, None) == (8, None)
    assert resolve_cluster("teaching-12", None, "v100=2,k80=2") == (4, ClusterSpec.parse("v100=2,k80=2"))
    assert resolve_cluster("hetero-120", None, None) == (36, CLUSTER)
    assert BUNDLED_GPUS["hetero-120"] == CLUSTER.total
    with pytest.raises(InputError, match="disagree"):
        resolve_cluster("teaching-12", 3, "v100=2,k80=2")
    with pytest.raises(InputError, match="unknown GPU type"):
        resolve_cluster("teaching-12", None, "a100=4")


def test_compare_runs_heterogeneous_cells_and_saves_them(tmp_path, capsys):
    from shockwave_gym.harness import evaluate
    from shockwave_gym.harness.records import result_from_json, result_to_json

    out = tmp_path / "cmp"
    results = evaluate(["fifo", "gavel"], ["teaching-12"], cluster="v100=2,p100=1,k80=2", out=out, workers=1,
                       figures=False, progress=False)
    assert set(results["cluster"]) == {"v100=2,p100=1,k80=2"}
    again = evaluate(["fifo", "gavel"], ["teaching-12"], cluster="v100=2,p100=1,k80=2", out=out, workers=1,
                     figures=False, progress=False)
    assert again["makespan_s"].tolist() == results["makespan_s"].tolist()
    # a homogeneous cell is keyed apart from the one-type heterogeneous one
    from shockwave_gym.harness.grid import build_cells, resolve_agents

    refs = resolve_agents(["fifo"], None)
    trace = load_trace("teaching-12", gpus=4)
    from shockwave_gym.throughput import ThroughputTable

    table = ThroughputTable.builtin()
    homogeneous = build_cells(refs, [(trace, 4)], [0], table)[0]
    one_type = build_cells(refs, [(trace, 4)], [0], table, clusters=[ClusterSpec.parse("v100=4")])[0]
    assert homogeneous.key_hash != one_type.key_hash
    assert "cluster" not in homogeneous.key["sim_config"]
    # the per-type result survives the record round trip
    from shockwave_agents import make_agent
    from shockwave_gym.runner import run_episode

    result = run_episode(trace, make_agent("fifo"), one_type.config, one_type.throughputs, progress=False).result
    back = result_from_json(json.loads(json.dumps(result_to_json(result))))
    assert back.gpu_types == ("v100",) and back.type_gpus == (4,)
    np.testing.assert_array_equal(back.fair_isolated_time_s, result.fair_isolated_time_s)
    assert [t.tolist() for t in back.round_gpu_types] == [t.tolist() for t in result.round_gpu_types]


def test_generator_cluster_feasibility_and_load():
    typed = TypedThroughputs.builtin()
    equivalent = v100_equivalent_gpus(CLUSTER, typed)
    # geometric-mean speed-ups of the built-in tables: p100 1.0682, k80 0.3003 (docs/HETEROGENEOUS.md)
    assert equivalent == pytest.approx(12 * (1.0 + 1.0681965388 + 0.3003183884), rel=1e-9)
    config = GeneratorConfig(num_jobs=60, seed=3, cluster="k80=8", arrival_rate_per_gpu_hour=2.8125)
    trace = generate_trace(config)
    sim = HeteroSimulator(trace.jobs, SimConfig(cluster=ClusterSpec.parse("k80=8")))  # every job can run
    assert sim.typed.runnable.all()
    gaps = np.diff([job.arrival_s for job in trace.jobs])
    rate = 3600.0 / gaps.mean()
    assert rate == pytest.approx(2.8125 * v100_equivalent_gpus(ClusterSpec.parse("k80=8"), typed), rel=0.35)
    assert "cluster='k80=8'" in trace.source
    plain = GeneratorConfig(num_jobs=5, seed=1)
    assert "cluster" not in plain.describe()  # homogeneous configs describe themselves as before
    with pytest.raises(InputError, match="needs a cluster"):
        GeneratorConfig(num_jobs=5, seed=1, arrival_rate_per_gpu_hour=2.0)
