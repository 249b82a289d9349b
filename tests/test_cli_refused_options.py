"""Options that a command would misread or silently ignore are refused with one line and
exit 2, before anything runs: the training command's numbers, option groups its mode does
not use and repeated keys; `run`'s oracle agents, progress interval and repeated options;
the grader's limits; the leaderboard's `--doc`."""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_gym.cli import main
from shockwave_gym.errors import InputError


def refused(argv: list[str], capsys) -> str:
    """The one error line of ``main(argv)``, which must return 2."""
    code = main(argv)
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert code == 2 and len(errors) == 1, (code, errors)
    return errors[0]


@pytest.mark.parametrize(("flags", "words"), [
    (["--learning-rate", "-1"], "learning_rate (--learning-rate) must be > 0, got -1.0"),
    (["--ent-coef", "nan"], "ent_coef (--ent-coef) must be a finite number"),
    (["--gamma", "1.5"], "gamma (--gamma) must be > 0 and <= 1"),
    (["--embed-dim", "0"], "embed_dim must be a positive integer, got 0"),
    (["--hidden-dim", "-5"], "hidden_dim must be a positive integer, got -5"),
    (["--progress-every-s", "-5"], "progress_every_s (--progress-every-s) must be >= 0"),
    (["--gpus", "7", "--eval-seeds", "5"], "--gpus, --eval-seeds: options of the generated workload, used with "
                                           "--suites none only"),
    (["--reward", "jct=1,jct=2"], "--reward: a term is given twice ('jct'"),
    (["--reward", "=1"], "--reward: a term has no name"),
])
def test_train_refuses_bad_numbers_and_unused_workload_options(flags, words, tmp_path, capsys):
    pytest.importorskip("torch")
    line = refused(["train", "--suites", "small-light", "--timesteps", "256", "--out", str(tmp_path / "r"), *flags],
                   capsys)
    assert words in line
    assert not (tmp_path / "r" / "policy.npz").exists()


def test_train_refuses_a_suite_given_twice_and_ppo_options_for_cloning(tmp_path, capsys):
    pytest.importorskip("torch")
    out = str(tmp_path / "r")
    assert "--suites: small-light given twice" in refused(
        ["train", "--suites", "small-light,small-light", "--out", out], capsys)
    line = refused(["train", "--algo", "bc", "--suites", "small-light", "--timesteps", "5000", "--n-epochs", "3",
                    "--out", out], capsys)
    assert "--timesteps, --n-epochs: PPO options, which --algo bc uses only with --finetune" in line


def test_the_python_configs_refuse_what_the_flags_refuse(tmp_path):
    pytest.importorskip("torch")
    from shockwave_gym.course.isolation import Limits
    from shockwave_gym.training.imitation import ImitationConfig
    from shockwave_gym.training.train import TrainConfig

    for bad in ({"learning_rate": 0.0}, {"clip_range": -0.1}, {"gae_lambda": 2.0}, {"log_std_init": float("inf")},
                {"embed_dim": 0}):
        with pytest.raises(InputError, match=next(iter(bad))):
            TrainConfig(out=str(tmp_path), suites="small-light", **bad)
    with pytest.raises(InputError, match="hidden_dim must be a positive integer"):
        ImitationConfig(out=str(tmp_path), suites="small-light", hidden_dim=0)
    with pytest.raises(InputError, match=r"learning_rate \(--bc-learning-rate\) must be > 0"):
        ImitationConfig(out=str(tmp_path), suites="small-light", learning_rate=-1e-3)
    assert TrainConfig(out=str(tmp_path), suites="small-light").embed_dim == 32  # the defaults pass
    for bad in ({"wall_s": float("inf")}, {"wall_s": 1e300}, {"memory_mb": 10**20}, {"memory_mb": 0}):
        with pytest.raises(InputError):
            Limits(**bad)
    assert Limits().cpu_s == 120


def test_a_recording_that_is_not_one_is_one_clear_error(tmp_path, capsys):
    pytest.importorskip("torch")
    from shockwave_gym.training.imitation import load_dataset, save_dataset

    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not an archive")
    with pytest.raises(InputError, match="garbage.npz: not a readable recording .*not an .npz archive"):
        load_dataset(garbage)
    other = tmp_path / "other.npz"
    save_dataset({"x": np.zeros(3)}, other)
    with pytest.raises(InputError, match="other.npz: not a recording"):
        load_dataset(other)
    line = refused(["train", "--algo", "bc", "--suites", "small-light", "--dataset", str(garbage),
                    "--out", str(tmp_path / "r")], capsys)
    assert "garbage.npz: not a readable recording" in line


def test_run_refuses_an_oracle_agent_without_the_oracle_view_and_bad_progress(capsys):
    line = refused(["run", "--agent", "srtf", "--agent-opt", "oracle=true", "--trace", "teaching-12"], capsys)
    assert "--agent srtf reads hidden future information" in line and "pass --oracle" in line
    assert main(["run", "--agent", "srtf", "--agent-opt", "oracle=true", "--oracle", "--trace", "teaching-12",
                 "--json"]) == 0
    capsys.readouterr()
    for value in ("-5", "nan", "inf"):
        assert "--progress-every-s: must be a finite number of seconds >= 0" in refused(
            ["run", "--agent", "fifo", "--trace", "teaching-12", "--progress-every-s", value], capsys)


def test_an_agent_option_given_twice_is_refused(tmp_path, capsys):
    assert "--agent-opt: option 'backfill' given twice" in refused(
        ["run", "--agent", "srtf", "--agent-opt", "backfill=true", "--agent-opt", "backfill=false",
         "--trace", "teaching-12"], capsys)
    assert "--agent-opt: option 'backfill' of 'srtf' given twice" in refused(
        ["compare", "--agents", "srtf", "--agent-opt", "srtf:backfill=true", "--agent-opt", "srtf:backfill=false",
         "--traces", "teaching-12", "--out", str(tmp_path / "c")], capsys)


@pytest.mark.parametrize(("flags", "words"), [
    (["--memory-limit", "100000000000000000000"], "--memory-limit: expected a positive number <= 1048576"),
    (["--time-limit", "1e300"], "--time-limit: expected a positive number <= 86400"),
    (["--time-limit", "inf"], "--time-limit: expected a positive number <= 86400"),
    (["--time-limit", "nan"], "--time-limit: expected a positive number <= 86400"),
])
def test_the_grader_refuses_limits_it_cannot_set(flags, words, tmp_path, capsys):
    submission = tmp_path / "sub.py"
    submission.write_text("x = 1\n")
    assert words in refused(["course", "grade", "1", str(submission), *flags], capsys)


def test_leaderboard_checks_doc_before_any_cell_runs(tmp_path, capsys):
    (tmp_path / "afile").write_text("")
    (tmp_path / "LB.csv").mkdir()
    for doc, words in ((tmp_path / "afile" / "LB.md", "afile: exists and is not a directory"),
                       (tmp_path / "LB.md", "LB.csv: is a directory")):
        line = refused(["leaderboard", "--split", "test", "--quick", "--out", str(tmp_path / "lb"), "--doc", str(doc)],
                       capsys)
        assert "--doc" in line and words in line
        assert not (tmp_path / "lb" / "cells").exists()


def test_run_lets_agent_opt_override_the_spec_and_names_teacher_opt(tmp_path, capsys):
    """Each flag's keys are checked once: an ``--agent-opt`` still overrides its ``--agent``
    spec's option (docs/HARNESS.md), and a repeated ``--teacher-opt`` names that flag."""
    import json

    assert main(["run", "--agent", "srtf:backfill=true", "--agent-opt", "backfill=false", "--trace", "teaching-12",
                 "--json"]) == 0
    overridden = json.loads(capsys.readouterr().out)
    assert main(["run", "--agent", "srtf", "--agent-opt", "backfill=false", "--trace", "teaching-12", "--json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert overridden["avg_jct_s"] == direct["avg_jct_s"] and overridden["makespan_s"] == direct["makespan_s"]
    pytest.importorskip("torch")
    line = refused(["train", "--algo", "bc", "--suites", "small-light", "--teacher", "srtf", "--teacher-opt",
                    "backfill=true", "--teacher-opt", "backfill=false", "--out", str(tmp_path / "r")], capsys)
    assert "--teacher-opt: option 'backfill' given twice" in line


def test_cloning_refuses_a_reward_without_finetune_and_an_array_file(tmp_path, capsys):
    pytest.importorskip("torch")
    from shockwave_gym.training.imitation import ImitationConfig
    from shockwave_gym.training.train import TrainConfig
    from shockwave_gym.training.workload import Workload

    assert "--reward: PPO options, which --algo bc uses only with --finetune" in refused(
        ["train", "--algo", "bc", "--suites", "small-light", "--reward", "jct=1", "--out", str(tmp_path / "r")], capsys)
    array = tmp_path / "array.npy"
    np.save(array, np.zeros(3))
    assert "array.npy: not a recording" in refused(
        ["train", "--algo", "bc", "--suites", "small-light", "--dataset", str(array), "--out", str(tmp_path / "r")],
        capsys)
    for config in (TrainConfig, ImitationConfig):
        with pytest.raises(InputError, match="generated workload .* with suites=None only"):
            config(out=str(tmp_path), suites="small-light", workload=Workload(gpus=7))


def test_compare_and_leaderboard_refuse_an_agent_set_to_read_the_oracle(tmp_path, capsys):
    """They give no agent the oracle view, so ``oracle=true`` is refused before any cell runs
    (it used to fail in its cells, with a traceback and exit 1)."""
    line = refused(["compare", "--agents", "fifo", "--agent", "peek=srtf:oracle=true", "--traces", "teaching-12",
                    "--out", str(tmp_path / "c")], capsys)
    assert "agent 'peek': oracle=true reads the hidden future schedule" in line and "run --oracle" in line
    assert not (tmp_path / "c").exists()
    line = refused(["leaderboard", "--split", "test", "--quick", "--agents", "fifo", "--agent",
                    "peek=wsrpt:oracle=true", "--out", str(tmp_path / "lb")], capsys)
    assert "agent 'peek': oracle=true" in line and not (tmp_path / "lb" / "cells").exists()
