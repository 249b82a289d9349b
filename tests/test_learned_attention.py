"""The attention slot policy (shockwave_agents.learned.attention): permutation equivariance,
a Plackett-Luce head that is a proper distribution over orderings, and a short training run
whose weights-only policy loads and schedules."""

from __future__ import annotations

import copy
import itertools
import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from shockwave_agents.learned.attention import (  # noqa: E402
    ordering_from_scores,
    plackett_luce_terms,
    scores_from_ordering,
)
from shockwave_agents.learned.weights import build_policy  # noqa: E402
from shockwave_gym.errors import InputError  # noqa: E402
from shockwave_gym.interface.observation import observation_space  # noqa: E402

M = 7


def attention_policy(seed: int = 0, max_jobs: int = M):
    torch.manual_seed(seed)
    policy = build_policy("ppo", "priority", max_jobs, embed_dim=16, hidden_dim=32,
                          encoder={"encoder": "attention", "num_heads": 2, "num_layers": 2})
    with torch.no_grad():  # logits of a useful size (the head starts near 0)
        policy.action_net.slot_out.weight.mul_(100.0)
    return policy


def observation(valid, seed: int = 1) -> dict:
    space = observation_space(len(valid), 2)
    space.seed(seed)
    sample = space.sample()
    obs = {key: torch.as_tensor(np.asarray(value), dtype=torch.float32).unsqueeze(0) for key, value in sample.items()}
    obs["job_valid"] = torch.tensor([valid], dtype=torch.float32)
    obs["picked"] = torch.zeros(1, len(valid))
    return obs


def distribution(policy, obs):
    """The policy's distribution for ``obs`` (a copy: SB3 policies reuse one object)."""
    latent = policy.mlp_extractor.forward_actor(policy.features_extractor(obs))
    return copy.copy(policy._get_action_dist_from_latent(latent))


def ordering_log_prob(dist, ordering: list[int]) -> float:
    """log P(ordering) of the occupied slots, through the env's scores (what PPO stores)."""
    valid = dist.valid
    rest = [s for s in range(valid.shape[1]) if s not in ordering]
    order = torch.tensor([ordering + rest])
    scores = scores_from_ordering(order, valid)
    return float(dist.log_prob(scores).detach()[0])


def test_orderings_of_the_occupied_slots_sum_to_one():
    """Summed over all n! orderings of the occupied slots (n = 3 and 4, beside empty slots),
    the probabilities are 1; the scores of an ordering imply that ordering back."""
    policy = attention_policy()
    for valid in ([1, 0, 1, 0, 1, 0, 0], [0, 1, 1, 0, 1, 0, 1]):
        dist = distribution(policy, observation(valid))
        occupied = [s for s, v in enumerate(valid) if v]
        total = 0.0
        for ordering in itertools.permutations(occupied):
            total += math.exp(ordering_log_prob(dist, list(ordering)))
            order = torch.tensor([list(ordering) + [s for s in range(M) if s not in ordering]])
            implied = ordering_from_scores(scores_from_ordering(order, dist.valid), dist.valid)
            assert implied[0, :len(occupied)].tolist() == list(ordering)
        assert total == pytest.approx(1.0, abs=1e-5)
        probabilities = [math.exp(ordering_log_prob(dist, list(o))) for o in itertools.permutations(occupied)]
        assert max(probabilities) > 1.25 / math.factorial(len(occupied))  # not uniform: the test has teeth


def test_permuting_the_slots_permutes_the_ordering_probabilities():
    policy = attention_policy()
    valid = [1, 1, 0, 1, 0, 1, 1]
    obs = observation(valid)
    perm = torch.tensor([3, 6, 0, 5, 1, 2, 4])  # new slot i holds old slot perm[i]
    moved = {key: value[:, perm] if value.dim() >= 2 and key != "cluster" else value for key, value in obs.items()}
    before, after = distribution(policy, obs), distribution(policy, moved)
    new_slot_of = {int(old): new for new, old in enumerate(perm.tolist())}
    torch.testing.assert_close(after.logits[0], before.logits[0][perm], rtol=1e-4, atol=1e-4)
    occupied = [s for s, v in enumerate(valid) if v]
    for ordering in list(itertools.permutations(occupied))[:24]:
        mapped = [new_slot_of[s] for s in ordering]
        assert ordering_log_prob(after, mapped) == pytest.approx(ordering_log_prob(before, list(ordering)), abs=1e-4)
    with torch.no_grad():
        values = [float(policy.predict_values(o)[0, 0]) for o in (obs, moved)]
    assert values[0] == pytest.approx(values[1], abs=1e-4)


def test_the_entropy_estimate_averages_to_the_exact_entropy():
    """The chain-rule estimate along an ordering, weighted by the ordering's probability,
    is the entropy of the distribution over orderings (enumerated for n = 4)."""
    logits = torch.tensor([[1.5, -0.3, 0.0, 2.0, 0.7]])
    valid = torch.tensor([[True, True, False, True, True]])
    exact = weighted = total = 0.0
    for ordering in itertools.permutations([0, 1, 3, 4]):
        order = torch.tensor([list(ordering) + [2]])
        log_prob, estimate = plackett_luce_terms(logits, valid, order)
        p = math.exp(float(log_prob[0]))
        exact -= p * float(log_prob[0])
        weighted += p * float(estimate[0])
        total += p
    assert total == pytest.approx(1.0, abs=1e-6)
    assert weighted == pytest.approx(exact, rel=1e-5)
    assert 0 < exact < math.log(24)


def test_sampled_orderings_follow_the_plackett_luce_probabilities():
    logits = torch.tensor([[2.0, 0.0, -1.0]]).repeat(20000, 1)
    valid = torch.ones_like(logits, dtype=torch.bool)
    from shockwave_agents.learned.attention import PlackettLuceDistribution

    torch.manual_seed(0)
    dist = PlackettLuceDistribution().proba_distribution(logits, valid)
    firsts = ordering_from_scores(dist.sample(), valid)[:, 0]
    expected = torch.softmax(logits[0], 0)
    observed = torch.bincount(firsts, minlength=3).float() / len(firsts)
    torch.testing.assert_close(observed, expected, atol=0.015, rtol=0)
    assert ordering_from_scores(dist.mode(), valid)[0].tolist() == [0, 1, 2]


def test_a_short_training_run_saves_a_policy_that_loads_and_schedules(tmp_path):
    from shockwave_agents import make_agent
    from shockwave_gym.traces.suites import split_traces
    from shockwave_gym.training.evaluation import evaluate_agent
    from shockwave_gym.training.train import TrainConfig, train
    from shockwave_gym.training.workload import Workload

    out = tmp_path / "att"
    report = train(TrainConfig(out=str(out), policy="attention", timesteps=256, n_steps=128, envs=1,
                               workload=Workload(num_jobs_range=(8, 12)), eval_every=10**6, checkpoint_every=10**6,
                               eval_seeds=(1001,), progress_every_s=1e9, prefetch=False))
    assert report["timesteps"] >= 256
    meta = json.loads((out / "policy.json").read_text())
    assert (meta["encoder"], meta["num_heads"], meta["num_layers"]) == ("attention", 4, 2)
    assert "log_temperature" in np.load(out / "policy.npz").files
    agent = make_agent("ppo", path=str(out))
    trace, gpus = split_traces("small-nominal", "validation")[0]
    assert evaluate_agent(agent, [trace], [gpus])["mean"]["avg_jct_s"] > 0
    meta["num_heads"] = 3  # does not divide embed_dim 32
    (out / "policy.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match="num_heads"):
        make_agent("ppo", path=str(out))
