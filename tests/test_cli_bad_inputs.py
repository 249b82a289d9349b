"""A corpus of bad command lines: each must exit 2 with ONE stderr line naming the file or
flag at fault, and no traceback (issue 12, section 3).

Most cases run in-process through ``main(argv)``; a few run the module as a subprocess to
check the real exit status. ``{d}`` in an argument stands for a temporary directory holding
the bad files written by :func:`bad_files`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from shockwave_gym.cli import main

GOOD_KEY = "('ResNet-18 (batch size 32)', 1)"
JOB = {"job_type": "ResNet-18 (batch size 32)", "total_iterations": 1000, "gang": 1,
       "mode": "static", "priority": 1, "slo_s": -1, "arrival_s": 0}


def _jsonl(**changes) -> str:
    return json.dumps({**JOB, **changes}) + "\n"


def _tsv(iterations="1000", gang="1", mode="static", priority="1", arrival="0", job_type="ResNet-18 (batch size 32)") -> str:
    return "\t".join([job_type, "", "", "", "1", iterations, gang, mode, priority, "-1", "0", arrival]) + "\n"


def _tp(entries: dict) -> str:
    return json.dumps({"v100": entries})


BAD_FILES: dict[str, str | bytes] = {
    # throughput files
    "tp_list.json": "[1, 2]",
    "tp_no_v100.json": json.dumps({"k80": {}}),
    "tp_v100_list.json": json.dumps({"v100": [["x", 1]]}),
    "tp_key_1.json": _tp({"1": {"null": 3}}),
    "tp_gang_x.json": _tp({"('ResNet-18 (batch size 32)', 'x')": {"null": 3}}),
    "tp_gang_1_5.json": _tp({"('ResNet-18 (batch size 32)', 1.5)": {"null": 3}}),
    "tp_gang_3.json": _tp({"('ResNet-18 (batch size 32)', 3)": {"null": 3}}),
    "tp_gang_bool.json": _tp({"('ResNet-18 (batch size 32)', True)": {"null": 3}}),
    "tp_key_word.json": _tp({"hello": {"null": 3}}),
    "tp_key_long.json": _tp({"(" + "'a', " * 100 + "1)": {"null": 3}}),
    "tp_key_call.json": _tp({"__import__('os')": {"null": 3}}),
    "tp_entry_list.json": _tp({GOOD_KEY: [1]}),
    "tp_no_null.json": _tp({GOOD_KEY: {}}),
    "tp_rate_str.json": _tp({GOOD_KEY: {"null": "fast"}}),
    "tp_rate_neg.json": _tp({GOOD_KEY: {"null": -1}}),
    "tp_rate_bool.json": _tp({GOOD_KEY: {"null": True}}),
    "tp_rate_nan.json": _tp({GOOD_KEY: {"null": float("nan")}}),
    "tp_rate_inf.json": _tp({GOOD_KEY: {"null": float("inf")}}),
    "tp_dup.json": _tp({GOOD_KEY: {"null": 1}, GOOD_KEY.replace(", ", ","): {"null": 2}}),
    "tp_deep.json": '{"v100": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "tp_not_json.json": "{",
    "tp_empty.json": "",
    "tp_binary.json": b"\xff\xfe\x00garbage",
    "tp_bad.csv": "model,batch_size,gang,iterations_per_s\nResNet-18,32,x,3\n",
    "tp_no_col.csv": "model,batch_size\nResNet-18,32\n",
    # traces
    "big_iter.jsonl": '{"job_type": "ResNet-18 (batch size 32)", "total_iterations": 1' + "0" * 400
                      + ', "gang": 1, "mode": "static", "priority": 1, "slo_s": -1, "arrival_s": 0}\n',
    "big_iter.trace": _tsv(iterations="1" + "0" * 400),
    "iter_1e16.jsonl": _jsonl(total_iterations=10**16),
    "arrival_huge.jsonl": _jsonl(arrival_s=1e308),
    "arrival_huge.trace": _tsv(arrival="1e308"),
    "arrival_neg.jsonl": _jsonl(arrival_s=-5),
    "arrival_nan.jsonl": _jsonl().replace('"arrival_s": 0', '"arrival_s": NaN'),
    "arrival_str.jsonl": _jsonl(arrival_s="0"),
    "priority_huge.jsonl": _jsonl(priority=1e300),
    "deep_value.jsonl": _jsonl().replace('"mode": "static"', '"mode": ' + "[" * 100_000 + "]" * 100_000),
    "deep_line.jsonl": "[" * 100_000 + "]" * 100_000 + "\n",
    "gang_3.jsonl": _jsonl(gang=3),
    "gang_8.jsonl": _jsonl(gang=8),
    "mode_x.jsonl": _jsonl(mode="warp"),
    "type_x.trace": _tsv(job_type="ResNet-18"),
    "columns.trace": "ResNet-18 (batch size 32)\t1000\n",
    "unknown_key.jsonl": _jsonl(colour="red"),
    "empty.trace": "",
    "latin1.trace": _tsv().encode("utf-8") + b"\xe9\n",
    "heavy.jsonl": _jsonl(total_iterations=1_500_000_000) * 40,
    "afile": "not a directory\n",
    # issue 30, section 2: one rule for numbers (ASCII digits, documented ranges)
    "tp_rate_1e300.json": _tp({GOOD_KEY: {"null": 1e300}}),
    "tp_rate_1e-300.json": _tp({GOOD_KEY: {"null": 1e-300}}),
    "tp_batch_negative.json": _tp({"('ResNet-18 (batch size -32)', 1)": {"null": 3}}),
    "tp_batch_fullwidth.json": _tp({"('ResNet-18 (batch size \uff13\uff12)', 1)": {"null": 3}}),
    "tp_fullwidth.csv": "model,batch_size,gang,iterations_per_s\nResNet-18,\uff13\uff12,1,3\n",
    "tp_rate_1e300.csv": "model,batch_size,gang,iterations_per_s\nResNet-18,32,1,1e300\n",
    "arrival_fullwidth.trace": _tsv(arrival="\uff11\uff10"),
    "arrival_arabic.trace": _tsv(arrival="\u0664"),
    "arrival_underscore.trace": _tsv(arrival="1_000"),
    "batch_fullwidth.trace": _tsv(job_type="Transformer (batch size \uff13\uff12)"),
    "batch_fullwidth.jsonl": _jsonl(job_type="Transformer (batch size \uff13\uff12)"),
    "priority_tiny.trace": _tsv(priority="1e-320"),
    "priority_tiny.jsonl": _jsonl(priority=1e-320),
    "duration_negative.trace": _tsv().replace("\t-1\t0\t0\n", "\t-1\t-60\t0\n"),
    "duration_negative.jsonl": _jsonl(duration_s=-60),
    "too_many_jobs.trace": _tsv() * 20_001,
    "long_line.trace": "x" * 100_000,
}


@pytest.fixture
def bad_dir(tmp_path):
    for name, content in BAD_FILES.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    (tmp_path / "a_dir.json").mkdir()
    (tmp_path / "a_dir.trace").mkdir()
    return tmp_path


RUN = ["run", "--agent", "fifo", "--trace", "teaching-12", "--max-rounds", "2"]
COMPARE = ["compare", "--traces", "teaching-12", "--max-rounds", "2", "--no-figures", "--quiet", "--workers", "1"]
GEN = ["generate-trace", "--jobs", "5", "--seed", "1", "--out", "{d}/gen.jsonl"]


def _trace(name: str, gpus: str = "4") -> list[str]:
    return ["run", "--agent", "fifo", "--trace", "{d}/" + name, "--gpus", gpus]


# (case id, argv, text the one stderr line must contain)
CASES: list[tuple[str, list[str], str]] = [
    *[(f"throughputs-{name}", [*RUN, "--throughputs", "{d}/" + name], name)
      for name in BAD_FILES if name.startswith("tp_")],
    ("throughputs-missing", [*RUN, "--throughputs", "{d}/nope.json"], "nope.json"),
    ("throughputs-directory", [*RUN, "--throughputs", "{d}/a_dir.json"], "a_dir.json"),
    ("trace-10^400-jsonl", _trace("big_iter.jsonl"), "big_iter.jsonl:1:total_iterations"),
    ("trace-10^400-tsv", _trace("big_iter.trace"), "big_iter.trace:1:total_iterations"),
    ("trace-1e16-iterations", _trace("iter_1e16.jsonl"), "iter_1e16.jsonl:1:total_iterations"),
    ("trace-arrival-1e308-jsonl", _trace("arrival_huge.jsonl"), "arrival_huge.jsonl:1:arrival_s"),
    ("trace-arrival-1e308-tsv", _trace("arrival_huge.trace"), "arrival_huge.trace:1:arrival"),
    ("trace-arrival-negative", _trace("arrival_neg.jsonl"), "arrival_neg.jsonl:1:arrival_s"),
    ("trace-arrival-nan", _trace("arrival_nan.jsonl"), "arrival_nan.jsonl:1:arrival_s"),
    ("trace-arrival-string", _trace("arrival_str.jsonl"), "arrival_str.jsonl:1:arrival_s"),
    ("trace-priority-1e300", _trace("priority_huge.jsonl"), "priority_huge.jsonl:1:priority"),
    ("trace-deep-value", _trace("deep_value.jsonl"), "deep_value.jsonl:1"),
    ("trace-deep-line", _trace("deep_line.jsonl"), "deep_line.jsonl:1"),
    ("trace-gang-3", _trace("gang_3.jsonl"), "gang_3.jsonl:1:gang"),
    ("trace-gang-too-big", _trace("gang_8.jsonl", "4"), "gang_8.jsonl:1:gang"),
    ("trace-unknown-mode", _trace("mode_x.jsonl"), "mode_x.jsonl:1:mode"),
    ("trace-bad-job-type", _trace("type_x.trace"), "type_x.trace:1:job_type"),
    ("trace-columns", _trace("columns.trace"), "columns.trace:1"),
    ("trace-unknown-key", _trace("unknown_key.jsonl"), "unknown_key.jsonl:1:colour"),
    ("trace-empty", _trace("empty.trace"), "empty.trace"),
    ("trace-not-utf8", _trace("latin1.trace"), "latin1.trace:2"),
    ("trace-epoch-budget", _trace("heavy.jsonl"), "heavy.jsonl:11:total_iterations"),
    ("trace-missing-file", ["run", "--agent", "fifo", "--trace", "{d}/nope.trace"], "nope.trace: no such file"),
    ("trace-typo-bundled", ["run", "--agent", "fifo", "--trace", "teaching-13"], "did you mean 'teaching-12'"),
    ("trace-directory", ["run", "--agent", "fifo", "--trace", "{d}/a_dir.trace"], "a_dir.trace: a directory"),
    ("trace-file-without-gpus", ["run", "--agent", "fifo", "--trace", "{d}/gang_3.jsonl"], "--gpus is required"),
    ("validate-trace-bad", ["validate-trace", "{d}/mode_x.jsonl"], "mode_x.jsonl"),
    ("convert-trace-bad", ["convert-trace", "{d}/arrival_huge.jsonl", "{d}/out.trace"], "arrival_huge.jsonl:1"),
    ("run-seed-negative", [*RUN, "--seed", "-1"], "--seed"),
    ("run-seed-2^32", [*RUN, "--seed", str(2**32)], "--seed"),
    ("run-seed-word", [*RUN, "--seed", "x"], "--seed"),
    ("compare-seed-negative", [*COMPARE, "--agents", "fifo", "--seeds", "-1"], "--seeds"),
    ("generate-seed-negative", ["generate-trace", "--jobs", "5", "--seed", "-1", "--out", "{d}/g.jsonl"], "--seed"),
    ("train-seed-negative", ["train", "--out", "{d}/run", "--seed", "-5"], "--seed"),
    ("run-gpus-0", [*RUN, "--gpus", "0"], "--gpus"),
    ("run-max-rounds-0", [*RUN, "--max-rounds", "0"], "--max-rounds"),
    ("run-round-s-nan", [*RUN, "--round-s", "nan"], "round_s"),
    ("run-overhead-negative", [*RUN, "--restart-overhead-s", "-1"], "restart_overhead_s"),
    ("run-unknown-agent", ["run", "--agent", "nosuch", "--trace", "teaching-12"], "nosuch"),
    ("run-agent-opt-no-equals", [*RUN, "--agent-opt", "novalue"], "--agent-opt"),
    ("run-agent-opt-unknown", [*RUN, "--agent-opt", "colour=1"], "colour"),
    ("run-missing-agent", ["run", "--trace", "teaching-12"], "--agent"),
    ("run-early-endings-1", [*RUN, "--early-endings", "1"], "--early-endings"),
    ("run-early-endings-word", [*RUN, "--early-endings", "some"], "--early-endings"),
    ("run-regime-unknown-word", [*RUN, "--regime", "vague"], "--regime"),
    ("run-regime-seed-negative", [*RUN, "--regime-seed", "-1"], "seed"),
    ("run-regime-hides-length-from-ppo", ["run", "--agent", "ppo", "--trace", "teaching-12",
                                          "--regime", "unknown", "--max-rounds", "2"], "'unknown' regime"),
    ("unknown-command", ["frobnicate"], "frobnicate"),
    ("run-policy-missing", ["run", "--agent", "ppo", "--trace", "teaching-12", "--agent-opt", "path={d}/no-policy"], "no-policy"),
    ("generate-max-duration-1e308", [*GEN, "--max-duration-h", "1e308"], "max_duration_h"),
    ("generate-min-duration-0", [*GEN, "--min-duration-h", "0"], "min_duration_h"),
    ("generate-rate-0", [*GEN, "--arrival-rate-per-hour", "0"], "arrival_rate_per_hour"),
    ("generate-rate-tiny", [*GEN, "--arrival-rate-per-hour", "1e-300"], "arrival_rate_per_hour"),
    ("generate-jobs-0", ["generate-trace", "--jobs", "0", "--seed", "1", "--out", "{d}/g.jsonl"], "--jobs"),
    ("generate-jobs-huge", ["generate-trace", "--jobs", "10000000", "--seed", "1", "--out", "{d}/g.jsonl"], "num_jobs"),
    ("generate-gang-mix-word", [*GEN, "--gang-mix", "1:x"], "--gang-mix"),
    ("generate-gang-mix-3", [*GEN, "--gang-mix", "3:1"], "gang_mix"),
    ("generate-out-missing-dir", ["generate-trace", "--jobs", "5", "--seed", "1", "--out", "{d}/nodir/g.jsonl"], "g.jsonl"),
    ("compare-agent-opt-policy-missing", [*COMPARE, "--agents", "fifo", "ppo", "--agent-opt", "ppo:path={d}/missing"], "missing"),
    ("compare-agent-module-missing", [*COMPARE, "--agents", "mypkg.mod:factory"], "mypkg"),
    ("compare-agent-factory-missing", [*COMPARE, "--agents", "shockwave_gym.jobs:nosuch"], "nosuch"),
    ("compare-reference-absent", [*COMPARE, "--agents", "fifo", "--reference", "gavel"], "--reference"),
    ("compare-agent-opt-no-colon", [*COMPARE, "--agents", "fifo", "--agent-opt", "nocolon"], "--agent-opt"),
    ("compare-gantt-too-long", [*COMPARE, "--agents", "fifo", "--gantt", "a,b,c,d"], "--gantt"),
    ("compare-trace-typo", ["compare", "--agents", "fifo", "--traces", "teaching-13", "--out", "{d}/c"], "teaching-13"),
    ("out-jobs-csv-missing-dir", [*RUN, "--jobs-csv", "{d}/nodir/jobs.csv"], "--jobs-csv"),
    ("out-jobs-csv-under-file", [*RUN, "--jobs-csv", "{d}/afile/jobs.csv"], "--jobs-csv"),
    ("out-timeline-csv-directory", [*RUN, "--timeline-csv", "{d}"], "--timeline-csv"),
    ("out-compare-is-file", [*COMPARE, "--agents", "fifo", "--out", "{d}/afile"], "--out"),
    ("out-compare-under-file", [*COMPARE, "--agents", "fifo", "--out", "{d}/afile/sub"], "--out"),
    ("out-convert-missing-dir", ["convert-trace", "teaching-12", "{d}/nodir/x.trace"], "x.trace"),
    ("train-num-jobs-word", ["train", "--out", "{d}/run", "--num-jobs", "x:y"], "--num-jobs"),
    # issue 30, section 2: one rule for numbers (ASCII digits, documented ranges, no OverflowError)
    ("cluster-count-10^20", [*RUN, "--cluster", "v100=99999999999999999999"], "--cluster"),
    ("cluster-count-absurd", [*RUN, "--cluster", "v100=200000"], "100,000"),
    ("cluster-total-absurd", [*RUN, "--cluster", "v100=60000,p100=60000"], "100,000"),
    ("cluster-arabic-digit", [*RUN, "--cluster", "v100=\u0664"], "ASCII"),
    ("cluster-fullwidth-digit", [*RUN, "--cluster", "v100=\uff18"], "ASCII"),
    ("gpus-arabic-digit", [*RUN, "--gpus", "\u0664"], "--gpus"),
    ("gpus-absurd", [*RUN, "--gpus", "99999999999999999999"], "gpus"),
    ("max-rounds-arabic-digit", ["run", "--agent", "fifo", "--trace", "teaching-12", "--max-rounds", "\u0664"], "--max-rounds"),
    ("seed-fullwidth-digit", [*RUN, "--seed", "\uff11"], "--seed"),
    ("round-s-1e308", [*RUN, "--round-s", "1e308"], "round_s"),
    ("round-s-fullwidth", [*RUN, "--round-s", "\uff11\uff12\uff10"], "--round-s"),
    ("round-s-underscore", [*RUN, "--round-s", "1_20"], "--round-s"),
    ("compare-round-s-1e308", [*COMPARE, "--agents", "fifo", "--round-s", "1e308", "--out", "{d}/c"], "round_s"),
    ("compare-gpus-arabic", [*COMPARE, "--agents", "fifo", "--gpus", "\u0664", "--out", "{d}/c"], "--gpus"),
    ("generate-rate-fullwidth", [*GEN, "--arrival-rate-per-hour", "\uff19\uff10"], "--arrival-rate-per-hour"),
    ("generate-jobs-over-trace-limit", ["generate-trace", "--jobs", "20001", "--seed", "1", "--out", "{d}/g.jsonl"], "num_jobs"),
    ("train-num-jobs-fullwidth", ["train", "--out", "{d}/run", "--num-jobs", "\uff12:\uff14"], "--num-jobs"),
    ("trace-arrival-fullwidth", _trace("arrival_fullwidth.trace"), "arrival_fullwidth.trace:1:arrival"),
    ("trace-arrival-arabic", _trace("arrival_arabic.trace"), "arrival_arabic.trace:1:arrival"),
    ("trace-arrival-underscore", _trace("arrival_underscore.trace"), "arrival_underscore.trace:1:arrival"),
    ("trace-batch-fullwidth-tsv", _trace("batch_fullwidth.trace"), "batch_fullwidth.trace:1:job_type"),
    ("trace-batch-fullwidth-jsonl", _trace("batch_fullwidth.jsonl"), "batch_fullwidth.jsonl:1:job_type"),
    ("trace-priority-1e-320-tsv", _trace("priority_tiny.trace"), "priority_tiny.trace:1:priority"),
    ("trace-priority-1e-320-jsonl", _trace("priority_tiny.jsonl"), "priority_tiny.jsonl:1:priority"),
    ("trace-duration-negative-tsv", _trace("duration_negative.trace"), "duration_negative.trace:1:duration"),
    ("trace-duration-negative-jsonl", _trace("duration_negative.jsonl"), "duration_negative.jsonl:1:duration_s"),
    ("trace-too-many-jobs", _trace("too_many_jobs.trace"), "too_many_jobs.trace:20001"),
    ("trace-line-too-long", _trace("long_line.trace"), "long_line.trace:1"),
    ("validate-trace-too-many-jobs", ["validate-trace", "{d}/too_many_jobs.trace"], "too_many_jobs.trace"),
]


def _argv(argv: list[str], directory) -> list[str]:
    return [arg.replace("{d}", str(directory)) for arg in argv]


def test_corpus_is_large_and_unique():
    assert len(CASES) >= 60
    assert len({case_id for case_id, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("argv", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_exits_2_with_one_line(argv, expected, bad_dir, capsys, monkeypatch):
    monkeypatch.delenv("SHOCKWAVE_GYM_DEBUG", raising=False)
    monkeypatch.chdir(bad_dir)
    code = main(_argv(argv, bad_dir))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert expected in lines[0], lines[0]
    assert not (bad_dir / "nodir").exists() and not (bad_dir / "c").exists()


def test_unwritable_output_leaves_no_file_and_runs_nothing(bad_dir, capsys):
    # the timeline path is bad: the jobs CSV must not be written either (nothing ran)
    jobs = bad_dir / "jobs.csv"
    code = main(_argv([*RUN, "--jobs-csv", str(jobs), "--timeline-csv", "{d}/nodir/t.csv"], bad_dir))
    assert code == 2 and not jobs.exists()
    assert capsys.readouterr().out == ""


def test_train_without_rl_extra_is_one_line(bad_dir, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "stable_baselines3" else real(name, *a))
    code = main(["train", "--out", str(bad_dir / "run")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "'rl' extra" in err and "stable_baselines3" in err
    assert not (bad_dir / "run").exists()


def test_debug_variable_shows_the_traceback_of_input_errors(capsys, monkeypatch):
    monkeypatch.setenv("SHOCKWAVE_GYM_DEBUG", "1")
    code = main(["run", "--agent", "fifo", "--trace", "teaching-13"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" in err and err.splitlines()[-1].startswith("shockwave-gym: error: teaching-13")


def test_a_bug_keeps_its_traceback(monkeypatch):
    from shockwave_gym.cli import run_command

    def broken(args):
        raise RuntimeError("a genuine bug")

    monkeypatch.setattr(run_command, "run", broken)
    with pytest.raises(RuntimeError, match="genuine bug"):
        main(RUN)


def test_one_seed_rule_everywhere(capsys):
    messages = []
    for argv in ([*RUN, "--seed", "-1"], ["generate-trace", "--jobs", "1", "--seed", "-1", "--out", "x.jsonl"],
                 [*COMPARE, "--agents", "fifo", "--seeds", "-1"]):
        assert main(argv) == 2
        messages.append(capsys.readouterr().err.split("error: ", 1)[1].split(": ", 1)[1].split(" (see")[0])
    assert len(set(messages)) == 1 and "[0, 2**32)" in messages[0]


def test_version(capsys):
    from shockwave_gym._version import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"shockwave-gym {__version__}"


@pytest.mark.parametrize(("argv", "expected"), [
    (["run", "--agent", "fifo", "--trace", "no-such.trace"], "no-such.trace: no such file"),
    (["run", "--agent", "fifo", "--trace", "teaching-12", "--seed", "-1"], "--seed"),
    (["compare", "--agents", "fifo", "--traces", "teaching-12", "--out", "/etc/passwd/x"], "--out"),
], ids=["missing-trace", "seed", "compare-out"])
def test_real_process_exit_status(argv, expected, tmp_path):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("SHOCKWAVE_GYM_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "shockwave_gym.cli", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and expected in proc.stderr and "Traceback" not in proc.stderr


# --- env actions (issue 12 section 3, last bullet): bad values are InvalidActionError -------

@pytest.fixture(scope="module")
def envs():
    from shockwave_gym.env import ClusterEnv

    made = {}
    for mode in ("select", "priority"):
        env = ClusterEnv(trace="teaching-12", action_mode=mode)
        env.reset(seed=0)
        made[mode] = env
    return made


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, -3, 0.4, "0", object()],
                         ids=["nan", "inf", "-inf", "-3", "0.4", "str0", "object"])
def test_select_action_rejects_non_binary_values(envs, value):
    from shockwave_gym.errors import InvalidActionError

    env = envs["select"]
    action = np.zeros(env.max_jobs, dtype=object)
    action[0] = value
    with pytest.raises(InvalidActionError, match="select action"):
        env.step(action)


@pytest.mark.parametrize("dtype", [str, object], ids=["str", "object"])
def test_priority_action_rejects_non_numeric_arrays(envs, dtype):
    """Strings and objects are refused (bool scores are numbers: the Box space contains them)."""
    from shockwave_gym.errors import InvalidActionError

    env = envs["priority"]
    with pytest.raises(InvalidActionError, match="priority"):
        env.step(np.zeros(env.max_jobs).astype(dtype))
