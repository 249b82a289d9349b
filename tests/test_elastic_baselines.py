"""The elastic baselines against an independent brute-force optimum of their stated
objectives on small instances (docs/AGENTS.md, "Elastic baselines").

Instances: 2-4 elastic jobs drawn from the built-in tables (declared counts 1, 2, 4, 8), on
4-12 V100s, or on half V100s and half P100s. Brute force enumerates every allocation.
"""

import math
import random

import pytest
from helpers.elastic_instances import as_dict, best, elastic_view, speedups

from shockwave_agents import make_agent
from shockwave_agents.elastic.max_min import ElasticMaxMinAgent
from shockwave_agents.elastic.pollux import PolluxAgent, utility
from shockwave_agents.elastic.sia import SiaAgent
from shockwave_agents.elastic.srpt import ElasticSrptAgent
from shockwave_gym.cluster import ClusterSpec

MODELS = ([("ResNet-18", b) for b in (16, 32, 64, 128, 256)] + [("ResNet-50", b) for b in (16, 32, 64)]
          + [("Transformer", b) for b in (16, 32, 64, 128)] + [("LM", b) for b in (5, 10, 20, 40, 80)])


def _instances(seed: int, count: int, *, typed: bool = False, recommendation: bool = False):
    rng = random.Random(seed)
    models = MODELS + ([("Recommendation", 512)] if recommendation else [])
    for trial in range(count):
        jobs = [(*rng.choice(models), 1) for _ in range(rng.randint(2, 4))]
        gpus = rng.choice([4, 6, 8] if typed else [4, 6, 8, 12])
        hetero = typed and trial % 2 == 1
        cluster = ClusterSpec.from_counts({"v100": gpus // 2, "p100": gpus // 2}) if hetero else None
        yield jobs, gpus, cluster, rng


def test_pollux_equals_the_brute_force_optimum():
    """Greedy growth by gain per GPU misses this objective on 4 of these 60 instances
    (indices 1, 9, 15, 24: 0.888, 0.985, 0.989 and 0.963 of the optimum); the program
    reaches it on every one, and on the typed instances."""
    instances = [(index, jobs, gpus, cluster, rng) for index, (jobs, gpus, cluster, rng)
                 in enumerate(_instances(0, 60))] + \
                [(60 + index, jobs, gpus, cluster, rng) for index, (jobs, gpus, cluster, rng)
                 in enumerate(_instances(7, 20, typed=True))]
    for index, jobs, gpus, cluster, rng in instances:
        view = elastic_view(jobs, gpus, cluster)
        p = rng.choice([1.0, 0.5, 0.0, -1.0])
        table = speedups(view)

        def score(alloc, p=p, table=table):
            return math.fsum(utility(table[j][tc], p) for j, tc in alloc.items())

        optimum, _ = best(view, score, everyone=True)
        got = score(as_dict(PolluxAgent(p).act(view)))
        assert got == pytest.approx(optimum, rel=1e-9, abs=1e-9), index


def test_pollux_skips_a_negative_gain_and_jumps_over_it():
    # LM at batch size 5 on a V100: 133.8 it/s on 1 GPU, 125.6 on 2, 198.9 on 4
    two = elastic_view([("LM", 5, 1)], 2)
    assert as_dict(PolluxAgent(1.0).act(two)) == {0: (0, 1)}  # 2 GPUs are slower: stays on 1
    four = elastic_view([("LM", 5, 1)], 4)
    assert as_dict(PolluxAgent(1.0).act(four)) == {0: (0, 4)}  # 1 -> 4 over the slower 2


def test_pollux_fairness_power_spreads_gpus():
    view = elastic_view([("ResNet-18", 256, 1), ("LM", 80, 1)], 6)
    total = as_dict(PolluxAgent(1.0).act(view))
    fair = as_dict(PolluxAgent(-2.0).act(view))
    table = speedups(view)
    assert min(table[j][fair[j]] for j in fair) >= min(table[j][total[j]] for j in total)


@pytest.mark.parametrize("p", [1.0, 0.5, 0.25])
def test_sia_equals_the_brute_force_optimum(p):
    for jobs, gpus, cluster, _ in _instances(1, 20, typed=True, recommendation=True):
        view = elastic_view(jobs, gpus, cluster)
        table = speedups(view)

        def score(alloc, table=table):
            return math.fsum(table[j][tc] ** p for j, tc in alloc.items())

        optimum, _ = best(view, score)
        assert score(as_dict(SiaAgent(p=p).act(view))) == pytest.approx(optimum, abs=1e-7), (jobs, gpus, cluster)


def test_sia_restart_factor_keeps_a_running_configuration():
    from shockwave_gym.placement import Allocation

    view = elastic_view([("ResNet-18", 64, 1)], 8)
    sim = view._sim
    sim.step(Allocation([0], [4]))
    # speedup^0.5 on 8 GPUs (6.30 -> 2.510) beats 4 GPUs (3.40 -> 1.844) while the move
    # keeps more than 1.844 / 2.510 = 73.5% of it: at 0.2 off it moves, at 0.3 it stays
    assert as_dict(SiaAgent(restart=0.2).act(sim.view)) == {0: (0, 8)}
    assert as_dict(SiaAgent(restart=0.3).act(sim.view)) == {0: (0, 4)}


def test_elastic_max_min_equals_the_brute_force_leximin_pair():
    """The smallest speedup is the brute-force maximum, and the total is the largest among
    allocations reaching it (every job fits at its smallest count in these instances)."""
    for jobs, gpus, cluster, _ in _instances(2, 30, typed=True, recommendation=True):
        view = elastic_view(jobs, gpus, cluster)
        table = speedups(view)
        got = as_dict(ElasticMaxMinAgent().act(view))
        assert sorted(got) == sorted(table)  # everyone admitted

        def smallest(alloc, table=table):
            return min(table[j][tc] for j, tc in alloc.items())

        low, _ = best(view, smallest, everyone=True)
        top, _ = best(view, lambda a, low=low, table=table: (math.fsum(table[j][tc] for j, tc in a.items())
                                                             if smallest(a) >= low - 1e-9 else -math.inf),
                      everyone=True)
        assert smallest(got) == pytest.approx(low, abs=1e-9), (jobs, gpus, cluster)
        assert math.fsum(table[j][tc] for j, tc in got.items()) == pytest.approx(top, abs=1e-7)


def test_elastic_srpt_gives_the_shortest_job_its_largest_efficient_count():
    # ResNet-18 at 256: speedups over 1 GPU 1.92 (2), 3.72 (4), 7.04 (8)
    view = elastic_view([("ResNet-18", 256, 1), ("ResNet-18", 256, 1)], 8)
    assert as_dict(ElasticSrptAgent(efficiency=0.5).act(view)) == {0: (0, 8)}  # job 0 first, all 8
    # at 0.9, 8 GPUs (7.04 < 0.9 x 8) are not efficient, 4 are (3.72 >= 0.9 x 4): both get 4
    assert as_dict(ElasticSrptAgent().act(view)) == {0: (0, 4), 1: (0, 4)}
    # LM at 5 on 2 GPUs is slower than on 1: not efficient, so it keeps 1 and job 1 backfills
    view = elastic_view([("LM", 5, 1), ("LM", 5, 1)], 2)
    assert as_dict(ElasticSrptAgent().act(view)) == {0: (0, 1), 1: (0, 1)}


@pytest.mark.parametrize("name", ["pollux", "sia", "elastic-srpt", "elastic-max-min"])
def test_on_a_rigid_trace_every_job_gets_its_gang(name):
    from shockwave_gym.config import SimConfig
    from shockwave_gym.hetero_simulator import make_simulator
    from shockwave_gym.traces import load_trace

    trace = load_trace("teaching-12")
    sim = make_simulator(trace.jobs, SimConfig(gpus=4))
    agent = make_agent(name)
    agent.reset(sim.view)
    for _ in range(30):
        if sim.done:
            break
        action = agent.act(sim.view)
        if len(action):
            assert action.counts.tolist() == sim.static.gang[action.job_ids].tolist()
        sim.step(action)
