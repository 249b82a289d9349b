"""``train --algo cem``: the cross-entropy search over the skip weights plays whole episodes of
fixed train seeds, keeps the candidate with the best validation score, is a function of its
config (not of its worker count), and saves a policy every loader reads as a ``cem`` policy."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from shockwave_gym.errors import InputError  # noqa: E402

SUITES = "small-nominal,small-overloaded-unknown"


def _config(tmp_path, name="run", **overrides):
    from shockwave_gym.training.cem import CEMConfig

    options = dict(out=str(tmp_path / name), task="balanced", suites=SUITES, train_traces=2, val_traces=1,
                   iterations=2, population=4, elite=2, obs_version=3)
    return CEMConfig(**{**options, **overrides})


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """One small search with one worker and the same with two (their results must agree)."""
    from shockwave_gym.training.cem import run_cem

    tmp = tmp_path_factory.mktemp("cem")
    one = run_cem(_config(tmp, "one"), log=lambda _: None)
    two = run_cem(_config(tmp, "two", workers=2), log=lambda _: None)
    return tmp, one, two


def _episodes(config, split):
    from shockwave_gym.training.evaluation import evaluate_agent

    traces, sizes, regimes = config.cases(split)
    return lambda agent: evaluate_agent(agent, traces, sizes, regimes=regimes)["per_trace"]


def test_the_workers_only_split_the_episodes(searched):
    tmp, one, two = searched
    assert one["history"] == two["history"] and one["selected"] == two["selected"]
    assert (tmp / "one" / "policy.npz").read_bytes() == (tmp / "two" / "policy.npz").read_bytes()


def test_the_kept_policy_is_the_best_on_validation_and_plays_as_reported(searched, tmp_path):
    from shockwave_agents import make_agent
    from shockwave_gym.training.selection import score

    tmp, one, _ = searched
    config = _config(tmp_path)
    play = _episodes(config, "validation")
    fifo = play(make_agent("fifo"))
    assert fifo == one["fifo"]["per_trace"]
    agent = make_agent("cem", path=str(tmp / "one"), max_jobs=config.max_jobs)
    kept = score("balanced", play(agent), fifo)
    assert kept == one["selected"]["score"]
    start = make_agent("policy", path=str(_start_policy(tmp_path, config)), max_jobs=config.max_jobs)
    candidates = [score("balanced", play(start), fifo), *(row["val_of_best"] for row in one["history"])]
    assert kept == min(candidates)
    meta = json.loads((tmp / "one" / "policy.json").read_text())
    assert meta["training"]["search"] == "cem" and meta["training"]["task"] == "balanced"
    assert meta["training"]["selected_iteration"] == one["selected"]["iteration"] == candidates.index(kept)


def _start_policy(tmp_path, config):
    """The untrained wsrpt policy the search starts from, saved as a policy file."""
    from shockwave_agents.learned.weights import build_policy, save_policy

    policy = build_policy("ppo", "priority", config.max_jobs, embed_dim=32, hidden_dim=64, prior="wsrpt",
                          obs_version=3)
    save_policy(policy, tmp_path / "start" / "policy", algo="ppo", action_mode="priority")
    return tmp_path / "start"


def test_each_iteration_starts_its_draws_from_the_gaussians_mean(searched, tmp_path):
    """The first candidate of iteration 1 is the prior: its training score is the start's."""
    from shockwave_agents import make_agent
    from shockwave_gym.training.selection import score

    _, one, _ = searched
    config = _config(tmp_path)
    play = _episodes(config, "train")
    start = make_agent("policy", path=str(_start_policy(tmp_path, config)), max_jobs=config.max_jobs)
    assert one["history"][0]["train_mean_vector"] == score("balanced", play(start), play(make_agent("fifo")))
    assert one["episodes"] == (2 * 4 + 1) * 4  # (iterations x population + FIFO) x 2 suites x 2 traces


def test_the_training_episodes_are_fixed_train_seeds_in_their_suites_regimes(tmp_path):
    from shockwave_gym.traces.suites import get_suite

    traces, sizes, regimes = _config(tmp_path).cases("train")
    assert [t.name for t in traces] == ["small-nominal-train-0", "small-nominal-train-1",
                                        "small-overloaded-unknown-train-0", "small-overloaded-unknown-train-1"]
    assert sizes == [12, 12, 12, 12]
    assert regimes[:2] == [None, None] and {r.knowledge for r in regimes[2:]} == {"unknown"}
    assert [t.name for t in _config(tmp_path).cases("validation")[0]] == [
        e.trace_name for s in SUITES.split(",") for e in [_first_validation(get_suite(s))]]


def _first_validation(suite):
    from shockwave_gym.traces.suites import split_entries

    return split_entries([suite], "validation")[0]


@pytest.mark.parametrize("overrides, message", [
    ({"task": "fair"}, "scored task"),
    ({"suites": ""}, "--suites"),
    ({"prior": "zero"}, "prior"),
    ({"prior": None}, "prior"),
    ({"elite": 5}, "--cem-elite 5"),
    ({"init_std": 0.0}, "init_std"),
    ({"min_std": True}, "min_std"),
    ({"population": 0}, "population"),
    ({"seed": -1}, "seed"),
    ({"workers": 0}, r"workers \(--cem-workers\)"),
    ({"max_jobs": 0}, r"max_jobs \(--max-jobs\)"),
    ({"min_std": 0.5}, "min_std 0.5 exceeds init_std"),
])
def test_bad_settings_are_refused_with_one_line(tmp_path, overrides, message):
    with pytest.raises(InputError, match=message):
        _config(tmp_path, **overrides)


def test_the_cli_runs_the_search_and_refuses_its_options_elsewhere(tmp_path, capsys):
    from shockwave_gym.cli import main

    out = tmp_path / "cli"
    argv = ["train", "--algo", "cem", "--task", "balanced", "--suites", SUITES, "--obs-version", "3", "--train-traces",
            "1", "--val-traces", "1", "--cem-iterations", "1", "--cem-population", "2", "--cem-elite", "1", "--out", str(out)]
    assert main(argv) == 0
    report = json.loads((out / "eval.json").read_text())
    assert report["config"]["prior"] == "wsrpt" and report["config"]["iterations"] == 1
    assert "policy:" in capsys.readouterr().out
    for bad, message in ((["--algo", "ppo", "--cem-iterations", "3"], "--cem-iterations: search options"),
                         (["--algo", "cem", "--reward", "jct"], "give --task"),
                         (["--algo", "cem", "--task", "jct", "--suites", SUITES, "--timesteps", "5", "--gamma", "0.9"],
                          "--timesteps, --gamma: RL and workload options"),
                         (["--algo", "cem", "--task", "jct", "--suites", SUITES, "--prior", "none"], "--prior none"),
                         (["--algo", "cem", "--task", "jct", "--suites", SUITES, "--embed-dim", "0"],
                          "embed_dim (--embed-dim)"),
                         (["--algo", "cem", "--task", "jct", "--suites", "none"], "give --suites"),
                         (["--algo", "cem", "--task", "jct", "--policy", "attention"], "mlp policy")):
        assert main(["train", *bad, "--out", str(tmp_path / "bad")]) == 2
        assert message in capsys.readouterr().err


def test_the_cem_kind_loads_only_search_results(searched, tmp_path):
    from shockwave_agents import make_agent

    tmp, _, _ = searched
    config = _config(tmp_path)
    with pytest.raises(InputError, match="this policy is a 'ppo' policy"):
        make_agent("cem", path=str(_start_policy(tmp_path, config)))
    with pytest.raises(InputError, match="this policy is a 'cem' policy"):
        make_agent("maskable_ppo", path=str(tmp / "one"))
    weights = np.load(tmp / "one" / "policy.npz")
    assert not np.any(weights["action_net.slot_out.weight"])  # the deep term stays 0: the skip decides


def test_a_task_whose_score_fifo_cannot_anchor_is_refused_before_the_search(tmp_path):
    """The fairness cost is N x (mean rho - 1): not positive where FIFO's mean fair-share rho is
    at most 1 (2 of small-overloaded's first 4 train traces), so no candidate could be scored."""
    from shockwave_agents import make_agent
    from shockwave_gym.tasks import get_task
    from shockwave_gym.training.cem import run_cem

    config = _config(tmp_path, task="fairness", suites="small-overloaded", train_traces=4)
    fifo = _episodes(config, "train")(make_agent("fifo"))
    costs = [get_task("fairness").cost(r, first_arrival_s=r["first_arrival_s"], round_s=r["round_s"])
             for r in fifo.values()]
    assert min(costs) <= 0 < max(costs)  # the case this test is about: some traces cannot be scored
    with pytest.raises(InputError, match=r"not positive on 2 train trace\(s\) \(small-overloaded-train-2, small"):
        run_cem(config, log=lambda _: None)
    assert not (tmp_path / "run" / "policy.npz").exists()


def test_each_iteration_refits_the_gaussian_to_its_elite(tmp_path, monkeypatch):
    """With the episodes replaced by a known cost (the squared distance of the weights to a
    target), the run's scores are those of a cross-entropy method computed here: the first
    draw of each iteration is the Gaussian's mean, the next mean is the elite's mean and the
    next spread its spread, floored; the kept weights are the best candidate."""
    from shockwave_gym.training import cem, selection

    target = np.linspace(-1.0, 1.0, 17)

    def cost(weights):
        return float(np.sum((np.asarray(weights, dtype=float) - target) ** 2))

    class Fake:  # "plays" a weight vector by handing it back as its one trace's row
        def __init__(self, *args):
            pass

        def play(self, weights):
            return {"per_trace": {"trace": {"w": None if weights is None else [float(x) for x in weights]}},
                    "mean": {"decision_ms_per_round": 0.0}}

    class FakePlayers(Fake):
        def play(self, candidates):
            return [Fake.play(self, c)["per_trace"] for c in candidates]

        def close(self):
            pass

    monkeypatch.setattr(cem, "_Players", lambda state, config, cases: FakePlayers())
    monkeypatch.setattr(cem, "_Episodes", Fake)
    monkeypatch.setattr(cem, "_check_scorable", lambda *args: None)
    monkeypatch.setattr(selection, "score", lambda task, rows, fifo: cost(rows["trace"]["w"]))
    config = _config(tmp_path, iterations=4, population=6, elite=2)
    report = cem.run_cem(config, log=lambda _: None)

    mean = cem._start(config)[1]["action_net.skip.weight"].astype(np.float64).ravel()
    std = np.full_like(mean, config.init_std)
    rng = np.random.default_rng(config.seed)
    best = (cost(mean), mean)
    for row in report["history"]:
        draws = mean + std * rng.standard_normal((config.population, mean.size))
        draws[0] = mean
        scores = np.array([cost(d) for d in draws])
        assert row["train_mean_vector"] == pytest.approx(scores[0], rel=1e-12)
        assert row["train_best"] == pytest.approx(scores.min(), rel=1e-12)
        elite = draws[np.argsort(scores, kind="stable")[: config.elite]]
        if scores.min() < best[0]:
            best = (scores.min(), draws[np.argmin(scores)])
        mean, std = elite.mean(axis=0), np.maximum(elite.std(axis=0), config.min_std)
    assert report["history"][-1]["train_mean_vector"] < report["history"][0]["train_mean_vector"]
    assert np.allclose(report["selected"]["weights"], best[1]) and report["selected"]["score"] == pytest.approx(best[0])
