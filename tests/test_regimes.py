"""Information regimes (docs/SEMANTICS.md, "Information regimes"): the view hides each
regime's hidden length facts on every public path, the regimes are reproducible per seed,
early endings end jobs at their hidden true end, and the Gittins agent follows its index.

Hand-made jobs use "Transformer (batch size 100)" on a table of 100 it/s: 100 iterations an
epoch, one second each, so a job of ``100 * k`` iterations runs ``k`` epochs in ``k`` s.
"""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_gym.cli import main
from shockwave_gym.errors import InputError
from shockwave_gym.interface import gittins_index_per_epoch, predicted_remaining_s
from shockwave_gym.jobs import EstimatedJobSpec, JobOrigin, JobSpec, UnknownLengthJobSpec
from shockwave_gym.regimes import DurationPrior, Regime, apply_regime, parse_early_endings
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.testing import check_agent
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import Trace, load_trace
from shockwave_gym.view import ClusterView, OracleAccessError

MODEL = "Transformer"
TABLE = ThroughputTable({(MODEL, 100, 1): 100.0}, source="regimes table")
#: lengths are 2 or 10 epochs, equally likely
PRIOR = DurationPrior((2.0, 10.0), (0.5, 0.5), "test prior")


def job(job_id: int, epochs: int, arrival_s: float = 0.0, origin: JobOrigin | None = None) -> JobSpec:
    return JobSpec(job_id, MODEL, 100, 100 * epochs, 1, "static", arrival_s, origin=origin)


def simulate(jobs, regime: Regime, *, gpus: int = 1, round_s: float = 3.0, oracle: bool = False) -> Simulator:
    config = SimConfig(gpus=gpus, round_s=round_s, restart_overhead_s=0.0)
    return Simulator(apply_regime(jobs, regime), config, TABLE, oracle=oracle)


# --- the information boundary -----------------------------------------------------------------

#: distinctive true facts: 37 and 53 epochs (3700 and 5300 iterations, 37 s and 53 s)
SECRET_JOBS = [job(0, 37), job(1, 53)]
SECRETS = {37.0, 53.0, 3700.0, 5300.0}
REGIMES = [Regime("unknown"), Regime("unknown", early_endings=0.5, seed=3),
           Regime("estimate", seed=1), Regime("estimate", early_endings=0.5, seed=4)]


def _numbers(value) -> list[float]:
    """Every number a public member's value holds (arrays, scalars, dataclasses, tuples)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, int | float | np.number):
        return [float(value)]
    if isinstance(value, np.ndarray):
        return [float(v) for v in value.ravel() if np.issubdtype(value.dtype, np.number)]
    if dataclasses.is_dataclass(value):
        return [n for f in dataclasses.fields(value) for n in _numbers(getattr(value, f.name))]
    if isinstance(value, tuple | list):
        return [n for item in value for n in _numbers(item)]
    slots = [name for cls in type(value).__mro__ for name in getattr(cls, "__slots__", ())]
    return [n for name in slots if not name.startswith("_") for n in _numbers(getattr(value, name))]


def _public_values(view: ClusterView) -> dict[str, object]:
    """Every public member of the view: properties read, methods called for each job."""
    values = {}
    for name in dir(ClusterView):
        if name.startswith("_") or name in ("throughputs", "throughputs_by_type", "cluster"):
            continue  # the throughput tables and the cluster hold no per-job fact
        member = getattr(ClusterView, name)
        try:
            if isinstance(member, property):
                values[name] = getattr(view, name)
            elif inspect.isfunction(member):
                values[name] = [getattr(view, name)(j) for j in range(view.num_jobs)]
        except OracleAccessError:
            continue  # hidden: an AttributeError, so not even hasattr sees it
    return values


@pytest.mark.parametrize("regime", REGIMES, ids=lambda r: r.describe())
def test_no_public_member_of_the_view_reveals_the_hidden_length(regime):
    sim = simulate(SECRET_JOBS, regime, gpus=2, round_s=10.0)
    for _ in range(2):  # before and after 10 s of work (an early ending may have come)
        values = _public_values(sim.view)
        assert {"num_epochs", "isolated_time_s", "remaining_s", "batch_size_schedule"}.isdisjoint(values)
        leaked = {name for name, value in values.items() if SECRETS & set(_numbers(value))}
        assert leaked == set()
        for spec in values["spec"]:
            assert not hasattr(spec, "total_iterations") and not hasattr(spec, "num_epochs")
            assert isinstance(spec, EstimatedJobSpec if regime.knowledge == "estimate" else UnknownLengthJobSpec)
        sim.step(sim.view.active_job_ids)
    assert not hasattr(sim.view, "num_epochs")


def test_the_walk_sees_the_hidden_length_through_an_oracle_view():
    """The check above is not vacuous: an oracle view's walk finds the secrets."""
    values = _public_values(simulate(SECRET_JOBS, Regime("unknown"), gpus=2, oracle=True).view)
    assert {name for name, value in values.items() if SECRETS & set(_numbers(value))} == {
        "num_epochs", "isolated_time_s", "remaining_s"}


def test_no_public_member_of_an_exact_view_reveals_the_duration_or_the_isolated_time():
    """The paper's setting: the length is public, the generator duration and the isolated
    times (37.25 s and 53.36 s of work on a table of 99.33 it/s) are not."""
    table = ThroughputTable({(MODEL, 100, 1): 3700 / 37.25}, source="exact walk")
    jobs = [dataclasses.replace(j, duration_s=4242.5) for j in SECRET_JOBS]
    sim = Simulator(jobs, SimConfig(gpus=2, round_s=10.0, restart_overhead_s=0.0), table)
    sim.step([0, 1])
    values = _public_values(sim.view)
    assert values["num_epochs"].tolist() == [37, 53]
    secrets = {4242.5, round(37.25, 9), round(53 * 37.25 / 37, 9)}
    leaked = {name for name, value in values.items() if secrets & set(np.round(_numbers(value), 9))}
    assert leaked == set()


def test_the_exact_regime_shows_the_length_and_the_default_regime_changes_nothing():
    assert apply_regime(SECRET_JOBS, Regime()) == tuple(SECRET_JOBS)
    assert all(a is b for a, b in zip(apply_regime(SECRET_JOBS, None), SECRET_JOBS, strict=True))
    view = simulate(SECRET_JOBS, Regime("exact", early_endings=0.5, seed=3), gpus=2).view
    assert view.length_regime == "exact" and view.num_epochs.tolist() == [37, 53]
    assert view.spec(1).total_iterations == 5300
    with pytest.raises(OracleAccessError):
        view.estimated_epochs  # noqa: B018


def test_an_oracle_view_still_shows_the_truth_in_any_regime():
    view = simulate([job(0, 37)], Regime("unknown", early_endings=0.99, seed=0), oracle=True).view
    true_epochs = int(view.isolated_time_s[0])  # one second an epoch
    assert view.num_epochs.tolist() == [37] and 1 <= true_epochs < 37


# --- estimates and early endings -------------------------------------------------------------------


def test_estimates_follow_the_error_model_and_are_reproducible_per_seed():
    jobs = [job(j, 40) for j in range(200)]
    estimate = Regime("estimate", seed=7)
    figures = [s.public().estimated_iterations for s in apply_regime(jobs, estimate)]
    assert figures == [s.public().estimated_iterations for s in apply_regime(jobs, Regime("estimate", seed=7))]
    assert figures != [s.public().estimated_iterations for s in apply_regime(jobs, Regime("estimate", seed=8))]
    accuracy = 4000 / np.array(figures)
    assert accuracy.min() >= 0.1 - 1e-3 and accuracy.max() <= 1.0
    assert 0.45 < accuracy.mean() < 0.65  # uniform on [0.1, 1]: mean 0.55
    with_endings = apply_regime(jobs, Regime("estimate", early_endings=0.4, seed=7))
    assert [s.public().estimated_iterations for s in with_endings] == figures  # own stream per draw


def test_a_share_of_early_endings_ends_jobs_at_their_hidden_end():
    jobs = [job(j, 40) for j in range(400)]
    ran = [s.run_epochs(np.ones(40)) for s in apply_regime(jobs, Regime("unknown", early_endings=0.3, seed=2))]
    early = np.array(ran) < 40
    assert 0.22 < early.mean() < 0.38 and min(ran) >= 1
    sim = simulate(jobs[:3], Regime("unknown", early_endings=0.3, seed=2), gpus=3, round_s=120.0)
    while not sim.done:
        sim.step(sim.view.active_job_ids)
    assert sim.result().completion_s.tolist() == [float(n) for n in ran[:3]]


def test_logged_early_endings_end_after_the_epoch_of_the_logged_time():
    killed = job(0, 40, origin=JobOrigin(status="killed", logged_run_s=10.5))
    completed = job(1, 40, origin=JobOrigin(status="completed"))
    sim = simulate([killed, completed], Regime("exact", early_endings="logged"), gpus=2, round_s=120.0)
    assert sim.view.num_epochs.tolist() == [40, 40]  # the scheduler is told the nominal length
    sim.step([0, 1])
    assert sim.result().completion_s.tolist() == [11.0, 40.0]
    nominal = simulate([killed], Regime(), round_s=120.0)
    nominal.step([0])
    assert nominal.result().completion_s.tolist() == [40.0]  # the default keeps nominal lengths


@pytest.mark.parametrize("value", ["1", "-0.1", "x", "nan", 1.5, True])
def test_bad_early_endings_are_refused(value):
    with pytest.raises(InputError, match="--early-endings"):
        parse_early_endings(value)


def test_bad_regime_options_are_refused():
    with pytest.raises(InputError, match="--regime"):
        Regime("vague")
    with pytest.raises(InputError, match="seed"):
        Regime("unknown", seed=-1)


def _episode(trace: Trace, agent: str, regime: Regime):
    outcome = run_episode(trace, make_agent(agent), SimConfig(gpus=4), regime=regime, progress=False)
    return outcome.result.completion_s.tobytes(), outcome.metrics


@pytest.mark.parametrize("agent", ["srtf", "gittins", "themis"])
def test_regimes_are_byte_reproducible_per_seed(agent):
    trace = load_trace("teaching-12", gpus=4)
    regime = Regime("estimate", early_endings=0.3, seed=11)
    first = _episode(trace, agent, regime)
    assert first == _episode(trace, agent, regime)
    assert first[0] != _episode(trace, agent, Regime("estimate", early_endings=0.3, seed=12))[0]


# --- the predictor and the Gittins index -----------------------------------------------------


def test_the_predictor_works_from_the_prior_and_observed_progress():
    regime = Regime("unknown", prior=PRIOR)
    sim = simulate([job(0, 10)], regime, round_s=3.0)
    assert predicted_remaining_s(sim.view)[0] == pytest.approx(6.0)  # E[T] = 6 epochs of 1 s
    sim.step([0])  # 3 epochs done: only the 10-epoch length is left
    assert predicted_remaining_s(sim.view)[0] == pytest.approx(7.0)


@pytest.mark.parametrize(("attained", "index"), [(0.0, 0.25), (3.0, 1 / 7), (6.0, 0.25), (9.0, 1.0)])
def test_gittins_index_by_hand(attained, index):
    """Lengths 2 or 10 (1/2 each). At a = 0: quantum 2 gives 0.5 / (0.5*2 + 0.5*2) = 1/4, quantum 10
    gives 1 / 6; past 2 only 10 - a is left: 1 / (10 - a)."""
    sim = simulate([job(0, 10)], Regime("unknown", prior=PRIOR), round_s=attained or 3.0)
    if attained:
        sim.step([0])
    assert gittins_index_per_epoch(sim.view, np.array([0]))[0] == pytest.approx(index)


def test_gittins_golden_schedule_on_a_hand_made_trace():
    """1 GPU, rounds of 3 s. A fresh job (index 1/4) overtakes a job that outlived the short
    length (1/7); a job 4 epochs from its end (1/4) keeps the GPU against one at 1/7."""
    jobs = [job(0, 10), job(1, 2, 3.0), job(2, 10, 3.0)]
    trace = Trace.from_jobs("gittins-golden", jobs, "hand-made")
    config = SimConfig(gpus=1, round_s=3.0, restart_overhead_s=0.0)
    outcome = run_episode(trace, make_agent("gittins"), config, TABLE, regime=Regime("unknown", prior=PRIOR),
                          progress=False)
    ran = [ids.tolist() for ids in outcome.result.round_job_ids]
    assert ran == [[0], [1], [2], [0], [0], [0], [2], [2], [2]]
    # job 1 ends 2 s into its round, which then ends: later rounds start at 5, 8, ... s
    assert outcome.result.completion_s.tolist() == [15.0, 5.0, 22.0]


@pytest.mark.parametrize("regime", ["exact", "estimate", "unknown"])
@pytest.mark.parametrize("agent", ["gittins", "srtf", "wsrpt", "max-rho", "fair-share", "tiresias", "gavel", "themis"])
def test_check_agent_passes_in_every_regime(agent, regime):
    report = check_agent(lambda: make_agent(agent), "teaching-12", regime=Regime(regime, early_endings=0.2))
    assert report.metrics["completed_jobs"] == 12


def test_the_heterogeneous_path_runs_the_regimes_reproducibly():
    from shockwave_gym.traces.bundled import resolve_cluster

    gpus, cluster = resolve_cluster("hetero-120", None, None)
    trace = load_trace("hetero-120", gpus=gpus)
    config = SimConfig(gpus=gpus, cluster=cluster)
    regime = Regime("unknown", early_endings=0.3, seed=5)
    runs = [run_episode(trace, make_agent("gittins"), config, regime=regime, progress=False) for _ in range(2)]
    assert runs[0].result.completion_s.tobytes() == runs[1].result.completion_s.tobytes()
    nominal = run_episode(trace, make_agent("gittins"), config, progress=False)
    assert runs[0].result.isolated_time_s.sum() < nominal.result.isolated_time_s.sum()
    assert runs[0].metrics["completed_jobs"] == 120


def test_run_command_takes_the_regime_and_reports_it(capsys):
    import json

    argv = ["run", "--agent", "gittins", "--trace", "teaching-12", "--json", "--progress-every-s", "0"]
    assert main([*argv, "--regime", "unknown", "--early-endings", "0.25", "--regime-seed", "3"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["regime"] == "unknown, early endings 0.25, seed 3" and record["completed_jobs"] == 12
    assert main(argv) == 0
    assert "regime" not in json.loads(capsys.readouterr().out)  # the default regime adds nothing


def test_the_harness_runs_a_regime_under_its_own_cell_keys(tmp_path):
    from shockwave_gym.harness import evaluate

    def run(regime):
        results = evaluate(["srtf", "gittins"], ["teaching-12"], workers=1, out=tmp_path / "cells", progress=False,
                           figures=False, regime=regime)
        return dict(zip(results["agent"], results["avg_jct_s"], strict=True)), set(results["key_hash"])

    exact, exact_keys = run(None)
    unknown, unknown_keys = run(Regime("unknown", early_endings=0.2, seed=1))
    assert exact_keys.isdisjoint(unknown_keys) and run(Regime())[1] == exact_keys
    assert unknown != exact
    trace = load_trace("teaching-12")
    direct = run_episode(trace, make_agent("srtf"), SimConfig(gpus=4), regime=Regime("unknown", early_endings=0.2, seed=1),
                         progress=False)
    assert unknown["srtf"] == direct.metrics["avg_jct_s"]


def test_compare_runs_every_agent_in_the_regime_and_names_the_one_that_cannot(tmp_path, capsys):
    import csv

    argv = ["compare", "--agents", "srtf,gittins", "--traces", "teaching-12", "--workers", "1", "--no-figures",
            "--quiet", "--regime", "unknown", "--early-endings", "0.2", "--regime-seed", "1"]
    assert main([*argv, "--out", str(tmp_path / "ok")]) == 0
    rows = {row["agent"]: float(row["avg_jct_s"]) for row in csv.DictReader(open(tmp_path / "ok" / "results.csv"))}
    direct = run_episode(load_trace("teaching-12"), make_agent("gittins"), SimConfig(gpus=4),
                         regime=Regime("unknown", early_endings=0.2, seed=1), progress=False)
    assert rows["gittins"] == direct.metrics["avg_jct_s"]
    capsys.readouterr()
    assert main([*argv[:2], "ppo", *argv[3:], "--out", str(tmp_path / "bad")]) == 1
    err = capsys.readouterr().err
    assert "agent 'ppo' cannot run in the 'unknown' regime" in err and "Traceback" not in err
