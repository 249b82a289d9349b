"""Loading, validating and writing traces in both formats."""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shockwave_gym import adaptation
from shockwave_gym.errors import InputError, TraceError
from shockwave_gym.jobs import JobSpec
from shockwave_gym.profile import job_profile
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import (
    GeneratorConfig,
    Trace,
    generate_trace,
    load_trace,
    resolve_trace_path,
    save_trace,
    validate_trace,
)

CANONICAL = "authors-canonical-120"  # the authors' canonical trace, bundled in their TSV format


def tsv_row(job_type="ResNet-18 (batch size 32)", iterations=5000, gang=1, mode="static",
            arrival="0", priority="1", slo="-1", command="python3 train.py") -> str:
    return "\t".join([job_type, command, "wd", "--steps", "1", str(iterations), str(gang),
                      mode, priority, slo, "600", arrival])


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_canonical_trace_loads_with_the_documented_mix():
    trace = load_trace(CANONICAL, gpus=32)
    jobs = trace.jobs
    assert trace.num_jobs == 120 and trace.name == "authors-canonical-120"
    assert (jobs[0].arrival_s, jobs[-1].arrival_s) == (0.0, 5011.0)
    assert Counter(j.gang for j in jobs) == {1: 92, 2: 20, 4: 8}
    assert Counter(j.mode for j in jobs) == {"accordion": 59, "gns": 57, "static": 4}
    assert Counter(j.model for j in jobs) == {
        "LM": 36, "Recommendation": 35, "ResNet-18": 21, "ResNet-50": 15, "Transformer": 13,
    }
    table = ThroughputTable.builtin_v100()
    gpu_s = sum(j.gang * job_profile(j, table).isolated_time_s for j in jobs)
    assert gpu_s == pytest.approx(635_000, rel=0.01)  # docs/SEMANTICS.md, "Throughput tables"


def test_canonical_round_trip_tsv_jsonl_tsv(tmp_path):
    original = load_trace(CANONICAL)
    save_trace(original, tmp_path / "c.jsonl")
    via_jsonl = load_trace(tmp_path / "c.jsonl")
    save_trace(via_jsonl, tmp_path / "c.trace")
    back = load_trace(tmp_path / "c.trace")
    assert via_jsonl.jobs == original.jobs
    assert back.jobs == original.jobs
    assert back.jobs[0].command == original.jobs[0].command != ""


def test_validate_reports_every_problem_in_file_order(tmp_path):
    path = write(tmp_path, "bad.trace", "\n".join([
        tsv_row(gang=3, arrival="-1"),          # two field problems on one line
        tsv_row(),                              # fine
        "only\tthree\tfields",
        tsv_row(job_type="Transformer (batch size 256)", arrival="4"),
    ]) + "\n")
    problems = validate_trace(path)
    assert [(p.line, p.field) for p in problems] == [
        (1, "gang"), (1, "arrival"), (3, None), (4, "job_type"),
    ]
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    assert (caught.value.line, caught.value.field) == (1, "gang")


def test_valid_trace_has_no_problems(tmp_path):
    assert validate_trace(write(tmp_path, "ok.trace", tsv_row() + "\n")) == []


def test_crlf_and_byte_order_mark_are_accepted(tmp_path):
    rows = [tsv_row(arrival="0"), tsv_row(mode="accordion", arrival="3.5")]
    lf = load_trace(write(tmp_path, "lf.trace", "\n".join(rows) + "\n"))
    crlf = load_trace(write(tmp_path, "crlf.trace", "\r\n".join(rows) + "\r\n"))
    bom = load_trace(write(tmp_path, "bom.trace", "\ufeff" + "\n".join(rows)))
    assert lf.jobs == crlf.jobs == bom.jobs
    assert lf.jobs[1].mode == "accordion"


def test_arrivals_are_sorted_stably_and_renumbered(tmp_path):
    arrivals = ["50", "10", "50", "10", "0"]
    rows = [tsv_row(iterations=1000 + i, arrival=a) for i, a in enumerate(arrivals)]
    trace = load_trace(write(tmp_path, "unsorted.trace", "\n".join(rows)))
    assert [j.total_iterations for j in trace.jobs] == [1004, 1001, 1003, 1000, 1002]
    assert [j.job_id for j in trace.jobs] == list(range(5))
    assert [j.arrival_s for j in trace.jobs] == [0, 10, 10, 50, 50]


def test_jsonl_optional_keys_default_and_blank_lines_are_skipped(tmp_path):
    line = {"job_type": "LM (batch size 5)", "total_iterations": 10, "gang": 2, "mode": "gns",
            "priority": 2.5, "slo_s": -1, "arrival_s": 1.25}
    path = write(tmp_path, "t.jsonl", "\n" + json.dumps(line) + "\n\n")
    (job,) = load_trace(path).jobs
    assert job == JobSpec(job_id=0, model="LM", initial_batch_size=5, total_iterations=10,
                          gang=2, mode="gns", arrival_s=1.25, priority=2.5, slo_s=-1.0)


def test_registered_custom_mode_is_accepted_and_its_sizes_checked(tmp_path, monkeypatch):
    mode = adaptation.AdaptationMode(
        "test-double", schedule_fn=lambda s: [s.initial_batch_size * 2] * s.num_epochs,
        reachable_fn=lambda s: (s.initial_batch_size, s.initial_batch_size * 2),
    )
    monkeypatch.setitem(adaptation._MODES, "test-double", mode)  # removed after the test
    ok = write(tmp_path, "ok.trace", tsv_row(job_type="ResNet-18 (batch size 128)", mode="test-double"))
    assert load_trace(ok).jobs[0].mode == "test-double"
    bad = write(tmp_path, "bad.trace", tsv_row(job_type="Transformer (batch size 128)", mode="test-double"))
    (problem,) = validate_trace(bad)
    assert (problem.field, "batch size 256" in problem.message) == ("job_type", True)


def test_bundled_name_and_missing_source(tmp_path):
    assert load_trace("teaching-12").name == "teaching-12"
    with pytest.raises(TraceError) as caught:
        resolve_trace_path("no-such-trace")
    assert caught.value.file == "no-such-trace" and "teaching-12" in caught.value.message
    (problem,) = validate_trace(tmp_path)
    assert "directory" in problem.message


def test_bad_gpus_argument_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        load_trace(write(tmp_path, "ok.trace", tsv_row()), gpus=0)


def test_trace_contract_and_from_jobs():
    job = JobSpec(job_id=0, model="LM", initial_batch_size=5, total_iterations=10, gang=1,
                  mode="static", arrival_s=5.0)
    early = JobSpec(job_id=7, model="LM", initial_batch_size=5, total_iterations=10, gang=1,
                    mode="static", arrival_s=1.0)
    with pytest.raises(ValueError):
        Trace("x", (job, early))
    trace = Trace.from_jobs("x", [job, early])
    assert [(j.job_id, j.arrival_s) for j in trace.jobs] == [(0, 1.0), (1, 5.0)]


def test_save_is_atomic_and_picks_format(tmp_path):
    trace = load_trace("teaching-12")
    save_trace(trace, tmp_path / "a.jsonl")
    save_trace(trace, tmp_path / "a.trace")
    save_trace(trace, tmp_path / "b.txt", fmt="jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.txt").read_bytes()
    assert (tmp_path / "a.trace").read_text().count("\t") == 11 * trace.num_jobs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "a.trace", "b.txt"]
    assert os.stat(tmp_path / "a.trace").st_mode & 0o777 == 0o644
    with pytest.raises(InputError):
        save_trace(trace, tmp_path / "c.csv", fmt="csv")


def test_tsv_cannot_hold_tabs_in_text_fields(tmp_path):
    job = JobSpec(job_id=0, model="LM", initial_batch_size=5, total_iterations=10, gang=1,
                  mode="static", arrival_s=0.0, command="a\tb")
    trace = Trace("t", (job,))
    with pytest.raises(TraceError, match="save as .jsonl"):
        save_trace(trace, tmp_path / "t.trace")
    assert not list(tmp_path.iterdir())
    save_trace(trace, tmp_path / "t.jsonl")
    assert load_trace(tmp_path / "t.jsonl").jobs == (job,)


_TABLE = ThroughputTable.builtin_v100()
_CONFIGS = [(m, b, g) for (m, b, g), rate in _TABLE.items() if rate > 0]
_text = st.text(st.characters(blacklist_characters="\t\r\n", blacklist_categories=("Cs",)), max_size=12)
_number = st.floats(min_value=0, max_value=1e7, allow_nan=False)


@st.composite
def _jobs(draw):
    model, batch_size, gang = draw(st.sampled_from(_CONFIGS))
    return JobSpec(
        job_id=0, model=model, initial_batch_size=batch_size,
        total_iterations=draw(st.integers(1, 200_000)), gang=gang, mode="static",
        arrival_s=draw(_number), priority=draw(st.floats(min_value=1e-6, max_value=1e6)),
        slo_s=draw(st.one_of(st.just(-1.0), _number)), command=draw(_text),
        working_dir=draw(_text), step_arg=draw(_text), needs_data_dir=draw(st.sampled_from([0, 1])),
        duration_s=draw(_number),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=st.lists(_jobs(), min_size=1, max_size=6))
def test_any_valid_trace_round_trips_through_both_formats(tmp_path, jobs):
    trace = Trace.from_jobs("h", jobs)
    save_trace(trace, tmp_path / "h.jsonl")
    assert load_trace(tmp_path / "h.jsonl").jobs == trace.jobs
    # TSV carries the duration in whole seconds (the authors' parser reads it with int());
    # every other field round-trips exactly
    save_trace(trace, tmp_path / "h.trace")
    assert load_trace(tmp_path / "h.trace").jobs == tuple(
        dataclasses.replace(job, duration_s=float(round(job.duration_s))) for job in trace.jobs
    )


def _authors_column_rules(line: str) -> dict:
    """How the authors' simulator reads one TSV line: twelve tab-separated fields;
    ``int()`` on needs_data_dir, total_iterations, gang and duration, ``float()`` on
    priority, slo and arrival (it raises ValueError on ``int("1243.636")``)."""
    (job_type, command, working_dir, step_arg, needs_data_dir, iterations, gang, mode,
     priority, slo, duration, arrival) = line.rstrip("\n").split("\t")
    return {"needs_data_dir": bool(int(needs_data_dir)), "total_iterations": int(iterations),
            "gang": int(gang), "priority": float(priority), "slo": float(slo),
            "duration": int(duration), "arrival": float(arrival), "job_type": job_type}


def test_tsv_we_write_parses_under_the_authors_column_rules(tmp_path):
    generated = generate_trace(GeneratorConfig(num_jobs=40, seed=7, name="g"))
    assert any(job.duration_s != int(job.duration_s) for job in generated.jobs)  # fractional
    save_trace(generated, tmp_path / "g.trace")
    lines = (tmp_path / "g.trace").read_text().splitlines()
    parsed = [_authors_column_rules(line) for line in lines]
    assert [p["duration"] for p in parsed] == [round(job.duration_s) for job in generated.jobs]
    assert [p["arrival"] for p in parsed] == [job.arrival_s for job in generated.jobs]
    assert [p["total_iterations"] for p in parsed] == [job.total_iterations for job in generated.jobs]
    # the authors' own file parses under the same rules, and our loader reads what they read
    ours = load_trace(CANONICAL)
    theirs = [_authors_column_rules(line) for line in resolve_trace_path(CANONICAL).read_text().splitlines()]
    assert [p["gang"] for p in theirs] == [job.gang for job in ours.jobs]


def test_a_duration_too_large_for_whole_seconds_is_refused_naming_the_job(tmp_path):
    job = dataclasses.replace(load_trace("teaching-12").jobs[3], duration_s=1e300)
    with pytest.raises(TraceError, match=r"big\.trace: job 0: duration 1e\+300 s is too large"):
        save_trace(Trace.from_jobs("big", [job]), tmp_path / "big.trace")
    assert not (tmp_path / "big.trace").exists()
