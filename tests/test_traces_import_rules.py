"""Golden tests of each import mapping rule, on hand-written rows."""

from __future__ import annotations

import json
import math

import pytest

from shockwave_gym.errors import InputError, TraceError
from shockwave_gym.jobs import DATASET_SIZES, JobOrigin
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import load_trace, save_trace, validate_trace
from shockwave_gym.traces.importers import ImportOptions, import_trace, jsonarray
from shockwave_gym.traces.importers.mapping import EARLY_FRACTION, JobMapper, gang_parts, job_hash
from shockwave_gym.traces.importers.records import LoggedJob
from shockwave_gym.traces.load import offered_load_of_work as offered_load

TABLE = ThroughputTable.builtin_v100()


@pytest.mark.parametrize("gpus, large, gangs, factor, flags", [
    (1, "split", [1], 1.0, ()),
    (2, "split", [2], 1.0, ()),
    (4, "split", [4], 1.0, ()),
    (8, "split", [8], 1.0, ()),
    (3, "split", [4], 1.0, ("rounded-up",)),
    (5, "split", [8], 1.0, ("rounded-up",)),
    (7, "split", [8], 1.0, ("rounded-up",)),
    (16, "split", [8, 8], 1.0, ("split",)),
    (12, "split", [8, 4], 1.0, ("split",)),
    (13, "split", [8, 8], 1.0, ("split", "rounded-up")),
    (64, "split", [8] * 8, 1.0, ("split",)),
    (64, "stretch", [8], 8.0, ("stretched",)),
    (12, "stretch", [8], 1.5, ("stretched",)),
])
def test_gang_rule(gpus, large, gangs, factor, flags):
    assert gang_parts(gpus, large) == (gangs, factor, flags)
    parts, scale, _ = gang_parts(gpus, large)
    assert sum(parts) * scale >= gpus  # never rounded down


def logged(source_id="job-1", status="completed", run_s=3600.0, gpus=1.0, whole=None):
    return LoggedJob(source_id, "alice", "vc1", status, 1000.0, run_s, gpus, 7, (), whole)


def test_model_draw_is_a_seeded_hash_of_the_job_id():
    mapper = JobMapper(TABLE, seed=0)
    a = mapper.map(logged("job-1"))[0][0]
    assert mapper.map(logged("job-1"))[0][0] == a
    draws = {JobMapper(TABLE, seed).map(logged("job-1"))[0][0].template for seed in range(20)}
    assert len(draws) > 3  # the seed changes the draw
    draw, _ = job_hash(0, "job-1")
    choices = mapper.by_gang[1]
    assert a.template == choices[draw % len(choices)]
    # Recommendation runs on one GPU only
    assert all(mapper.templates[i].model != "Recommendation" for g in (2, 4, 8) for i in mapper.by_gang[g])


@pytest.mark.parametrize("run_s", [600.0, 3600.0, 86400.0])
@pytest.mark.parametrize("gpus", [1, 2, 4, 8])
def test_completed_job_isolated_time_is_the_logged_run_within_half_an_epoch(run_s, gpus):
    mapper = JobMapper(TABLE, seed=3)
    (part,), flags = mapper.map(logged(f"id{run_s}{gpus}", run_s=run_s, gpus=gpus))
    template = mapper.templates[part.template]
    assert template.gang == gpus and part.logged_run_s == -1
    assert abs(part.isolated_s - run_s) <= template.epoch_s / 2 + 1e-9
    rate = TABLE.rate(template.model, template.batch_size, gpus)
    dataset = DATASET_SIZES[template.model]
    assert template.epoch_s == pytest.approx((dataset / template.batch_size) / rate)
    assert "one-epoch" not in flags or run_s < template.epoch_s / 2


@pytest.mark.parametrize("status", ["killed", "failed", "cancelled", "timeout", "node_fail"])
def test_early_ending_keeps_its_logged_end_and_a_nominal_length(status):
    mapper = JobMapper(TABLE, seed=1)
    (part,), _ = mapper.map(logged("early-1", status=status, run_s=5000.0, gpus=2))
    _, fraction = job_hash(1, "early-1")
    u = EARLY_FRACTION[0] + (EARLY_FRACTION[1] - EARLY_FRACTION[0]) * fraction
    epoch_s = mapper.templates[part.template].epoch_s
    assert part.logged_run_s == 5000.0
    assert part.isolated_s > part.logged_run_s
    assert part.epochs == max(1, round(5000.0 / u / epoch_s), math.floor(5000.0 / epoch_s) + 1)
    assert part.isolated_s == pytest.approx(part.epochs * epoch_s)


def test_split_parts_share_template_and_length_and_stretch_multiplies_the_run():
    mapper = JobMapper(TABLE, seed=0)
    parts, _ = mapper.map(logged("big", run_s=7200.0, gpus=24))
    assert [p.source_id for p in parts] == ["big#1", "big#2", "big#3"]
    assert len({(p.template, p.epochs) for p in parts}) == 1
    assert sum(p.logged_work for p in parts) == pytest.approx(24 * 7200.0)
    (one,), flags = JobMapper(TABLE, seed=0, large="stretch").map(logged("big", run_s=7200.0, gpus=24))
    assert flags == ("stretched",) and mapper.templates[one.template].gang == 8
    assert abs(one.isolated_s - 3 * 7200.0) <= mapper.templates[one.template].epoch_s / 2


def _import(tmp_path, fmt, files, **options):
    problems = []
    out = tmp_path / "out.jsonl"
    summary = import_trace(ImportOptions(fmt=fmt, paths=tuple(map(str, files)), out=str(out), **options),
                           problems.append)
    return load_trace(out), summary, problems


def test_philly_sums_attempts_and_takes_the_last_attempts_gpus(tmp_path):
    log = tmp_path / "log.json"
    log.write_text(json.dumps([{
        "status": "Killed", "vc": "v", "jobid": "app_1", "user": "bob", "submitted_time": "2017-10-01 00:00:00",
        "attempts": [
            {"start_time": "2017-10-01 00:01:00", "end_time": "2017-10-01 00:11:00",
             "detail": [{"ip": "m1", "gpus": ["gpu0"]}]},
            {"start_time": "2017-10-01 01:00:00", "end_time": "2017-10-01 01:20:00",
             "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}, {"ip": "m2", "gpus": ["gpu0", "gpu1"]}]},
        ]}]))
    trace, summary, problems = _import(tmp_path, "philly", [log])
    (job,) = trace.jobs
    assert problems == [] and job.gang == 4
    assert job.origin == JobOrigin("app_1", "bob", "v", "killed", 1800.0, 4.0)


def _pai(tmp_path, plan_gpu, inst_num=1, task="worker"):
    jobs, tasks = tmp_path / "j.csv", tmp_path / "t.csv"
    jobs.write_text("j1,i1,carol,Terminated,100,5000\n")
    tasks.write_text(f"j1,{task},{inst_num},Terminated,200,3800,600,29.3,{plan_gpu},T4\n"
                     "j1,ps,2,Terminated,150,3900,600,29.3,,\n")
    return _import(tmp_path, "pai", [jobs, tasks])


@pytest.mark.parametrize("plan_gpu, inst_num, gang, logged_gpus, fractional", [
    (100, 1, 1, 1.0, False),
    (50, 1, 1, 0.5, True),    # half a GPU: one whole GPU, flagged
    (50, 4, 4, 2.0, True),    # four instances of half a GPU: four GPUs
    (200, 2, 4, 4.0, False),
    (150, 1, 2, 1.5, True),
])
def test_pai_fractional_gpus_round_up_per_instance(tmp_path, plan_gpu, inst_num, gang, logged_gpus, fractional):
    trace, summary, problems = _pai(tmp_path, plan_gpu, inst_num)
    (job,) = trace.jobs
    assert problems == [] and job.gang == gang and job.origin.logged_gpus == logged_gpus
    assert (summary.flags["fractional"] == 1) == fractional
    assert job.arrival_s == 0  # the job's start_time; the run is task start to task end
    assert abs(trace_iso(job) - 3600.0) <= 0.5 * trace_iso(job) / job.num_epochs


def trace_iso(job):
    from shockwave_gym.profile import job_profile

    return job_profile(job, TABLE).isolated_time_s


def test_pai_evaluator_only_job_is_filtered_and_counted(tmp_path):
    jobs, tasks = tmp_path / "j.csv", tmp_path / "t.csv"
    jobs.write_text("j1,i1,carol,Terminated,100,5000\nj2,i2,carol,Failed,100,5000\n")
    tasks.write_text("j1,evaluator,1,Terminated,200,3800,600,29.3,100,T4\n"
                     "j2,worker,1,Failed,200,3800,600,29.3,100,T4\n")
    trace, summary, problems = _import(tmp_path, "pai", [jobs, tasks])
    assert trace.num_jobs == 1 and summary.problems["non-training"] == 1 and problems == []


def test_acme_fail_time_is_the_logged_end(tmp_path):
    csv = tmp_path / "trace_kalos.csv"
    csv.write_text("job_id,user,node_num,gpu_num,type,state,submit_time,start_time,end_time,duration,fail_time\n"
                   "a1,u,1,8,SFT,FAILED,2023-05-01 00:00:00,2023-05-01 00:10:00,2023-05-01 02:10:00,7200,"
                   "2023-05-01 00:40:00\n")
    trace, summary, _ = _import(tmp_path, "acme", [csv])
    assert trace.jobs[0].origin.logged_run_s == 1800.0 and summary.flags["fail-time"] == 1


def test_helios_cpu_only_is_counted_and_not_listed(tmp_path):
    csv = tmp_path / "cluster_log.csv"
    head = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
    csv.write_text(head + "1,u,v,0,4,1,COMPLETED,100,110,500,390,0\n2,u,v,1,4,1,TIMEOUT,100,110,500,390,0\n")
    trace, summary, problems = _import(tmp_path, "helios", [csv])
    assert trace.num_jobs == 1 and summary.problems["cpu-only"] == 1 and problems == []
    assert trace.jobs[0].origin.status == "timeout" and trace.jobs[0].origin.logged_run_s == 390.0


def test_a_run_needing_too_many_epochs_is_named_by_line(tmp_path):
    csv = tmp_path / "cluster_log.csv"
    head = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
    csv.write_text(head + "1,u,v,1,4,1,COMPLETED,100,110,500,390,0\n2,u,v,1,4,1,COMPLETED,0,0,900000000,,0\n")
    trace, summary, problems = _import(tmp_path, "helios", [csv])
    assert trace.num_jobs == 1 and [str(p).split(": ")[0] for p in problems] == [f"{csv}:3:duration"]
    assert "epochs" in problems[0].message


def test_a_missing_input_file_exits_2(tmp_path, capsys):
    from shockwave_gym.cli import main

    for fmt in ("philly", "helios", "acme", "pai"):
        assert main(["import-trace", "--format", fmt, str(tmp_path / "nope"), "--out", str(tmp_path / "t.jsonl")]) == 2
        assert "nope: cannot read" in capsys.readouterr().err


def test_offered_load_definition():
    assert offered_load(3600.0 * 32, 3600.0, 32) == 1.0
    assert offered_load(7200.0, 0.0, 8) == math.inf


# -- origin keys in the trace format ---------------------------------------------------------

LINE = {"job_type": "LM (batch size 5)", "total_iterations": 100, "gang": 1, "mode": "static",
        "priority": 1, "slo_s": -1, "arrival_s": 0}


def test_origin_keys_round_trip_and_stay_hidden(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({**LINE, "source_id": "x", "user": "u", "vc": "v", "status": "failed",
                                "logged_run_s": 12.5, "logged_gpus": 0.5}) + "\n")
    trace = load_trace(path)
    assert trace.jobs[0].origin == JobOrigin("x", "u", "v", "failed", 12.5, 0.5)
    assert not hasattr(trace.jobs[0].public(), "origin")
    save_trace(trace, tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_bytes() == path.read_bytes()
    with pytest.raises(TraceError, match="TSV format cannot hold"):
        save_trace(trace, tmp_path / "t.trace")


@pytest.mark.parametrize("extra, field", [
    ({"status": "exploded", "logged_run_s": 1}, "status"),
    ({"status": "failed"}, "status"),
    ({"status": "completed", "logged_run_s": 5}, "logged_run_s"),
    ({"status": "killed", "logged_run_s": 0}, "logged_run_s"),
    ({"status": "killed", "logged_run_s": "5"}, "logged_run_s"),
    ({"logged_gpus": -1}, "logged_gpus"),
    ({"user": 3}, "user"),
    ({"vc": "a\tb"}, "vc"),
    ({"origin": "x"}, "origin"),
])
def test_bad_origin_keys_are_named(tmp_path, extra, field):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({**LINE, **extra}) + "\n")
    problems = validate_trace(path)
    assert [(p.line, p.field) for p in problems] == [(1, field)]


# -- the incremental JSON array reader ------------------------------------------------------

def test_json_array_reader_gives_the_same_elements_across_chunk_sizes(tmp_path, monkeypatch):
    data = [{"a": i, "s": "x" * (i % 7), "n": [1.5, -2e3]} for i in range(50)]
    path = tmp_path / "a.json"
    path.write_text("[\n" + ",\n".join(json.dumps(d) for d in data) + "\n]\n")
    for size in (1, 3, 17, 1 << 20):
        monkeypatch.setattr(jsonarray, "CHUNK_CHARS", size)
        got = list(jsonarray.iter_array(path))
        assert [e for _, _, e in got] == data
        assert [line for line, _, _ in got] == list(range(2, 52))


@pytest.mark.parametrize("text, line, message", [
    ('[\n{"a": 1},\n{"a": 2\n]', 4, "not valid JSON"),  # where the decoder stopped
    ('[\n{"a": 1}\n{"a": 2}\n]', 3, "expected ','"),
    ('{"a": 1}', 1, "one JSON array"),
    ('[\n{"a": 1},\n', 3, "ends inside"),
    ('[{"a": 1}] x', 1, "after the closing"),
])
def test_json_array_reader_names_the_line_of_a_syntax_error(tmp_path, text, line, message):
    path = tmp_path / "a.json"
    path.write_text(text)
    with pytest.raises(TraceError, match=message) as info:
        list(jsonarray.iter_array(path))
    assert info.value.line == line


@pytest.mark.parametrize("text", ["８", "٤", "1٫5"])
def test_log_numbers_are_ascii_digits_only(text):
    """The one rule for numbers holds in imported logs too: ``float()`` would read full-width
    or Arabic-Indic digits."""
    from shockwave_gym.traces.importers.records import FieldError, parse_count, parse_time
    from shockwave_gym.traces.importers.rescale import parse_window

    with pytest.raises(FieldError):
        parse_count("gpu_num", text)
    with pytest.raises(FieldError):
        parse_time("submit_time", text)
    with pytest.raises(InputError):
        parse_window(f"{text}:100")
