"""The trace subcommands, run through the ``shockwave-gym`` dispatcher."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from shockwave_gym.cli import main
from shockwave_gym.traces import load_trace

CORPUS = Path(__file__).resolve().parent / "malformed_traces"


def test_generate_is_byte_identical_for_the_same_seed(tmp_path, capsys):
    args = ["generate-trace", "--jobs", "25", "--seed", "5", "--gang-mix", "1:0.5,2:0.5",
            "--mode-mix", "static:0.2,accordion:0.4,gns:0.4", "--max-duration-h", "2"]
    assert main([*args, "--out", str(tmp_path / "a.jsonl")]) == 0
    assert main([*args, "--out", str(tmp_path / "b.jsonl")]) == 0
    assert main([*args[:4], "6", *args[5:], "--out", str(tmp_path / "c.jsonl")]) == 0
    a, b, c = ((tmp_path / f"{x}.jsonl").read_bytes() for x in "abc")
    assert a == b != c
    assert "wrote 25 jobs" in capsys.readouterr().out
    trace = load_trace(tmp_path / "a.jsonl")
    assert trace.name == "a" and {j.gang for j in trace.jobs} <= {1, 2}


@pytest.mark.parametrize("flag, value", [
    ("--gang-mix", "1:0.6,2"),
    ("--gang-mix", "one:1"),
    ("--gang-mix", "1:0.5,1:0.5"),
    ("--gang-mix", "3:1"),
    ("--gang-mix", "1:0.6,2:0.3"),
    ("--mode-mix", "gns=1"),
    ("--mode-mix", "turbo:1"),
])
def test_bad_mix_strings_exit_2(tmp_path, capsys, flag, value):
    out = tmp_path / "t.jsonl"
    code = main(["generate-trace", "--jobs", "5", "--seed", "1", flag, value, "--out", str(out)])
    assert code == 2
    assert flag.lstrip("-").replace("-", "_") in capsys.readouterr().err.replace("-", "_")
    assert not out.exists()


def test_validate_ok_prints_a_summary(capsys):
    assert main(["validate-trace", "teaching-12", "--gpus", "4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK ") and "12 jobs" in out and "modes:" in out and "gangs:" in out


def test_validate_prints_every_problem_and_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.trace"
    good = "\t".join(["LM (batch size 5)", "", "", "", "1", "100", "1", "gns", "1", "-1", "0", "0"])
    bad.write_text("\n".join([good.replace("\tgns", "\tturbo"), good, good[:-1] + "-3"]) + "\n")
    assert main(["validate-trace", str(bad)]) == 2
    lines = capsys.readouterr().out.splitlines()
    # other test modules may have registered extra modes, so only the start is fixed
    assert lines[0].startswith(f"{bad}:1:mode: unknown adaptation mode 'turbo'; registered: ")
    assert lines[1].startswith(f"{bad}:3:arrival:")
    assert lines[2] == f"2 problem(s) in {bad}"


def test_validate_with_gpus_and_custom_throughputs(capsys):
    assert main(["validate-trace", str(CORPUS / "gang_over_gpus.trace"), "--gpus", "4"]) == 2
    assert ":2:gang:" in capsys.readouterr().out
    trace = str(CORPUS / "gns_later_size_missing.trace")
    assert main(["validate-trace", trace]) == 0
    table = str(CORPUS / "support" / "small_throughputs.csv")
    assert main(["validate-trace", trace, "--throughputs", table]) == 2
    assert "batch size 80" in capsys.readouterr().out


def test_validate_missing_file_and_bad_throughputs(tmp_path, capsys):
    assert main(["validate-trace", str(tmp_path / "nope.trace")]) == 2
    assert "not a bundled trace" in capsys.readouterr().out
    assert main(["validate-trace", "teaching-12", "--throughputs", str(tmp_path / "x.csv")]) == 2
    assert "error" in capsys.readouterr().err


def test_convert_round_trip(tmp_path, capsys):
    assert main(["convert-trace", "teaching-12", str(tmp_path / "t.trace")]) == 0
    assert main(["convert-trace", str(tmp_path / "t.trace"), str(tmp_path / "t.jsonl")]) == 0
    assert "converted 12 jobs" in capsys.readouterr().out
    # every field comes back but the duration, which TSV holds in whole seconds
    back, original = load_trace(tmp_path / "t.jsonl").jobs, load_trace("teaching-12").jobs
    assert back == tuple(replace(job, duration_s=float(round(job.duration_s))) for job in original)
    assert any(job.duration_s != round(job.duration_s) for job in original)
    assert main(["convert-trace", str(CORPUS / "gang_3.trace"), str(tmp_path / "x.jsonl")]) == 2
    assert ":1:gang:" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()


def test_unwritable_output_exits_2(tmp_path, capsys):
    out = tmp_path / "missing-dir" / "t.jsonl"
    assert main(["generate-trace", "--jobs", "3", "--seed", "0", "--out", str(out)]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_generate_sizes_a_trace_for_a_cluster_and_a_load(tmp_path, capsys):
    from shockwave_gym.profile import job_profile
    from shockwave_gym.throughput import ThroughputTable
    from shockwave_gym.traces.load import trace_offered_load

    out = tmp_path / "sized.jsonl"
    assert main(["generate-trace", "--jobs", "60", "--seed", "3", "--gpus", "16", "--load", "1.2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    trace = load_trace(str(out), gpus=16)
    # the definition, computed here from the file: sum(gang x isolated s) / (GPUs x arrival span)
    table = ThroughputTable.builtin_v100()
    work = sum(job.gang * job_profile(job, table).isolated_time_s for job in trace.jobs)
    span = trace.jobs[-1].arrival_s - trace.jobs[0].arrival_s
    assert work / (16 * span) == pytest.approx(1.2, rel=1e-4) == trace_offered_load(trace, 16)
    rate = float(printed.split(" at ")[1].split()[0])
    assert "offered load 1.200 on 16 GPUs" in printed
    # the printed rate regenerates the same file; the jobs are those of the unsized trace
    again = tmp_path / "again.jsonl"
    assert main(["generate-trace", "--jobs", "60", "--seed", "3", "--arrival-rate-per-hour", repr(rate),
                 "--out", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()
    plain = tmp_path / "plain.jsonl"
    assert main(["generate-trace", "--jobs", "60", "--seed", "3", "--gpus", "16", "--out", str(plain)]) == 0
    unsized = load_trace(str(plain))
    assert [(j.model, j.gang, j.total_iterations) for j in unsized.jobs] == [
        (j.model, j.gang, j.total_iterations) for j in trace.jobs]
    assert "offered load 8.391 on 16 GPUs at 90 arrivals/h" in capsys.readouterr().out


@pytest.mark.parametrize(("extra", "words"), [
    (["--load", "1"], "--load needs --gpus"),
    (["--gpus", "16", "--load", "1", "--arrival-rate-per-hour", "30"], "give --load or --arrival-rate-per-hour"),
    (["--gpus", "16", "--load", "0"], "--load must be a finite number > 0"),
    (["--gpus", "4"], "--gpus 4: job"),
])
def test_generate_sizing_bad_inputs_are_one_line(tmp_path, capsys, extra, words):
    out = tmp_path / "t.jsonl"
    assert main(["generate-trace", "--jobs", "60", "--seed", "3", *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and not out.exists()
