"""Behaviour cloning in every information regime (`train --algo bc --obs-version 3` on regime
suites: each recorded trace in the regime its suite gives it, a version-3 student) and the
``select`` cloning loss."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from shockwave_gym.cli import main  # noqa: E402
from shockwave_gym.errors import InputError  # noqa: E402
from shockwave_gym.traces.suites import suite_regime  # noqa: E402
from shockwave_gym.training.imitation import ImitationConfig, selection_loss  # noqa: E402

UNKNOWN = "small-overloaded-unknown"


def test_each_recording_episode_gets_its_suites_regime():
    config = ImitationConfig(out="unused", suites=f"small-light,{UNKNOWN}", obs_version=3, val_traces=1)
    trace, gpus, regime = config.episode_task(0)
    assert trace.name.startswith("small-light-train-") and regime is None and gpus == 12
    trace, gpus, regime = config.episode_task(1)
    assert trace.name.startswith(f"{UNKNOWN}-train-")
    assert regime == suite_regime(UNKNOWN, int(trace.name.rsplit("-s", 1)[1])) and regime.knowledge == "unknown"
    with pytest.raises(InputError, match="observation version 2"):
        ImitationConfig(out="unused", suites=UNKNOWN, obs_version=2)


def test_bc_cli_records_in_the_regime_and_writes_a_version_3_student(tmp_path):
    out = tmp_path / "bc"
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["train", "--algo", "bc", "--teacher", "fifo", "--obs-version", "3", "--suites", UNKNOWN,
                     "--episodes", "1", "--dagger-iterations", "1", "--dagger-episodes", "1", "--bc-epochs", "2",
                     "--bc-loss", "select", "--val-traces", "1", "--embed-dim", "8", "--hidden-dim", "16",
                     "--out", str(out)])
    assert code == 0, err.getvalue()
    meta = json.loads((out / "policy.json").read_text())
    assert meta["obs_version"] == 3 and meta["training"]["loss"] == "select"
    report = json.loads((out / "eval.json").read_text())
    # the validation trace ran in its regime: FIFO's figures equal a run of it in that regime
    from shockwave_agents import make_agent
    from shockwave_gym.config import SimConfig
    from shockwave_gym.runner import run_episode
    from shockwave_gym.traces.suites import entry_trace, split_entries

    entry = split_entries(UNKNOWN, "validation")[0]
    played = run_episode(entry_trace(entry), make_agent("fifo"), SimConfig(gpus=12), progress=False, regime=entry.regime)
    assert report["teacher"]["per_trace"][entry.trace_name]["avg_jct_s"] == pytest.approx(played.metrics["avg_jct_s"])
    with np.load(out / "dataset.npz", allow_pickle=False) as data:
        assert sorted(set(data["episode"].tolist())) == [0, 1]  # one teacher episode, one DAgger episode


def test_bc_records_elastic_suites_beside_rigid_ones_with_the_rigid_head(tmp_path):
    """The distillation's 17 suites include elastic-nominal: cloning records and runs the rigid
    slot policy (every job at its reference gang), so the mix is allowed there, while PPO on
    count actions keeps refusing it."""
    from shockwave_gym.training.imitation import record_episode
    from shockwave_gym.training.tasks import suite_tasks

    with pytest.raises(InputError, match="cannot train on elastic suites"):
        suite_tasks("small-light,elastic-nominal", envs=None, val_traces=1, obs_version=3)
    config = ImitationConfig(out=str(tmp_path), suites="small-light,elastic-nominal", obs_version=3, val_traces=1,
                             teacher="srtf")
    assert not config.tasks().elastic
    recorded = record_episode(config, 1)  # episode 1: elastic-nominal
    assert recorded["trace"].startswith("elastic-nominal-train-") and recorded["rounds"] > 0
    labels, valid = recorded["arrays"]["label"], recorded["arrays"]["job_valid"]
    assert labels.sum() > 0 and not (labels & (valid == 0)).any()


def test_bc_finetune_on_elastic_beside_rigid_suites_is_refused_before_recording(tmp_path):
    """Cloning runs the mix, PPO's fine-tune cannot: the refusal comes before any recording."""
    out = tmp_path / "bc"
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["train", "--algo", "bc", "--teacher", "fifo", "--obs-version", "3", "--suites",
                     "small-light,elastic-nominal", "--episodes", "1", "--bc-epochs", "1", "--val-traces", "1",
                     "--finetune", "--timesteps", "512", "--vec", "single", "--out", str(out)])
    assert code == 2
    assert "cannot train on elastic suites (elastic-nominal) beside rigid ones" in err.getvalue()
    assert "[record]" not in err.getvalue() and not (out / "dataset.npz").exists()


def test_bc_fit_all_reaches_the_fit_and_is_recorded(tmp_path):
    out = tmp_path / "bc"
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["train", "--algo", "bc", "--teacher", "fifo", "--obs-version", "3", "--suites", UNKNOWN,
                     "--episodes", "2", "--bc-epochs", "1", "--bc-fit-all", "--val-traces", "1", "--embed-dim", "8",
                     "--hidden-dim", "16", "--out", str(out)])
    assert code == 0, err.getvalue()
    meta = json.loads((out / "policy.json").read_text())
    assert meta["training"]["fit_all"] is True and "val_loss" not in meta["training"]["fit"]
    with pytest.raises(InputError, match="fit_all must be true or false"):
        ImitationConfig(out="unused", suites=UNKNOWN, obs_version=3, fit_all="no")


def test_bc_rejects_an_unknown_loss():
    with pytest.raises(InputError, match="loss must be one of bce, select"):
        ImitationConfig(out="unused", loss="hinge")


def test_selection_loss_is_small_only_when_every_pick_outranks_every_job_left():
    picked = torch.tensor([[1.0, 1.0, 0.0, 0.0]])
    left = torch.tensor([[0.0, 0.0, 1.0, 1.0]])
    good = selection_loss(torch.tensor([[5.0, 4.0, -4.0, -5.0]]), picked, left)
    one_swapped = selection_loss(torch.tensor([[5.0, -4.0, 4.0, -5.0]]), picked, left)
    assert float(good) < 0.01 < 1.0 < float(one_swapped)
    # per pick: -log sigmoid(logit - logsumexp(left))
    logits = torch.tensor([[0.5, -0.2, 0.1, 0.3]])
    rival = torch.logsumexp(torch.tensor([0.1, 0.3]), 0)
    expected = -(torch.nn.functional.logsigmoid(0.5 - rival) + torch.nn.functional.logsigmoid(-0.2 - rival)) / 2
    assert float(selection_loss(logits, picked, left)) == pytest.approx(float(expected), rel=1e-6)


def test_selection_loss_costs_nothing_and_keeps_finite_gradients_when_nothing_is_left_out():
    logits = torch.tensor([[0.3, -0.1, 0.0], [0.2, 0.1, -1.0]], requires_grad=True)
    picked = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    left = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # row 0 ran every job it had
    loss = selection_loss(logits, picked, left)
    loss.backward()
    assert torch.isfinite(logits.grad).all()
    assert float(logits.grad[0].abs().sum()) == 0.0
    assert float(loss.detach()) == pytest.approx(float(-torch.nn.functional.logsigmoid(torch.tensor(0.1))) / 3, rel=1e-6)


def test_the_train_command_offers_exactly_the_cloning_losses():
    """``--bc-loss``'s choices are spelt in the CLI (which imports no torch) and must stay the
    losses the cloning code accepts."""
    import argparse

    from shockwave_gym.cli import build_parser
    from shockwave_gym.training.imitation import LOSSES

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    bc_loss = next(a for a in commands.choices["train"]._actions if "--bc-loss" in a.option_strings)
    assert tuple(bc_loss.choices) == LOSSES
