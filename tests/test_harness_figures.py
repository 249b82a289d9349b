"""The harness figures: every PNG is written, non-empty, of its fixed pixel size; the
utilization curve conserves GPU-seconds; edge cases draw without errors."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import harness_agents as helpers

from shockwave_gym.harness import HarnessWarning, evaluate, figures
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces import load_trace

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the PNG header, checking the signature and the IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE and head[12:16] == b"IHDR", path
    return struct.unpack(">II", head[16:24])


@pytest.fixture()
def figure_dir(tmp_path):
    out = tmp_path
    agents = helpers.three_agents()
    # agents[1] ignores the seed and runs once: its one cell stands for seed 1 too
    with pytest.warns(HarnessWarning, match="make no difference"):
        evaluate(agents, helpers.TRACE, seeds=helpers.SEEDS, out=out, workers=1, progress=False,
                 gantt=(agents[1], helpers.TRACE, 1))
    return out / "figures" / helpers.TRACE


def test_each_figure_is_a_png_of_the_expected_size_and_nothing_else_is_written(figure_dir):
    # one test, not one per file: the fixture would run again on each xdist worker
    assert sorted(p.name for p in figure_dir.iterdir()) == sorted(figures.FIGURE_FILES)
    for name in figures.FIGURE_FILES:
        assert (figure_dir / name).stat().st_size > 10_000, name  # drawn, not a blank stub
    for name, pixels in figures.FIGURE_PIXELS.items():
        assert png_size(figure_dir / name) == pixels, name
    # The Gantt chart: our width, and the height the renderer gives a 12-job trace.
    from shockwave_gym.gantt import gantt_figure

    result = run_episode(load_trace(helpers.TRACE), helpers.LifoAgent(), SimConfig(gpus=helpers.GPUS), progress=False).result
    width_in, height_in = gantt_figure(result, width_in=figures.GANTT_WIDTH_IN).get_size_inches()
    assert png_size(figure_dir / figures.GANTT) == (round(width_in * figures.DPI), round(height_in * figures.DPI))
    assert png_size(figure_dir / figures.GANTT)[0] == round(figures.GANTT_WIDTH_IN * figures.DPI)


def test_gantt_cell_is_the_one_asked_for(tmp_path, monkeypatch):
    drawn = []
    real = figures.gantt_figure
    monkeypatch.setattr(figures, "gantt_figure", lambda result, title, path: drawn.append((title, result)) or real(result, title, path))
    from shockwave_gym.cli import main

    code = main(["compare", "--agents", "fifo,test-lifo", "--traces", helpers.TRACE, "--seeds", "0", "1",
                 "--workers", "1", "--quiet", "--out", str(tmp_path), "--gantt", "test-lifo,,1"])
    assert code == 0
    ((title, result),) = drawn
    assert title == f"{helpers.TRACE}: test-lifo, seed 1"
    assert main(["compare", "--agents", "fifo", "--traces", helpers.TRACE, "--out", str(tmp_path),
                 "--gantt", "fifo,teaching-12,x"]) == 2
    direct = run_episode(load_trace(helpers.TRACE), helpers.LifoAgent(), SimConfig(gpus=helpers.GPUS), progress=False)
    np.testing.assert_array_equal(result.completion_s, direct.result.completion_s)


def test_utilization_curve_conserves_useful_gpu_seconds():
    trace = load_trace(helpers.TRACE)
    result = run_episode(trace, helpers.LifoAgent(), SimConfig(gpus=helpers.GPUS), progress=False).result
    centres, fraction = figures.utilization_curve(result, bins=50)
    width_s = result.round_end_s.max() / 50
    useful_gpu_s = float((result.gang * result.isolated_time_s).sum())  # all jobs finished
    assert fraction.sum() * width_s * result.gpus == pytest.approx(useful_gpu_s, rel=1e-9)
    assert fraction.min() >= 0 and fraction.max() <= 1 + 1e-9
    assert centres.size == 50 and np.all(np.diff(centres) > 0)


def test_relative_bars_draws_absolute_values_when_the_reference_is_zero(tmp_path):
    results = pd.DataFrame({
        "trace": ["t"] * 4, "agent": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1],
        "makespan_s": [100.0, 110.0, 90.0, 95.0], "avg_jct_s": [50.0, 55.0, 60.0, 61.0],
        "worst_ftf": [1.0, 1.1, 2.0, 2.2], "unfair_fraction": [0.0, 0.0, 0.25, 0.5],
        "rho_mean": [1.0, 1.02, 1.3, 1.4], "rho_p95": [1.1, 1.1, 1.9, 2.0],
        "utilization": [0.8] * 4, "wall_s": [1.0] * 4,
    })
    from shockwave_gym.harness.summary import summarise

    summary = summarise(results, "a")
    assert np.isnan(summary.loc[summary["agent"] == "b", "unfair_fraction_rel"]).all()
    assert summary.loc[summary["agent"] == "b", "makespan_s_rel"].item() == pytest.approx(92.5 / 105)
    path = figures.relative_bars(summary, results, "a", "t", tmp_path / "relative_bars.png")
    assert png_size(path) == figures.FIGURE_PIXELS["relative_bars.png"]
