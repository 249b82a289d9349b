"""Real cluster traces: the four adapters on their fixtures, the trace they give, rescaling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave_gym.cli import main
from shockwave_gym.jobs import JOB_STATUSES
from shockwave_gym.traces import load_trace, validate_trace
from shockwave_gym.traces.card import trace_card

DATA = Path(__file__).resolve().parent / "data" / "real_traces"
FIXTURES = {
    "philly": ["philly_cluster_job_log.json"],
    "helios": ["helios_cluster_log.csv"],
    "acme": ["acme_trace_kalos.csv"],
    "pai": ["pai_job_table.csv", "pai_task_table.csv"],
}
#: Every unusable row of each fixture, as file:line:field.
EXPECTED_PROBLEMS = {
    "philly": ["philly_cluster_job_log.json:8:attempts", "philly_cluster_job_log.json:15:status",
               "philly_cluster_job_log.json:22:attempts[0].end_time",
               "philly_cluster_job_log.json:29:attempts[0].detail[0].gpus",
               "philly_cluster_job_log.json:36:submitted_time", "philly_cluster_job_log.json:43:jobid"],
    "helios": ["helios_cluster_log.csv:8:state", "helios_cluster_log.csv:11:gpu_num",
               "helios_cluster_log.csv:14:start_time", "helios_cluster_log.csv:17:duration",
               "helios_cluster_log.csv:20:start_time", "helios_cluster_log.csv:23:row"],
    "acme": ["acme_trace_kalos.csv:6:fail_time", "acme_trace_kalos.csv:10:gpu_num",
             "acme_trace_kalos.csv:14:start_time", "acme_trace_kalos.csv:18:submit_time",
             "acme_trace_kalos.csv:22:job_id"],
    "pai": ["pai_task_table.csv:45:inst_num", "pai_job_table.csv:12:status", "pai_job_table.csv:16:job_name",
            "pai_job_table.csv:20:status", "pai_job_table.csv:24:start_time", "pai_job_table.csv:28:job_name"],
}
#: The statuses each dataset's log can give, after mapping.
DATASET_STATUSES = {
    "philly": {"completed", "killed", "failed"},
    "helios": {"completed", "cancelled", "failed", "timeout", "node_fail"},
    "acme": {"completed", "cancelled", "failed", "timeout", "node_fail"},
    "pai": {"completed", "failed"},
}


def convert(fmt: str, out: Path, *extra: str) -> list[str]:
    """Run import-trace on the fixture; return its stdout lines (asserting exit 0)."""
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["import-trace", "--format", fmt, *(str(DATA / f) for f in FIXTURES[fmt]),
                     "--out", str(out), *extra])
    assert code == 0
    return buffer.getvalue().splitlines()


@pytest.mark.parametrize("fmt", FIXTURES)
def test_fixture_has_30_rows_and_converts_to_a_valid_trace(fmt, tmp_path):
    rows = sum(len((DATA / f).read_text().splitlines()) for f in FIXTURES[fmt][:1])
    assert rows >= 30
    out = tmp_path / f"{fmt}.jsonl"
    convert(fmt, out)
    assert validate_trace(out, gpus=32) == []
    trace = load_trace(out, gpus=32)
    statuses = {job.origin.status for job in trace.jobs}
    assert statuses == DATASET_STATUSES[fmt]
    assert statuses <= set(JOB_STATUSES)
    split = [job for job in trace.jobs if "#" in job.origin.source_id]
    assert split and all(job.origin.logged_gpus > 8 for job in split)  # jobs above 8 GPUs
    for job in trace.jobs:
        assert job.mode == "static" and job.gang in (1, 2, 4, 8)
        early = job.origin.status != "completed"
        assert (job.origin.logged_run_s > 0) == early


@pytest.mark.parametrize("fmt", FIXTURES)
def test_every_unusable_row_is_named_by_line_and_field(fmt, tmp_path):
    lines = convert(fmt, tmp_path / "t.jsonl")
    named = [line.split(": ")[0] for line in lines if line.startswith(str(DATA))]
    assert [name.removeprefix(f"{DATA}/") for name in named] == EXPECTED_PROBLEMS[fmt]
    summary = "\n".join(lines)
    assert f"{len(EXPECTED_PROBLEMS[fmt])} unusable rows" in summary


@pytest.mark.parametrize("fmt", ["helios", "acme", "pai"])
def test_filtered_rows_are_counted_not_dropped_silently(fmt, tmp_path):
    summary = "\n".join(convert(fmt, tmp_path / "t.jsonl"))
    assert "cpu-only 1" in summary
    if fmt == "pai":
        assert "non-training 1" in summary


@pytest.mark.parametrize("fmt", FIXTURES)
def test_converting_twice_gives_the_same_bytes(fmt, tmp_path):
    convert(fmt, tmp_path / "a.jsonl")
    convert(fmt, tmp_path / "b.jsonl")
    convert(fmt, tmp_path / "c.jsonl", "--seed", "7")
    a, b, c = ((tmp_path / f"{x}.jsonl").read_bytes() for x in "abc")
    assert a == b
    assert a != c  # the seed draws the models


@pytest.mark.parametrize("fmt", FIXTURES)
@pytest.mark.parametrize("gpus, target", [(16, 1.2), (64, 0.8)])
def test_rescaling_reaches_the_stated_offered_load(fmt, gpus, target, tmp_path):
    out = tmp_path / "t.jsonl"
    lines = convert(fmt, out, "--gpus", str(gpus), "--load", str(target))
    card = trace_card(load_trace(out, gpus=gpus), gpus)
    assert card["offered_load"] == pytest.approx(target, rel=0.05)
    stated = [line for line in lines if line.startswith(f"offered load, after --load {target:g}:")]
    assert len(stated) == 1 and float(stated[0].split(": ")[1].split()[0]) == pytest.approx(target, rel=0.05)


def test_window_and_job_count_cut_the_workload(tmp_path):
    full, cut = tmp_path / "full.jsonl", tmp_path / "cut.jsonl"
    convert("helios", full)
    lines = convert("helios", cut, "--window", "3600:14400", "--jobs", "10")
    trace, whole = load_trace(cut), load_trace(full)
    assert trace.num_jobs == 10 and trace.jobs[0].arrival_s == 0
    ids = [job.origin.source_id for job in whole.jobs]
    first = ids.index(trace.jobs[0].origin.source_id)
    assert whole.jobs[first].arrival_s >= 3600
    assert [job.origin.source_id for job in trace.jobs] == ids[first:first + 10]
    assert any(line.startswith("left out by --window:") for line in lines)


@pytest.mark.parametrize("argv, flag", [
    (["--load", "1.2"], "--gpus"),
    (["--gpus", "4"], "--gpus 4"),
    (["--window", "5"], "--window"),
    (["--window", "9:3"], "--window"),
])
def test_bad_rescaling_flags_exit_2(argv, flag, tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    code = main(["import-trace", "--format", "helios", str(DATA / "helios_cluster_log.csv"), "--out", str(out), *argv])
    assert code == 2 and flag in capsys.readouterr().err
    assert not out.exists()


def test_pai_needs_both_tables(tmp_path, capsys):
    code = main(["import-trace", "--format", "pai", str(DATA / "pai_job_table.csv"), "--out", str(tmp_path / "t.jsonl")])
    assert code == 2 and "pai_task_table" in capsys.readouterr().err


@pytest.mark.parametrize("agent", ["fifo", "srtf"])
@pytest.mark.parametrize("fmt", FIXTURES)
def test_agents_run_a_converted_fixture(fmt, agent, tmp_path):
    from shockwave_agents import make_agent
    from shockwave_gym.runner import run_episode
    from shockwave_gym.simulator import SimConfig

    out = tmp_path / "t.jsonl"
    convert(fmt, out, "--jobs", "20")
    trace = load_trace(out, gpus=16)
    result = run_episode(trace, make_agent(agent), SimConfig(gpus=16), progress=False)
    metrics = result.metrics
    assert metrics["num_jobs"] == metrics["completed_jobs"] == 20 and not metrics["truncated"]
    # every job runs to its nominal length: the makespan covers the longest isolated run
    longest = max(trace_card(trace)["isolated_s"].values())
    assert metrics["makespan_s"] >= longest


def test_describe_trace_on_every_fixture(tmp_path, capsys):
    for fmt in FIXTURES:
        out = tmp_path / f"{fmt}.jsonl"
        convert(fmt, out)
        assert main(["describe-trace", str(out), "--gpus", "32", "--json"]) == 0
        card = json.loads(capsys.readouterr().out)
        assert card["jobs"] == load_trace(out).num_jobs and card["gpus"] == 32
        assert 0 < card["early_end_share"] < 1 and set(card["statuses"]) == DATASET_STATUSES[fmt]


def test_describe_trace_on_every_bundled_trace(capsys):
    from shockwave_gym.traces import BUNDLED_GPUS, bundled_traces

    for name in bundled_traces():
        assert main(["describe-trace", name]) == 0
        text = capsys.readouterr().out
        assert text.startswith(f"trace {name}: ") and "statuses: none recorded" in text
        if name in BUNDLED_GPUS:
            assert f"offered load on {BUNDLED_GPUS[name]} GPUs" in text


def test_a_synthetic_philly_log_converts_streaming(tmp_path, monkeypatch):
    """A small version of the 1,000,000-job memory run of docs/TRACES.md, read in small
    chunks so that elements straddle chunk boundaries."""
    import importlib.util

    from shockwave_gym.traces.importers import jsonarray

    spec = importlib.util.spec_from_file_location("fixtures", DATA.parents[2] / "scripts" / "real_trace_fixtures.py")
    fixtures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixtures)
    log = tmp_path / "cluster_job_log"
    fixtures.write_philly(log, 2000, with_bad=False)
    monkeypatch.setattr(jsonarray, "CHUNK_CHARS", 4096)
    out = tmp_path / "philly.jsonl"
    lines = main_lines(["import-trace", "--format", "philly", str(log), "--out", str(out)])
    # 18-job cycle of GPU counts with 16, 12, 64 and 24 split into 2, 2, 8 and 3 parts: 29 jobs per cycle
    expected = sum(len(fixtures_parts(g)) for g in (fixtures.GPU_CYCLE * 112)[:2000])
    assert lines[0] == f"read 2000 rows: {expected} trace jobs written; 0 unusable rows (listed above)"
    assert validate_trace(out) == []


def fixtures_parts(gpus: int) -> list[int]:
    from shockwave_gym.traces.importers.mapping import gang_parts

    return gang_parts(gpus)[0]


def main_lines(argv: list[str]) -> list[str]:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return buffer.getvalue().splitlines()
