"""`shockwave-gym compare` / `shockwave_gym.evaluate`: schema, values against individual
runs, resume, --force, failures and input errors (teaching trace, three agents, two seeds)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import harness_agents as helpers

import shockwave_gym
from shockwave_gym.cli import main
from shockwave_gym.cli.run_command import RUN_JSON_KEYS
from shockwave_gym.errors import InputError
from shockwave_gym.harness import CellsFailed, HarnessWarning, evaluate
from shockwave_gym.harness.records import ID_COLUMNS

AGENTS = helpers.three_agents()


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def compare_argv(out: Path, *extra: str) -> list[str]:
    return ["compare", "--agents", ",".join(AGENTS), "--traces", helpers.TRACE,
            "--seeds", *map(str, helpers.SEEDS), "--out", str(out), "--no-figures", *extra]


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def records(out: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted((out / "cells").rglob("*.json"))}


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    code, stdout, stderr = run_cli(compare_argv(out, "--workers", "2"))
    assert code == 0, stderr
    return out, stdout, stderr


def test_results_csv_schema_one_row_per_cell(compared):
    out, stdout, _ = compared
    rows = read_csv(out / "results.csv")
    header = list(rows[0])
    assert header[:4] == list(ID_COLUMNS)
    for column in (*RUN_JSON_KEYS, *helpers.METRIC_COLUMNS, "seed", "wall_s", "decision_wall_s",
                   "version_shockwave_gym", "version_numpy", "version_python", "key_hash"):
        assert column in header, column
    assert [(r["agent"], int(r["seed"])) for r in rows] == helpers.expected_cells(AGENTS)
    for row in rows:
        assert row["trace"] == helpers.TRACE and int(row["gpus"]) == helpers.GPUS
        assert int(row["num_jobs"]) == int(row["completed_jobs"]) == 12 and row["truncated"] == "False"
        assert 0 < float(row["utilization"]) <= 1 and 0 <= float(row["unfair_fraction"]) <= 1
        assert float(row["wall_s"]) > 0 and row["version_shockwave_gym"] == shockwave_gym.__version__
    assert "normalised to the first agent, 'fifo'" in stdout  # no shockwave in this comparison
    summary = (out / "summary.md").read_text()
    assert "**fifo**" in summary and "normalised to the first agent" in summary
    assert summary.count(f"| {helpers.TRACE} |") == len(AGENTS)


def test_results_equal_individual_run_commands(compared, tmp_path):
    out, _, _ = compared
    rows = {(r["agent"], int(r["seed"])): r for r in read_csv(out / "results.csv")}
    jobs = read_csv(out / "jobs.csv")
    assert len(jobs) == len(rows) * 12
    assert {"trace", "agent", "seed", "job_id", "jct_s", "isolated_time_s", "ftf", "ftf_themis"} <= set(jobs[0])
    assert set(rows) == set(helpers.expected_cells(AGENTS))
    for agent in AGENTS:
        for seed in helpers.SEEDS:
            # an agent run once stands for every seed: each seed's own run must equal it
            shown = seed if agent in helpers.SEEDED else helpers.SEEDS[0]
            jobs_csv = tmp_path / f"{agent}-{seed}.csv"
            code, stdout, stderr = run_cli(["run", "--agent", agent, "--trace", helpers.TRACE,
                                            "--seed", str(seed), "--json", "--jobs-csv", str(jobs_csv)])
            assert code == 0, stderr
            single = json.loads(stdout)
            row = rows[(agent, shown)]
            for key in helpers.COMPARED:
                assert float(row[key]) == single[key], (agent, seed, key)  # exact: repr round trip
            mine = [j for j in jobs if j["agent"] == agent and int(j["seed"]) == shown]
            theirs = read_csv(jobs_csv)
            for column in ("job_id", "jct_s", "isolated_time_s", "ftf"):
                assert [float(j[column]) for j in mine] == [float(j[column]) for j in theirs], column
    # Seeds reach the agents: the random-order agent differs between seeds.
    assert rows[("test-random", 0)]["avg_jct_s"] != rows[("test-random", 1)]["avg_jct_s"]


def test_rerun_skips_every_finished_cell_and_force_recomputes(compared):
    out, _, _ = compared
    before = records(out)
    results_before = (out / "results.csv").read_bytes()
    assert len(before) == len(helpers.expected_cells(AGENTS))
    code, _, stderr = run_cli(compare_argv(out))
    assert code == 0
    assert f"resuming: {len(before)} of {len(before)} cells already saved" in stderr
    assert records(out) == before  # not one record rewritten
    assert (out / "results.csv").read_bytes() == results_before

    code, _, stderr = run_cli(compare_argv(out, "--force", "--workers", "1", "--quiet"))
    assert code == 0 and "resuming" not in stderr
    after = records(out)
    assert set(after) == set(before)
    assert all(after[p][1] != before[p][1] for p in before)  # every record rewritten
    old = pd.read_csv(io.BytesIO(results_before))
    new = pd.read_csv(out / "results.csv")
    pd.testing.assert_frame_equal(old[list(helpers.COMPARED)], new[list(helpers.COMPARED)], check_exact=True)


def test_evaluate_api_matches_the_cli_and_writes_nothing_without_out(compared, tmp_path, monkeypatch):
    out, _, _ = compared
    monkeypatch.chdir(tmp_path)
    assert shockwave_gym.evaluate is evaluate
    with pytest.warns(HarnessWarning, match=r"seeds 0, 1 make no difference for fifo, \w+ on teaching-12"):
        frame = evaluate(AGENTS, helpers.TRACE, seeds=helpers.SEEDS, workers=1, progress=False)
    assert list(tmp_path.iterdir()) == []
    assert frame.attrs["reference"] == "fifo" and "not among the results" in frame.attrs["reference_note"]
    cli = pd.read_csv(out / "results.csv")
    pd.testing.assert_frame_equal(frame[list(helpers.COMPARED)], cli[list(helpers.COMPARED)], check_dtype=False, check_exact=True)


def test_reference_agent_is_used_when_present(tmp_path):
    frame = evaluate(AGENTS, helpers.TRACE, seeds=0, reference=AGENTS[1], workers=1, progress=False,
                     out=tmp_path, figures=False)
    assert {k: frame.attrs[k] for k in ("reference", "reference_note")} == {"reference": AGENTS[1], "reference_note": ""}
    assert frame.attrs["run_now"] == set(frame["key_hash"])  # every cell was computed by this call
    summary = (tmp_path / "summary.md").read_text()
    assert f"**{AGENTS[1]}**" in summary and "Note:" not in summary
    line = next(text for text in summary.splitlines() if text.startswith(f"| {helpers.TRACE} | {AGENTS[1]} |"))
    # each ratio cell (makespan, JCT on both bases, mean and p95 fair-share rho, the paper's
    # two measures' worst and unfair) reads "(×1.00)", or "(×n/a)" where the reference's own
    # value is 0
    assert line.count("(×1.00)") + line.count("0.0% (×n/a)") == 9, line


def test_failing_cell_is_reported_and_the_others_are_kept(tmp_path):
    agents = {"fifo": "fifo", "broken": helpers.failing_agent}
    with pytest.raises(CellsFailed) as caught:  # even with the failing cell chosen for the Gantt
        evaluate(agents, helpers.TRACE, seeds=0, workers=2, out=tmp_path, progress=False, gantt=("broken",))
    assert list(caught.value.errors) == ["broken / teaching-12 / seed 0"]
    assert "broken on purpose" in caught.value.errors["broken / teaching-12 / seed 0"]
    assert list(caught.value.results["agent"]) == ["fifo"]
    assert [r["agent"] for r in read_csv(tmp_path / "results.csv")] == ["fifo"]
    assert (tmp_path / "figures" / helpers.TRACE / "gantt.png").is_file()  # drawn for fifo
    code, _, stderr = run_cli(["compare", "--agents", f"fifo,{helpers.module_spec('failing_agent')}",
                               "--traces", helpers.TRACE, "--out", str(tmp_path), "--no-figures"])
    assert code == 1 and "1 cell(s) failed (failing_agent / teaching-12 / seed 0)" in stderr
    assert "resuming: 1 of 2" in stderr  # fifo was not recomputed


def test_worker_processes_run_torch_with_one_thread():
    torch = pytest.importorskip("torch")
    threads_before = torch.get_num_threads()
    # two cells make a pool of two; only the probe's worker pays for importing torch
    frame = evaluate({"probe": helpers.torch_probe, "fifo": "fifo"}, helpers.TRACE, seeds=0, workers=2, progress=False)
    assert json.loads(frame["agent_stats"][0]) == {"torch_threads": 1}
    # in-process (workers=1) the caller's own torch setting is left alone
    torch.set_num_threads(2)
    try:
        frame = evaluate({"probe": helpers.torch_probe}, helpers.TRACE, seeds=0, workers=1, progress=False)
        assert json.loads(frame["agent_stats"][0]) == {"torch_threads": 2}
    finally:
        torch.set_num_threads(threads_before)


def test_corrupt_or_foreign_records_are_recomputed(tmp_path):
    evaluate("fifo", helpers.TRACE, seeds=0, workers=1, out=tmp_path, progress=False, figures=False)
    (path,) = records(tmp_path)
    path.write_text('{"key_hash": "trunc')
    with pytest.warns(HarnessWarning, match=f"cell record {path} is not reused"):
        evaluate("fifo", helpers.TRACE, seeds=0, workers=1, out=tmp_path, progress=False, figures=False)
    assert json.loads(path.read_text())["row"]["agent"] == "fifo"
    # other settings are other cells: a second record beside the first
    evaluate("fifo", helpers.TRACE, gpus=8, seeds=0, workers=1, out=tmp_path, progress=False, figures=False)
    assert len(records(tmp_path)) == 2
    assert read_csv(tmp_path / "results.csv")[0]["gpus"] == "8"
    assert not [p for p in tmp_path.rglob("*.tmp")]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"agents": "no-such-agent"}, "unknown agent 'no-such-agent'"),
        ({"agents": "fifo,nomodule_xyz:Agent"}, None),
        ({"traces": "no-such-trace"}, "not a bundled trace"),
        ({"seeds": (-1,)}, "seeds must be integers >= 0"),
        ({"workers": 0}, "workers must be >= 1"),
        ({"backend": "dask"}, "unknown backend 'dask'"),
        ({"gantt": ("nobody",)}, "gantt: no finished cell for agent='nobody'"),
        ({"agent_options": {"gavel": {"x": 1}}}, "agent options given for agents not evaluated: gavel"),
    ],
)
def test_bad_inputs_fail_before_running(kwargs, message, tmp_path):
    args = {"agents": "fifo", "traces": helpers.TRACE, "out": tmp_path / "out", "progress": False, **kwargs}
    if message is None:  # an unimportable module:factory fails in the cell, not up front
        with pytest.raises(CellsFailed, match="No module named 'nomodule_xyz'"):
            evaluate(**args, workers=1, figures=False)
        return
    with pytest.raises(InputError, match=message):
        evaluate(**args)
    assert not (tmp_path / "out" / "cells").exists()


def test_trace_file_needs_gpus_and_cli_exits_2(tmp_path):
    from shockwave_gym.traces import load_trace, save_trace

    path = tmp_path / "mine.jsonl"
    save_trace(load_trace(helpers.TRACE), path)
    code, _, stderr = run_cli(["compare", "--agents", "fifo", "--traces", str(path), "--out", str(tmp_path / "o")])
    assert code == 2 and f"--gpus is required for {str(path)!r}" in stderr
    frame = evaluate("fifo", str(path), gpus=helpers.GPUS, workers=1, progress=False)
    bundled = evaluate("fifo", helpers.TRACE, workers=1, progress=False)
    assert frame["trace"].tolist() == ["mine"]
    assert math.isclose(frame["makespan_s"][0], bundled["makespan_s"][0], rel_tol=0, abs_tol=0)


def test_ray_backend_missing_is_a_clear_input_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(InputError, match=r"in your clone of the repository, run make install .* "
                                         r"or pip install -e '\.\[ray\]'; docs/INSTALL.md") as caught:
        evaluate("fifo", helpers.TRACE, backend="ray", progress=False)
    assert "shockwave-gym[" not in str(caught.value)  # the package is on no index


def test_records_round_trip_truncated_episodes_exactly(tmp_path):
    from shockwave_gym.harness.records import result_from_json, result_to_json
    from shockwave_gym.metrics import compute_metrics
    from shockwave_gym.runner import run_episode
    from shockwave_gym.simulator import SimConfig
    from shockwave_gym.traces import load_trace

    result = run_episode(load_trace(helpers.TRACE), helpers.LifoAgent(), SimConfig(gpus=helpers.GPUS),
                         max_rounds=5, progress=False).result
    back = result_from_json(json.loads(json.dumps(result_to_json(result), allow_nan=False)))
    assert result.completed.sum() < result.num_jobs  # NaN completions are in there
    for name in ("arrival_s", "completion_s", "isolated_time_s", "gang", "run_time_s",
                 "round_start_s", "round_end_s", "round_gpus_busy"):
        np.testing.assert_array_equal(getattr(back, name), getattr(result, name), err_msg=name, strict=True)
    assert all((a == b).all() for a, b in zip(back.round_job_ids, result.round_job_ids, strict=True))
    assert compute_metrics(back) == compute_metrics(result)
    frame = evaluate("fifo", helpers.TRACE, max_rounds=5, out=tmp_path, workers=1, progress=False)
    assert frame["truncated"].tolist() == [True] and frame["completed_jobs"][0] < 12
    assert (tmp_path / "figures" / helpers.TRACE / "gantt.png").is_file()


def test_atomic_writes_replace_whole_files_with_normal_permissions(tmp_path):
    from shockwave_gym.harness import store

    target = tmp_path / "deep" / "results.csv"
    store.write_atomic(target, "old\n")
    with pytest.raises(RuntimeError), store.replacing(target, binary=False) as handle:
        handle.write("half of the new conte")
        raise RuntimeError("crash mid-write")
    assert target.read_text() == "old\n" and sorted(p.name for p in target.parent.iterdir()) == ["results.csv"]
    store.write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
