"""Learned agents end to end: `shockwave-gym train` for each algorithm (a couple of thousand
steps on a small generated workload), the files it writes, reloading them (weights-only and
SB3 zip), and evaluation through the harness. Nothing here asserts learned quality: that is
noisy and belongs to benchmarks/learned_eval.py."""

from __future__ import annotations

import contextlib
import io
import json
import math
import warnings
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from shockwave_agents import make_agent  # noqa: E402
from shockwave_agents.learned.weights import UntrustedFileWarning  # noqa: E402
from shockwave_gym.cli import main  # noqa: E402
from shockwave_gym.harness import evaluate  # noqa: E402

#: A small workload so that each run takes seconds: 8-12 jobs on 8 GPUs, one held-out trace.
SMALL = ["--suites", "none", "--gpus", "8", "--num-jobs", "8:12", "--arrival-rate", "60:120", "--max-duration-h", "0.5",
         "--eval-seeds", "5", "--progress-every-s", "0"]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def check_outputs(out: Path, algo: str, mode: str, steps: int, *, rl: bool = True) -> dict:
    meta = json.loads((out / "policy.json").read_text())
    assert (meta["algo"], meta["action_mode"]) == (algo, mode)
    assert (out / "policy.npz").stat().st_size < 3_000_000
    report = json.loads((out / "eval.json").read_text())
    if rl:
        assert (out / "model.zip").is_file()
        assert report["timesteps"] >= steps
        assert report["env_steps_per_s"] > 0
        assert [row["timesteps"] for row in report["history"]][-1] == report["timesteps"]
        assert list((out / "checkpoints").glob("model_*.zip")) and list((out / "checkpoints").glob("policy_*.npz"))
        final = report["final"]["mean"]
    else:
        final = report["student"]["mean"]
    assert math.isfinite(final["avg_jct_s"]) and final["decision_ms_per_round"] > 0
    return report


def harness_row(out: Path, label: str, path: str) -> dict:
    results = evaluate({label: "ppo"}, "teaching-12", seeds=(0,), workers=1, progress=False, figures=False,
                       agent_options={label: {"path": path}})
    assert list(results["agent"]) == [label]
    row = results.iloc[0].to_dict()
    assert row["completed_jobs"] == row["num_jobs"] == 12
    return row


@pytest.mark.parametrize(
    ("algo", "mode", "envs"),
    [("ppo", "priority", "2"), ("maskable_ppo", "sequential", "1"), ("maskable_ppo", "select", "1")],
)
def test_train_save_reload_and_evaluate_through_the_harness(tmp_path, algo, mode, envs):
    out = tmp_path / algo
    steps = 1024 if mode == "select" else 2048  # MaskablePPO on MultiBinary is the slow path
    code, stdout, stderr = run_cli([
        "train", "--algo", algo, "--action-mode", mode, "--reward", "jct=1,ftf=0.1", "--timesteps", str(steps),
        "--envs", envs, "--n-steps", "256", "--batch-size", "128", "--eval-every", str(steps // 2),
        "--checkpoint-every", str(steps // 2), "--embed-dim", "16", "--hidden-dim", "32", "--out", str(out), *SMALL,
    ])
    assert code == 0, stderr
    assert "[eval] fifo" in stderr and "[train] done" in stderr and "policy.npz" in stdout
    report = check_outputs(out, algo, mode, steps)
    assert report["config"]["reward"] == {"jct": 1.0, "ftf": 0.1}

    weights_row = harness_row(out, f"{algo}-weights", str(out))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = make_agent("ppo", path=str(out / "model.zip"), trust=True)
    assert any(issubclass(w.category, UntrustedFileWarning) for w in caught)
    assert agent.action_mode == mode
    # the zip holds the last weights, as final_policy.*; policy.* is the best validation checkpoint
    reloaded = make_agent("ppo", path=str(out / "final_policy.npz"))
    best = make_agent("ppo", path=str(out / "best_policy.npz"))
    selected = make_agent("ppo", path=str(out))
    assert selected.policy_meta["training"]["timesteps"] == report["selected"]["timesteps"]
    for (w1, _), (w2, _) in zip(best.network.job, selected.network.job, strict=True):
        assert (w1 == w2).all()
    for name in ("job", "context", "mix"):
        for (w1, b1), (w2, b2) in zip(getattr(agent.network, name), getattr(reloaded.network, name), strict=True):
            assert (w1 == w2).all() and (b1 == b2).all()
    assert weights_row["avg_jct_s"] > 0


def test_behaviour_cloning_cli_then_finetune(tmp_path):
    out = tmp_path / "bc"
    code, stdout, stderr = run_cli([
        "train", "--algo", "bc", "--teacher", "srtf", "--episodes", "4", "--bc-epochs", "3",
        "--embed-dim", "16", "--hidden-dim", "32", "--finetune", "--timesteps", "512", "--envs", "1", "--obs-version", "3", "--vec", "single",
        "--n-steps", "256", "--batch-size", "128", "--eval-every", "100000", "--checkpoint-every", "512",
        "--out", str(out), *SMALL,
    ])
    assert code == 0, stderr
    assert "[record] 4/4 episodes" in stderr and "[clone] epoch 3" in stderr
    report = check_outputs(out, "ppo", "priority", 0, rl=False)
    assert report["rounds"] > 20 and report["teacher"]["mean"]["avg_jct_s"] > 0
    with __import__("numpy").load(out / "dataset.npz", allow_pickle=False) as data:
        assert data["jobs"].shape[0] == data["label"].shape[0] == report["rounds"]
    tuned = check_outputs(out / "finetune", "ppo", "priority", 512)
    assert tuned["config"]["init_from"] == str(out / "policy")
    assert tuned["config"]["obs_version"] == 3  # the clone's version reaches the fine-tuning run
    harness_row(out, "distilled", str(out / "finetune"))


def test_shipped_agents_load_by_name_and_run_through_the_harness():
    results = evaluate("ppo,shockwave-distilled", "teaching-12", seeds=(0,), workers=1, progress=False, figures=False)
    assert sorted(results["agent"]) == ["ppo", "shockwave-distilled"]
    assert (results["completed_jobs"] == 12).all()
    for name in ("ppo", "shockwave-distilled"):
        meta = json.loads((Path(make_agent(name).policy_path)).with_suffix(".json").read_text())
        assert meta["training"]["command"].startswith("shockwave-gym train")


def test_train_rejects_bad_input(tmp_path):
    code, _, stderr = run_cli(["train", "--algo", "maskable_ppo", "--action-mode", "priority", "--out", str(tmp_path)])
    assert code == 2 and "maskable action mode" in stderr
    code, _, stderr = run_cli(["train", "--num-jobs", "ten", "--out", str(tmp_path)])
    assert code == 2 and "--num-jobs expects LO:HI" in stderr
    code, _, stderr = run_cli(["train", "--suites", "none", "--eval-seeds", str(2**32), "--timesteps", "8", "--out", str(tmp_path)])
    assert code == 2 and "held-out seeds" in stderr
    code, _, stderr = run_cli(["train", "--suites", "small-light,nowhere", "--timesteps", "8", "--out", str(tmp_path)])
    assert code == 2 and "unknown suite 'nowhere'" in stderr
    code, _, stderr = run_cli(["train", "--suites", "small-light,canonical", "--envs", "1", "--timesteps", "8",
                               "--out", str(tmp_path)])
    assert code == 2 and "at least one cluster per suite" in stderr
    with pytest.raises(Exception, match="no such policy"):
        make_agent("ppo", path=str(tmp_path / "nothing"))


def test_train_into_a_pipe_is_never_silent_for_long(tmp_path):
    """stderr is a pipe (a log, `| tee`): a line at once, then one at least every
    --progress-every-s seconds until the end, whatever phase training is in."""
    import subprocess
    import sys
    import time

    every_s = 1.0
    argv = [sys.executable, "-m", "shockwave_gym.cli", "train", "--timesteps", "512", "--envs", "1", "--n-steps", "256",
            "--batch-size", "128", "--embed-dim", "16", "--hidden-dim", "32", "--out", str(tmp_path / "run"),
            *SMALL[:-1], str(every_s)]
    start = time.perf_counter()
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    arrivals = [(time.perf_counter() - start, line) for line in process.stderr]
    assert process.wait(timeout=600) == 0, "".join(line for _, line in arrivals)
    lines = [line for _, line in arrivals]
    assert lines[0].startswith("[train] loading torch") and lines[1].startswith("[train] preparing")
    # whether a phase here is silent for longer than every_s depends on the machine's speed, so
    # the heartbeat itself is checked with a deliberate silent phase in
    # test_the_heartbeat_speaks_in_a_silent_phase_and_not_otherwise; this run checks the gaps end to end
    times = [0.0, *(t for t, _ in arrivals)]
    # generous slack for a loaded machine: the heartbeat is every 1 s; without it, torch's import and
    # the first evaluation are silent for tens of seconds
    assert max(b - a for a, b in zip(times[2:], times[3:], strict=False)) < every_s + 10.0, arrivals


def test_the_heartbeat_speaks_in_a_silent_phase_and_not_otherwise(capsys):
    """A phase without progress lines gets ``still <phase>`` lines every ``every_s`` seconds,
    with the steps so far; a phase that logs often enough gets none, and none follow the end."""
    import time

    from shockwave_gym.training.lines import Heartbeat, log

    with Heartbeat(0.05, 512, "collecting the first rollout") as beat:
        beat.steps = lambda: 256
        log("[train] preparing")
        time.sleep(0.5)  # silent: no line logged for ten periods
    silent = capsys.readouterr().err.splitlines()
    stills = [line for line in silent if "; still " in line]
    assert silent[0] == "[train] preparing" and len(stills) >= 2
    assert all(line.startswith("[train] 256/512 steps; still collecting the first rollout (elapsed ") for line in stills)
    with Heartbeat(0.5, 512, "updating"):
        for _ in range(6):
            log("[train] busy")
            time.sleep(0.02)  # a line every 20 ms: never 0.5 s of silence
    time.sleep(0.6)  # after the end: the thread is gone
    assert "; still " not in capsys.readouterr().err


def test_cloning_options_are_refused_with_an_rl_algo(tmp_path):
    code, _, stderr = run_cli(["train", "--algo", "ppo", "--bc-loss", "select", "--dagger-iterations", "2",
                               "--out", str(tmp_path / "x")])
    assert code == 2 and not (tmp_path / "x").exists()
    assert stderr.strip().splitlines()[-1].endswith(
        "--bc-loss, --dagger-iterations: behaviour cloning options, for --algo bc only (got --algo ppo)")
