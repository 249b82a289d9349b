"""The slot policy's linear skip term and its SRTF prior (residual policy learning): the
initial policy schedules exactly like SRTF, numpy and torch agree with the skip, files with
and without it load as described, and bad values are refused with the field named."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import gymnasium as gym  # noqa: E402

import shockwave_gym  # noqa: E402,F401  (registers the env ids)
from shockwave_agents.fifo import FifoAgent  # noqa: E402
from shockwave_agents.learned.adapter import PolicyAgent  # noqa: E402
from shockwave_agents.learned.inference import NumpySlotNetwork, TorchSlotNetwork  # noqa: E402
from shockwave_agents.learned.priors import PRIOR_LOG_STD_INIT, SRTF_BIAS, SRTF_WEIGHT  # noqa: E402
from shockwave_agents.learned.weights import (  # noqa: E402
    PolicyFileError,
    build_policy,
    load_network,
    load_policy,
    read_meta,
    save_policy,
)
from shockwave_agents.srtf import SrtfAgent  # noqa: E402
from shockwave_gym.cli import main  # noqa: E402
from shockwave_gym.errors import InputError  # noqa: E402
from shockwave_gym.interface.observation import feature_names  # noqa: E402
from shockwave_gym.runner import run_episode  # noqa: E402
from shockwave_gym.simulator import SimConfig  # noqa: E402
from shockwave_gym.traces.suites import split_traces  # noqa: E402
from shockwave_gym.training.train import TrainConfig  # noqa: E402

torch.set_num_threads(1)

from helpers.policies import obs_to_tensors, perturbed, random_obs  # noqa: E402
from helpers.scripts import load_benchmark  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODES = [("ppo", "priority"), ("ppo", "select"), ("maskable_ppo", "select"), ("maskable_ppo", "sequential")]
METRICS = ("avg_jct_s", "makespan_s", "worst_ftf", "worst_ftf_themis", "unfair_fraction_themis", "rounds")


class RoundSets:
    """Records the sorted job set of every round an agent decides."""

    def __init__(self, agent):
        self.agent, self.sets = agent, []

    def reset(self, view, seed=None):
        self.agent.reset(view, seed)

    def act(self, view):
        chosen = self.agent.act(view)
        self.sets.append(tuple(sorted(np.asarray(chosen).tolist())))
        return chosen

    def stats(self):
        return self.agent.stats()


def play(agent, trace, gpus):
    recorder = RoundSets(agent)
    outcome = run_episode(trace, recorder, SimConfig(gpus=gpus), progress=False)
    return {key: outcome.metrics[key] for key in METRICS}, recorder.sets


def test_srtf_prior_starts_as_srtf_in_every_parameter_that_decides():
    policy = build_policy("ppo", "priority", 8, embed_dim=16, hidden_dim=32, prior="srtf")
    jobs, _ = feature_names(2)
    weight = policy.action_net.skip.weight.detach().numpy()[0]
    expected = np.zeros(len(jobs), np.float32)
    expected[jobs.index("predicted_remaining")] = SRTF_WEIGHT
    np.testing.assert_array_equal(weight, expected)
    assert float(policy.action_net.skip.bias.detach()) == SRTF_BIAS
    assert not policy.action_net.slot_out.weight.detach().any() and not policy.action_net.slot_out.bias.detach().any()
    assert float(policy.log_std.detach()) == PRIOR_LOG_STD_INIT
    # the deep layers below keep SB3's random init, so the residual can learn from step one
    assert policy.features_extractor.mix_mlp[0].weight.detach().abs().sum() > 0
    # no prior: no skip term at all, and the usual log-std
    plain = build_policy("ppo", "priority", 8, embed_dim=16, hidden_dim=32)
    assert plain.action_net.skip is None and float(plain.log_std.detach()) == -0.5
    assert not any("skip" in key for key in plain.state_dict())


def test_srtf_fair_prior_adds_the_ftf_estimate_to_srtfs_score():
    from shockwave_agents.learned.priors import FAIR_BIAS, FAIR_WEIGHT

    policy = build_policy("ppo", "priority", 8, embed_dim=16, hidden_dim=32, prior="srtf-fair")
    jobs, _ = feature_names(2)
    expected = np.zeros(len(jobs), np.float32)
    expected[jobs.index("predicted_remaining")] = SRTF_WEIGHT
    expected[jobs.index("ftf_estimate")] = FAIR_WEIGHT
    np.testing.assert_array_equal(policy.action_net.skip.weight.detach().numpy()[0], expected)
    assert float(policy.action_net.skip.bias.detach()) == FAIR_BIAS
    obs = random_obs(8, 8, seed=4)
    with torch.no_grad():
        scores = policy.action_outputs(obs_to_tensors(obs))[0].numpy()
    pre = np.arctanh(scores.astype(np.float64))
    raw = obs["jobs"].astype(np.float64)
    np.testing.assert_allclose(pre, FAIR_BIAS + SRTF_WEIGHT * raw[:, jobs.index("predicted_remaining")]
                               + FAIR_WEIGHT * raw[:, jobs.index("ftf_estimate")], atol=1e-5)


@pytest.mark.parametrize(("suite", "max_jobs"), [("small-overloaded", 60), ("gang-heavy", 80), ("canonical", 120)])
def test_initial_srtf_prior_policy_schedules_exactly_like_srtf(suite, max_jobs):
    trace, gpus = split_traces(suite, "validation")[0]
    policy = build_policy("ppo", "priority", max_jobs, embed_dim=32, hidden_dim=64, prior="srtf")
    srtf_metrics, srtf_sets = play(SrtfAgent(), trace, gpus)
    for network in (NumpySlotNetwork.from_policy(policy), TorchSlotNetwork(policy)):
        metrics, sets = play(PolicyAgent(network, "priority"), trace, gpus)
        assert sets == srtf_sets  # the same jobs in every round
        assert metrics == srtf_metrics
    # the contrast: a policy without the prior does not (a test that can fail)
    other, _ = play(PolicyAgent(NumpySlotNetwork.from_policy(perturbed(
        build_policy("ppo", "priority", max_jobs, embed_dim=32, hidden_dim=64), seed=3)), "priority"), trace, gpus)
    assert other != srtf_metrics


def test_initial_srtf_prior_policy_in_the_env_runs_srtfs_rounds():
    """The SB3 side (deterministic ``predict`` in the env, what training's rollouts centre on)."""
    trace, gpus = split_traces("small-nominal", "validation")[0]
    policy = build_policy("ppo", "priority", 40, embed_dim=16, hidden_dim=32, prior="srtf")
    env = gym.make("shockwave_gym/Generated-v0", trace=trace, gpus=gpus, action_mode="priority", max_jobs=40,
                   skip_trivial=False)
    obs, _ = env.reset(seed=0)
    sets = []
    while True:
        obs, _, terminated, truncated, info = env.step(policy.predict(obs, deterministic=True)[0])
        if info["round_closed"]:
            sets.append(tuple(sorted(env.unwrapped.simulator.history[-1].job_ids.tolist())))
        if terminated or truncated:
            break
    _, srtf_sets = play(SrtfAgent(), trace, gpus)
    assert len(sets) > 20 and sets == srtf_sets[:len(sets)]


@pytest.mark.parametrize(("algo", "mode"), MODES)
def test_numpy_forward_with_the_skip_matches_torch(algo, mode):
    policy = perturbed(build_policy(algo, mode, 10, embed_dim=16, hidden_dim=32, prior="zero"), seed=11)
    network = NumpySlotNetwork.from_policy(policy)
    assert network.skip is not None
    without = NumpySlotNetwork({k: v for k, v in ((k, v.detach().numpy()) for k, v in policy.state_dict().items())
                                if "skip" not in k}, network.kind, 10)
    per_slot = 2 if policy.head_kind == "binary" else 1
    for seed, valid_slots in ((1, 10), (2, 3), (3, 1)):
        obs = random_obs(10, valid_slots, seed)
        with torch.no_grad():
            expected = policy.action_outputs(obs_to_tensors(obs))[0].numpy()
        got = network.outputs(obs)
        valid = obs["job_valid"].astype(bool)
        part = slice(0, 10 * per_slot)
        np.testing.assert_allclose(got[part].reshape(10, per_slot)[valid], expected[part].reshape(10, per_slot)[valid],
                                   rtol=1e-4, atol=1e-5)
        # the skip term is really there: dropping it changes the outputs
        assert not np.allclose(without.outputs(obs)[part].reshape(10, per_slot)[valid],
                               got[part].reshape(10, per_slot)[valid], atol=1e-3)


def test_skip_policy_round_trips_through_the_weights_files(tmp_path):
    policy = perturbed(build_policy("ppo", "priority", 12, embed_dim=16, hidden_dim=32, prior="srtf"), seed=2)
    save_policy(policy, tmp_path / "p", algo="ppo", action_mode="priority")
    meta = json.loads((tmp_path / "p.json").read_text())
    assert meta["linear_skip"] is True and meta["prior"] == "srtf"
    assert set(np.load(tmp_path / "p.npz").files) >= {"action_net.skip.weight", "action_net.skip.bias"}
    network, _ = load_network(tmp_path / "p")
    reloaded, _ = load_policy(tmp_path / "p", max_jobs=20)  # another slot count: weights do not depend on it
    obs = random_obs(12, 7, seed=5)
    padded = {k: (np.concatenate([v, np.zeros((8, *v.shape[1:]), v.dtype)]) if k != "cluster" else v) for k, v in obs.items()}
    with torch.no_grad():
        expected = policy.action_outputs(obs_to_tensors(obs))[0].numpy()
        np.testing.assert_array_equal(reloaded.action_outputs(obs_to_tensors(padded))[0].numpy()[:12], expected)
    np.testing.assert_allclose(network.outputs(obs), expected, rtol=1e-5, atol=1e-6)


def test_shipped_files_without_a_skip_load_as_before():
    """shockwave-distilled has no skip term (behaviour cloning fits no prior): no skip arrays,
    no skip in the network, and its files are byte-for-byte the ones shipped (re-distilled in
    issue 35)."""
    meta = read_meta(ROOT / "agents" / "pretrained" / "shockwave-distilled.json")
    assert "linear_skip" not in meta and "prior" not in meta
    network, _ = load_network(ROOT / "agents" / "pretrained" / "shockwave-distilled")
    assert network.skip is None
    digest = hashlib.sha256((ROOT / "agents" / "pretrained" / "shockwave-distilled.npz").read_bytes()).hexdigest()
    assert digest == SHOCKWAVE_DISTILLED_SHA256


#: sha256 of agents/pretrained/shockwave-distilled.npz (the issue-35 re-distillation).
SHOCKWAVE_DISTILLED_SHA256 = "4da8f9f932aa944ef92c19d723e09990f541433276dcf4887f90506bf8fa7539"


@pytest.mark.parametrize(("edit", "field", "message"), [
    ({"linear_skip": "yes"}, "linear_skip", "true or false"),
    ({"prior": "lifo"}, "prior", "must be one of zero, srtf, srtf-fair, srtf-gang"),
    ({"linear_skip": False}, "prior", "linear_skip is not true"),
])
def test_bad_skip_fields_are_refused_naming_the_field(tmp_path, edit, field, message):
    policy = build_policy("ppo", "priority", 6, embed_dim=8, hidden_dim=16, prior="srtf")
    save_policy(policy, tmp_path / "p", algo="ppo", action_mode="priority")
    meta = json.loads((tmp_path / "p.json").read_text())
    meta.update(edit)
    (tmp_path / "p.json").write_text(json.dumps(meta))
    with pytest.raises(PolicyFileError, match=message) as info:
        load_network(tmp_path / "p")
    assert info.value.field == field and info.value.file.endswith("p.json")


def test_skip_arrays_must_match_the_description(tmp_path):
    with_skip = build_policy("ppo", "priority", 6, embed_dim=8, hidden_dim=16, prior="srtf")
    save_policy(with_skip, tmp_path / "p", algo="ppo", action_mode="priority")
    meta = json.loads((tmp_path / "p.json").read_text())
    del meta["linear_skip"], meta["prior"]  # weights with a skip, described without one
    (tmp_path / "p.json").write_text(json.dumps(meta))
    with pytest.raises(PolicyFileError, match="unexpected array") as info:
        load_network(tmp_path / "p")
    assert info.value.field in ("action_net.skip.weight", "action_net.skip.bias")
    plain = build_policy("ppo", "priority", 6, embed_dim=8, hidden_dim=16)
    save_policy(plain, tmp_path / "q", algo="ppo", action_mode="priority")
    meta = json.loads((tmp_path / "q.json").read_text())
    meta.update(linear_skip=True, prior="srtf")  # described with a skip, weights without
    (tmp_path / "q.json").write_text(json.dumps(meta))
    with pytest.raises(PolicyFileError, match="missing") as info:
        load_network(tmp_path / "q")
    assert info.value.field in ("action_net.skip.weight", "action_net.skip.bias")


def test_bad_prior_values_give_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="prior must be one of zero, srtf, srtf-fair, srtf-gang"):
        build_policy("ppo", "priority", 6, prior="sjf")
    with pytest.raises(InputError, match="prior must be one of zero, srtf, srtf-fair, srtf-gang"):
        TrainConfig(out=str(tmp_path), prior="sjf")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["train", "--prior", "sjf", "--out", str(tmp_path / "x")]) == 2
    assert "--prior: must be none or one of zero, srtf, srtf-fair, srtf-gang, wsrpt, got 'sjf'" in err.getvalue()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["train", "--algo", "bc", "--prior", "srtf", "--out", str(tmp_path / "y")]) != 0
    assert "--prior srtf: the prior starts an RL run" in err.getvalue()
    assert TrainConfig(out=str(tmp_path), prior="srtf").log_std_init == PRIOR_LOG_STD_INIT
    assert TrainConfig(out=str(tmp_path)).log_std_init == -0.5


def test_train_with_the_srtf_prior_records_it_and_learns_a_residual(tmp_path):
    out = tmp_path / "run"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["train", "--prior", "srtf", "--suites", "small-overloaded", "--timesteps", "512",
                     "--eval-every", "512", "--val-traces", "1", "--embed-dim", "8", "--hidden-dim", "16",
                     "--checkpoint-every", "100000", "--progress-every-s", "1000", "--out", str(out)])
    assert code == 0, err.getvalue()
    meta = json.loads((out / "final_policy.json").read_text())
    assert meta["linear_skip"] is True and meta["prior"] == "srtf"
    assert meta["training"]["prior"] == "srtf" and meta["training"]["log_std_init"] == PRIOR_LOG_STD_INIT
    final = np.load(out / "final_policy.npz")
    assert np.abs(final["action_net.slot_out.weight"]).sum() > 0  # the deep term moved off 0
    # starting a run without the prior from these weights is refused, naming the flag
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["train", "--suites", "small-overloaded", "--timesteps", "512", "--embed-dim", "8", "--hidden-dim", "16",
                     "--init-from", str(out / "final_policy"), "--out", str(tmp_path / "again")])
    assert code != 0 and "the policy has a linear skip term; pass the same --prior" in err.getvalue()
    # nor a run reading another observation version: one line, not torch's size mismatch
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["train", "--prior", "srtf", "--suites", "small-overloaded", "--timesteps", "512", "--embed-dim", "8",
                     "--hidden-dim", "16", "--obs-version", "3", "--vec", "single", "--init-from", str(out / "final_policy"),
                     "--out", str(tmp_path / "again3")])
    assert code == 2 and "an observation version 2 policy cannot start an --obs-version 3 run" in err.getvalue()
    assert "Traceback" not in err.getvalue() and "size mismatch" not in err.getvalue()


def _benchmark():
    return load_benchmark("learned_suites")


def test_benchmark_counts_rounds_that_differ_from_srtf():
    bench = _benchmark()
    trace, gpus = split_traces("small-overloaded", "validation")[0]
    prior = bench.SrtfComparison(PolicyAgent(NumpySlotNetwork.from_policy(
        build_policy("ppo", "priority", 60, embed_dim=8, hidden_dim=16, prior="srtf")), "priority"))
    run_episode(trace, prior, SimConfig(gpus=gpus), progress=False)
    assert prior.rounds > 20 and prior.differing == 0
    fifo = bench.SrtfComparison(FifoAgent())
    run_episode(trace, fifo, SimConfig(gpus=gpus), progress=False)
    assert 0 < fifo.differing < fifo.rounds


def test_wsrpt_prior_scores_fall_with_the_remaining_gpu_area():
    from shockwave_agents.learned.priors import WSRPT_GANG_WEIGHT
    from shockwave_gym.interface.observation import LOG_TIME

    policy = build_policy("ppo", "priority", 8, embed_dim=16, hidden_dim=32, prior="wsrpt", obs_version=3)
    jobs, _ = feature_names(3)
    weight = policy.action_net.skip.weight.detach().numpy()[0].astype(np.float64)
    assert weight[jobs.index("predicted_remaining")] == SRTF_WEIGHT
    assert weight[jobs.index("gang")] == pytest.approx(WSRPT_GANG_WEIGHT)
    assert np.count_nonzero(weight) == 2 and float(policy.action_net.skip.bias.detach()) == SRTF_BIAS
    # the skip on the observation's transforms, log1p(s / 60) / LOG_TIME and log2(gang) / 3, is
    # exactly 1 - (2 / LOG_TIME) log((1 + s / 60) gang): it falls with (s + 60) x gang
    rng = np.random.default_rng(0)
    seconds = np.exp(rng.uniform(np.log(1.0), np.log(7 * 86400), 400))
    gangs = 2.0 ** rng.integers(0, 4, 400)
    pre = SRTF_BIAS + weight[jobs.index("predicted_remaining")] * np.log1p(seconds / 60) / LOG_TIME \
        + weight[jobs.index("gang")] * np.log2(gangs) / 3
    np.testing.assert_allclose(pre, 1 - 2 / LOG_TIME * np.log((1 + seconds / 60) * gangs), atol=1e-6)
    key = (seconds + 60) * gangs
    bigger = key[:, None] > 1.0001 * key[None, :]
    assert bigger.sum() > 70_000 and (pre[:, None] < pre[None, :])[bigger].all()
    # weighted SRPT's order (remaining area) wherever the areas differ by more than a minute
    # times the gangs' difference
    area = seconds * gangs
    apart = np.abs(area[:, None] - area[None, :]) > 60 * np.abs(gangs[:, None] - gangs[None, :])
    assert ((pre[:, None] < pre[None, :]) == (area[:, None] > area[None, :]))[apart].all()
    # and not closer: 500 s on 2 GPUs (area 1000) scores below 1010 s on 1 GPU (area 1010)
    two, one = 1 - 2 / LOG_TIME * np.log((1 + np.array([500.0, 1010.0]) / 60) * np.array([2.0, 1.0]))
    assert 500 * 2 < 1010 * 1 and two < one
    with pytest.raises(ValueError, match="wsrpt prior needs observation version 2 or 3"):
        build_policy("ppo", "priority", 8, embed_dim=16, hidden_dim=32, prior="wsrpt", obs_version=1)


@pytest.mark.parametrize(("suite", "max_jobs", "same_rounds"),
                         [("small-overloaded", 60, 1.0), ("gang-heavy", 80, 1.0), ("canonical", 120, 0.7)])
def test_initial_wsrpt_prior_policy_schedules_like_weighted_srpt(suite, max_jobs, same_rounds):
    from shockwave_agents.wsrpt import WsrptAgent

    trace, gpus = split_traces(suite, "validation")[0]
    wsrpt_metrics, wsrpt_sets = play(WsrptAgent(), trace, gpus)

    def agreement(prior):
        policy = build_policy("ppo", "priority", max_jobs, embed_dim=32, hidden_dim=64, prior=prior, obs_version=3)
        metrics, sets = play(PolicyAgent(NumpySlotNetwork.from_policy(policy), "priority"), trace, gpus)
        return sum(a == b for a, b in zip(sets, wsrpt_sets, strict=False)) / max(len(sets), len(wsrpt_sets)), metrics

    same, metrics = agreement("wsrpt")
    assert same >= same_rounds
    assert metrics["avg_jct_s"] == pytest.approx(wsrpt_metrics["avg_jct_s"], rel=0.005)
    if same_rounds == 1.0:
        assert metrics == wsrpt_metrics
    assert agreement("srtf")[0] < 0.2  # the contrast: SRTF's order is a different schedule
