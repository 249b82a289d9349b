"""`compare --agent-opt AGENT:KEY=VALUE` reaches the named agent, and only that one."""

from __future__ import annotations

import csv

import pytest

from shockwave_gym.cli import main
from shockwave_gym.cli.compare_command import parse_per_agent_options
from shockwave_gym.errors import InputError


def test_per_agent_options_parse_json_values_and_bare_words():
    parsed = parse_per_agent_options(["ppo:path=runs/x", "fifo:backfill=false", "ppo:max_jobs=40"])
    assert parsed == {"ppo": {"path": "runs/x", "max_jobs": 40}, "fifo": {"backfill": False}}


@pytest.mark.parametrize("bad", ["path=runs/x", ":path=x", "ppo:path"])
def test_malformed_per_agent_options_are_input_errors(bad):
    with pytest.raises(InputError):
        parse_per_agent_options([bad])


def test_compare_passes_an_option_to_its_agent(tmp_path):
    from shockwave_gym.jobs import JobSpec
    from shockwave_gym.traces import Trace, save_trace

    # 2 GPUs: a 1-GPU job runs, a 2-GPU job waits behind it; only backfilling FIFO lets the
    # third (1-GPU) job use the idle GPU meanwhile.
    jobs = [JobSpec(0, "LM", 20, 40_000, 1, "static", 0.0),
            JobSpec(1, "LM", 20, 40_000, 2, "static", 10.0),
            JobSpec(2, "LM", 20, 40_000, 1, "static", 20.0)]
    trace_path = tmp_path / "blocking.jsonl"
    save_trace(Trace.from_jobs("blocking", jobs, "test"), trace_path)

    def avg_jct(out, extra):
        code = main(["compare", "--agents", "fifo", "--traces", str(trace_path), "--gpus", "2",
                     "--workers", "1", "--out", str(out), "--no-figures", "--quiet", *extra])
        assert code == 0
        with open(out / "results.csv", newline="") as handle:
            return [float(row["avg_jct_s"]) for row in csv.DictReader(handle)]

    backfilling = avg_jct(tmp_path / "a", [])
    strict = avg_jct(tmp_path / "b", ["--agent-opt", "fifo:backfill=false"])
    assert strict[0] > backfilling[0]
    assert main(["compare", "--agents", "fifo", "--traces", "teaching-12", "--workers", "1",
                 "--out", str(tmp_path / "c"), "--no-figures", "--quiet",
                 "--agent-opt", "fifo:bogus=1"]) == 2


def test_an_out_directory_with_a_trailing_slash_prints_single_slashes(tmp_path, capsys):
    out = f"{tmp_path / 'results'}/"
    assert main(["compare", "--agents", "fifo", "--traces", "teaching-12", "--workers", "1", "--quiet", "--out", out]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert f"written: {tmp_path / 'results' / 'results.csv'}, jobs.csv, summary.md" in printed
    assert f"{tmp_path / 'results' / 'figures'}/<trace>/*.png" in printed and "//" not in printed
