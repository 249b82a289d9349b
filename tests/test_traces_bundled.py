"""Bundled traces: present, valid for their cluster, and reproducible from their recipes."""

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

README = Path(__file__).resolve().parents[1] / "traces" / "README.md"
EXPECTED_JOBS = {
    "canonical-analogue-120": 120,
    "teaching-12": 12,
    "scale-220": 220,
    "scale-460": 460,
    "scale-900": 900,
}


def test_bundled_set_is_documented():
    assert set(bundled_traces()) == set(BUNDLED_GPUS) == set(BUNDLED_RECIPES) == set(EXPECTED_JOBS)
    package = importlib.resources.files("shockwave_gym.bundled_traces")
    assert package.joinpath("teaching-12.jsonl").is_file()


@pytest.mark.parametrize("name", sorted(EXPECTED_JOBS))
def test_bundled_trace_loads_on_its_cluster(name):
    trace = load_trace(name, gpus=BUNDLED_GPUS[name])
    assert trace.name == name
    assert trace.num_jobs == EXPECTED_JOBS[name]
    assert max(job.gang for job in trace.jobs) <= BUNDLED_GPUS[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_JOBS))
def test_bundled_trace_regenerates_byte_for_byte(name, tmp_path, capsys):
    out = tmp_path / f"{name}.jsonl"
    assert main(["generate-trace", *BUNDLED_RECIPES[name], "--out", str(out)]) == 0
    assert out.read_bytes() == bundled_traces()[name].read_bytes()


@pytest.mark.skipif(not README.is_file(), reason="traces/README.md is not in an installed package")
def test_readme_lists_every_regeneration_command():
    text = README.read_text(encoding="utf-8")
    for name in EXPECTED_JOBS:
        assert bundled_command(name) in text
        assert f"`{name}` | {EXPECTED_JOBS[name]} | {BUNDLED_GPUS[name]} |" in text


def test_teaching_trace_is_short():
    trace = load_trace("teaching-12")
    assert max(job.duration_s for job in trace.jobs) <= 3600
    assert trace.jobs[-1].arrival_s < 1200
