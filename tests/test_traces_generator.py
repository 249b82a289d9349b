"""The trace generator and the trace sources handed to the environment."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from shockwave_gym.errors import InputError
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import (
    FileTraceSource,
    GeneratedTraceSource,
    GeneratorConfig,
    TraceSource,
    generate_trace,
    load_trace,
    save_trace,
    validate_trace,
)
from shockwave_gym.traces.generator import TEMPLATE_BATCH_RANGES, templates
from shockwave_gym.traces.validation import job_problems


@pytest.fixture(scope="module")
def big_trace():
    return generate_trace(GeneratorConfig(num_jobs=2000, seed=7))


def test_same_config_gives_byte_identical_files_and_other_seeds_differ(tmp_path):
    paths = []
    for index, seed in enumerate((3, 3, 4)):
        trace = generate_trace(GeneratorConfig(num_jobs=60, seed=seed))
        paths.append(tmp_path / f"{index}.jsonl")
        save_trace(trace, paths[-1])
    first, again, other = (p.read_bytes() for p in paths)
    assert first == again
    assert first != other


def test_mix_order_does_not_matter():
    a = GeneratorConfig(num_jobs=30, seed=1, mode_mix={"gns": 0.5, "accordion": 0.5})
    b = GeneratorConfig(num_jobs=30, seed=1, mode_mix={"accordion": 0.5, "gns": 0.5})
    assert generate_trace(a).jobs == generate_trace(b).jobs


def test_every_generated_job_validates(big_trace, tmp_path):
    table = ThroughputTable.builtin_v100()
    assert all(job_problems(job, table) == [] for job in big_trace.jobs)
    path = tmp_path / "big.jsonl"
    save_trace(big_trace, path)
    assert validate_trace(path, gpus=8) == []
    assert load_trace(path).jobs == big_trace.jobs


def test_statistics_roughly_match_the_mixes(big_trace):
    jobs = big_trace.jobs
    n = len(jobs)
    assert jobs[0].arrival_s == 0.0
    mean_gap_s = (jobs[-1].arrival_s - jobs[0].arrival_s) / (n - 1)
    assert mean_gap_s == pytest.approx(40.0, rel=0.08)

    distributed = [j for j in jobs if j.model != "Recommendation"]
    gangs = Counter(j.gang for j in distributed)
    for gang, share in {1: 0.6, 2: 0.3, 4: 0.09, 8: 0.01}.items():
        assert gangs[gang] / len(distributed) == pytest.approx(share, abs=0.035)
    assert {j.gang for j in jobs if j.model == "Recommendation"} == {1}

    modes = Counter(j.mode for j in jobs)
    assert modes["gns"] / n == pytest.approx(0.5, abs=0.04)
    # accordion jobs under 1000 s become static: 2 of the 20 small candidates, so ~0.036
    assert modes["static"] / n == pytest.approx(0.5 * 0.72 * 2 / 20, abs=0.02)
    assert all(j.duration_s >= 1000 for j in jobs if j.mode == "accordion")
    assert all(j.duration_s < 1000 for j in jobs if j.mode == "static")

    # templates are uniform over (model, batch size): 23 with the built-in table
    per_template = Counter((j.model, j.initial_batch_size) for j in jobs)
    assert len(per_template) == 23
    assert max(per_template.values()) / min(per_template.values()) < 1.6

    candidates_s = np.linspace(0.2, 5.0, 100) * 3600
    durations_s = np.array([j.duration_s for j in jobs])
    index = np.abs(durations_s[:, None] - candidates_s[None, :]).argmin(axis=1)  # ms rounding
    shares = np.histogram(index, bins=[0, 20, 50, 90, 100])[0] / n
    np.testing.assert_allclose(shares, [0.72, 0.20, 0.05, 0.03], atol=0.03)


def test_iterations_follow_duration_and_isolated_rate(big_trace):
    table = ThroughputTable.builtin_v100()
    for job in big_trace.jobs[:200]:
        rate = table.rate(job.model, job.initial_batch_size, job.gang)
        assert job.total_iterations == max(1, round(job.duration_s * rate))


def test_templates_follow_the_table():
    table = ThroughputTable.builtin_v100()
    found = templates(table)
    assert ("Transformer", 256) not in found
    assert {m for m, _ in found} == set(TEMPLATE_BATCH_RANGES)
    sparse = ThroughputTable({("LM", 40, 1): 46.8, ("ResNet-50", 32, 1): 5.9}, "sparse")
    trace = generate_trace(GeneratorConfig(num_jobs=40, seed=2), sparse)
    # LM 40 under GNS reaches 80, and ResNet-50 32 under Accordion reaches 128: both
    # infeasible here, so those draws are redrawn and only feasible jobs remain.
    assert all(job_problems(job, sparse) == [] for job in trace.jobs)
    assert {j.gang for j in trace.jobs} == {1}
    assert "throughputs='sparse'" in trace.source


def test_impossible_table_is_an_input_error():
    with pytest.raises(InputError):
        generate_trace(GeneratorConfig(num_jobs=3, seed=0), ThroughputTable({}, "empty"))
    only_gang_8 = GeneratorConfig(num_jobs=3, seed=0, gang_mix={8: 1.0})
    with pytest.raises(InputError, match="no feasible job"):
        generate_trace(only_gang_8, ThroughputTable({("LM", 5, 1): 100.0}, "gang-1 only"))


@pytest.mark.parametrize("kwargs", [
    {"num_jobs": 0},
    {"seed": -1},
    {"arrival_rate_per_hour": 0.0},
    {"gang_mix": {3: 1.0}},
    {"gang_mix": {1: 0.5}},
    {"mode_mix": {"bogus": 1.0}},
    {"mode_mix": {"gns": -0.5, "static": 1.5}},
    {"min_duration_h": 2.0, "max_duration_h": 1.0},
    {"bucket_probs": (0.5, 0.5)},
    {"num_durations": 2},
])
def test_bad_configs_are_input_errors(kwargs):
    base = {"num_jobs": 5, "seed": 0}
    with pytest.raises(InputError):
        GeneratorConfig(**{**base, **kwargs})


def test_file_source_always_returns_the_same_trace():
    source = FileTraceSource("teaching-12")
    assert isinstance(source, TraceSource)
    rng = np.random.default_rng(0)
    assert source.sample(rng) is source.sample(rng)
    assert source.max_num_jobs == 12


def test_generated_source_is_driven_by_the_callers_rng():
    source = GeneratedTraceSource(
        GeneratorConfig(num_jobs=20, seed=0), num_jobs_range=(5, 15),
        arrival_rate_range_per_hour=(30.0, 300.0),
    )
    first = [source.sample(np.random.default_rng(11)) for _ in range(2)]
    assert first[0].jobs == first[1].jobs
    rng = np.random.default_rng(11)
    a, b = source.sample(rng), source.sample(rng)
    assert a.jobs != b.jobs
    assert all(5 <= t.num_jobs <= 15 for t in (a, b)) and source.max_num_jobs == 15
    with pytest.raises(InputError):
        GeneratedTraceSource(GeneratorConfig(num_jobs=5, seed=0), num_jobs_range=(10, 5))
