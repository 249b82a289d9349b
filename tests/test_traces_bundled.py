"""Bundled traces: present, valid for their cluster, and reproducible from their recipes
(the authors' trace, which has none, is labelled as their data)."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import pytest

from shockwave_gym.cli import main
from shockwave_gym.traces import (
    BUNDLED_GPUS,
    BUNDLED_RECIPES,
    bundled_command,
    bundled_traces,
    load_trace,
)
from shockwave_gym.traces.bundled import AUTHORS_TRACES

README = Path(__file__).resolve().parents[1] / "traces" / "README.md"
EXPECTED_JOBS = {
    "authors-canonical-120": 120,
    "canonical-analogue-120": 120,
    "teaching-12": 12,
    "scale-220": 220,
    "scale-460": 460,
    "scale-900": 900,
    "hetero-120": 120,
    "elastic-120": 120,
}


def test_bundled_set_is_documented():
    assert set(bundled_traces()) == set(BUNDLED_GPUS) == set(EXPECTED_JOBS)
    # every bundled trace is either ours (with a recipe) or the authors' (without one)
    assert set(BUNDLED_RECIPES) | set(AUTHORS_TRACES) == set(EXPECTED_JOBS)
    assert not set(BUNDLED_RECIPES) & set(AUTHORS_TRACES)
    package = importlib.resources.files("shockwave_gym.bundled_traces")
    assert package.joinpath("teaching-12.jsonl").is_file()
    assert package.joinpath("authors-canonical-120.trace").is_file()


@pytest.mark.parametrize("name", sorted(EXPECTED_JOBS))
def test_bundled_trace_loads_on_its_cluster(name):
    trace = load_trace(name, gpus=BUNDLED_GPUS[name])
    assert trace.name == name
    assert trace.num_jobs == EXPECTED_JOBS[name]
    assert max(job.gang for job in trace.jobs) <= BUNDLED_GPUS[name]


@pytest.mark.parametrize("name", sorted(BUNDLED_RECIPES))
def test_bundled_trace_regenerates_byte_for_byte(name, tmp_path, capsys):
    out = tmp_path / f"{name}.jsonl"
    assert main(["generate-trace", *BUNDLED_RECIPES[name], "--out", str(out)]) == 0
    assert out.read_bytes() == bundled_traces()[name].read_bytes()


@pytest.mark.skipif(not README.is_file(), reason="traces/README.md is not in an installed package")
def test_readme_lists_every_regeneration_command():
    text = README.read_text(encoding="utf-8")
    for name in EXPECTED_JOBS:
        assert f"`{name}` | {EXPECTED_JOBS[name]} | {BUNDLED_GPUS[name]} |" in text
    for name in BUNDLED_RECIPES:
        assert bundled_command(name) in text
    for name in AUTHORS_TRACES:
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
        assert "the authors' data" in row and "not generated" in row


def test_authors_trace_says_it_is_their_data():
    for name in AUTHORS_TRACES:
        command = bundled_command(name)
        assert command.startswith("not generated, the authors' data")
        assert "generate-trace" not in command and "bundle_reference_data.py" in command


def test_teaching_trace_is_short():
    trace = load_trace("teaching-12")
    assert max(job.duration_s for job in trace.jobs) <= 3600
    assert trace.jobs[-1].arrival_s < 1200


def test_elastic_trace_is_the_canonical_analogue_with_half_its_jobs_elastic():
    """elastic-120: canonical-analogue-120's jobs (same seed), 60 of them declared elastic."""
    elastic, rigid = load_trace("elastic-120"), load_trace("canonical-analogue-120")
    assert sum(bool(job.gangs) for job in elastic.jobs) == 60
    assert all(job.gangs in ((), (1, 2, 4, 8)) for job in elastic.jobs)
    assert [job.job_type for job in elastic.jobs] == [job.job_type for job in rigid.jobs]
    assert [job.total_iterations for job in elastic.jobs] == [job.total_iterations for job in rigid.jobs]
