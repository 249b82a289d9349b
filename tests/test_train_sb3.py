"""docs/TRAINING.md's plain-SB3 script runs as printed (with fewer steps), and training on the
suites selects the best validation checkpoint as the policy ``path=`` loads."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from shockwave_agents import make_agent  # noqa: E402
from shockwave_gym.cli import main  # noqa: E402
from shockwave_gym.training.selection import score  # noqa: E402
from shockwave_gym.training.train import TrainConfig  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "TRAINING.md"


def sb3_script() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    (script,) = [b for b in blocks if "PPO(SlotPolicy" in b]
    return script


def test_the_documented_sb3_script_trains_saves_and_evaluates(tmp_path, monkeypatch):
    script = sb3_script()
    assert len(script.strip().splitlines()) <= 25
    assert "total_timesteps=100_000" in script and '"prior": "srtf"' in script
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        exec(compile(script.replace("100_000", "1_024").replace("every_s=15", "every_s=0.5"), str(DOC), "exec"),
             {"__name__": "__main__"})
    # the script talks while it trains, on stderr: a start line, step lines, and an end line
    lines = err.getvalue().splitlines()
    assert lines[0] == "[learn] 1,024 steps; a line every 0.5 s", lines
    assert any(re.match(r"\[learn\] [\d,]+/1,024 steps(, [\d,]+ steps/s|; still )", line) for line in lines[1:-1])
    assert re.fullmatch(r"\[learn\] done: 1,024 steps in [\d,]+ s", lines[-1])
    printed = dict(line.split() for line in out.getvalue().splitlines())
    assert set(printed) == {"mine", "srtf", "fifo"} and all(int(v) > 0 for v in printed.values())
    meta = json.loads((tmp_path / "runs" / "sb3" / "policy.json").read_text())
    assert (meta["algo"], meta["action_mode"]) == ("ppo", "priority")


def test_selection_scores_are_ratios_to_fifo_per_trace():
    fifo = {"a": {"avg_jct_s": 100.0, "worst_ftf_themis": 2.0, "worst_ftf": 9.0},
            "b": {"avg_jct_s": 1000.0, "worst_ftf_themis": 4.0, "worst_ftf": 9.0}}
    agent = {"a": {"avg_jct_s": 50.0, "worst_ftf_themis": 1.0, "worst_ftf": 1.0, "unfair_fraction_themis": 0.2},
             "b": {"avg_jct_s": 1500.0, "worst_ftf_themis": 4.0, "worst_ftf": 1.0, "unfair_fraction_themis": 0.4}}
    assert score("jct", agent, fifo) == pytest.approx((0.5 + 1.5) / 2)
    # fair: mean Themis worst-FTF ratio 0.75 (the static worst_ftf plays no part) + mean unfair 0.3
    # + 10 x (JCT ratio 1.0 - 1 -> 0)
    assert score("fair", agent, fifo) == pytest.approx(0.75 + 0.3)
    agent["b"]["avg_jct_s"] = 1700.0  # JCT ratio 1.1 -> penalty 10 x 0.1
    assert score("fair", agent, fifo) == pytest.approx(0.75 + 0.3 + 1.0)
    agent["a"]["avg_jct_s"] = None
    assert score("jct", agent, fifo) is None


def test_suite_run_writes_the_best_validation_checkpoint_as_the_policy(tmp_path, monkeypatch):
    # and leaves no SB3 log folder behind (SB3's default logger makes one per run)
    import tempfile

    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    (tmp_path / "temp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    out = tmp_path / "run"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["train", "--suites", "small-light,small-overloaded", "--timesteps", "1024", "--eval-every", "256",
                     "--val-traces", "1", "--embed-dim", "8", "--hidden-dim", "16", "--batch-size", "128",
                     "--checkpoint-every", "100000", "--progress-every-s", "1000", "--out", str(out)])
    assert code == 0, err.getvalue()
    report = json.loads((out / "eval.json").read_text())
    assert report["config"]["envs"] == 2 and report["config"]["n_steps"] == 256  # 512 in total over 2 clusters
    assert [t["gpus"] for t in report["eval_traces"]] == [12, 12]
    assert [t["name"] for t in report["eval_traces"]] == ["small-light-validation-0", "small-overloaded-validation-0"]
    scores = [row["score"] for row in report["history"]]
    best = min(range(len(scores)), key=lambda i: (scores[i], i))
    assert report["selected"]["timesteps"] == report["history"][best]["timesteps"]
    # policy.* is the best checkpoint, final_policy.* the last weights
    chosen = np.load(out / "policy.npz")
    best_file = np.load(out / "best_policy.npz")
    assert all(np.array_equal(chosen[k], best_file[k]) for k in chosen.files)
    assert json.loads((out / "policy.json").read_text())["training"]["timesteps"] == report["selected"]["timesteps"]
    final = np.load(out / "final_policy.npz")
    if report["selected"]["timesteps"] != report["timesteps"]:
        assert any(not np.array_equal(chosen[k], final[k]) for k in chosen.files)
    agent = make_agent("ppo", path=str(out))
    assert agent.policy_meta["training"]["suites"] == "small-light,small-overloaded"
    assert list((tmp_path / "temp").glob("SB3-*")) == []


def test_train_config_fills_defaults_from_the_tasks(tmp_path):
    config = TrainConfig(out=str(tmp_path), suites="in-distribution")
    tasks = config.tasks()
    assert config.envs == 3 and config.n_steps == 171 and config.batch_size == 171 and config.max_jobs == 60
    assert sorted({kw["gpus"] for kw in tasks.env_kwargs}) == [12]
    assert len(tasks.val_traces) == 6
    with pytest.raises(Exception, match="at least one cluster per suite"):
        TrainConfig(out=str(tmp_path), suites="small-light,canonical", envs=1).tasks()


def attention_script() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    (script,) = [b for b in blocks if "RoundDiscountedPPO(AttentionSlotPolicy" in b]
    return script


def test_the_documented_attention_script_trains_saves_and_evaluates(tmp_path, monkeypatch):
    """The plain-SB3 attention script (at most 20 lines) runs as printed with 512 steps (and
    one validation trace), and what it saves is an attention policy that the ppo agent loads."""
    script = attention_script()
    assert len(script.strip().splitlines()) <= 20
    assert "total_timesteps=50_000" in script
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        small = script.replace("50_000", "512").replace('"validation")', '"validation")[:1]')  # one trace
        exec(compile(small, str(DOC), "exec"), {"__name__": "__main__"})
    printed = dict(line.split() for line in out.getvalue().splitlines())
    assert set(printed) == {"mine", "wsrpt", "srtf"} and all(int(v) > 0 for v in printed.values())
    meta = json.loads((tmp_path / "runs" / "attention" / "policy.json").read_text())
    assert (meta["algo"], meta["action_mode"], meta["encoder"], meta["prior"]) == ("ppo", "priority", "attention", "wsrpt")
