"""The round parameters: declared with their defaults once (SimConfig), settable from every
entry point (``run``, ``compare``, :func:`evaluate`, ``gym.make``, the vector env)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import gymnasium as gym
import pytest

import shockwave_gym  # noqa: F401  (registers the env ids)
from shockwave_gym.cli import main
from shockwave_gym.config import ROUND_PARAMETERS, SimConfig, round_defaults, round_options
from shockwave_gym.errors import InputError
from shockwave_gym.harness import evaluate

PACKAGE = Path(shockwave_gym.__file__).parent
LITERAL_DEFAULTS = {120.0, 20.0, 100_000}

#: a value different from each default, valid together
CHANGED = {"round_s": 90.0, "restart_overhead_s": 5.0, "restart_min_run_share": 0.5, "max_rounds": 4}


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def test_defaults_declared_once_in_simconfig():
    """No function signature in the package gives a round parameter a default other than
    ``None``; only SimConfig's fields hold the values."""
    offenders = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            for arg, default in pairs:
                if arg.arg in ROUND_PARAMETERS and not (isinstance(default, ast.Constant) and default.value is None):
                    offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}({arg.arg}=...)")
    assert offenders == []


def test_literal_defaults_appear_only_in_config():
    """The default values, as annotated assignments of a round parameter, exist only in
    SimConfig's body."""
    homes = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.target.id in ROUND_PARAMETERS and node.value is not None:
                homes.append(path.relative_to(PACKAGE).as_posix())
    assert homes == ["config.py"] * len(ROUND_PARAMETERS)
    assert round_defaults() == {name: getattr(SimConfig(gpus=1), name) for name in ROUND_PARAMETERS}
    assert {round_defaults()[n] for n in ("round_s", "restart_overhead_s", "max_rounds")} == LITERAL_DEFAULTS


def test_round_options_drops_none_and_rejects_unknown_names():
    assert round_options(round_s=None, max_rounds=7) == {"max_rounds": 7}
    with pytest.raises(InputError, match="round_len"):
        round_options(round_len=3)


def test_each_parameter_settable_from_gym_make():
    for name, value in CHANGED.items():
        env = gym.make("shockwave_gym/Teaching-v0", **{name: value})
        config = env.unwrapped.sim_config
        assert getattr(config, name) == value
        others = {n: getattr(config, n) for n in ROUND_PARAMETERS if n != name}
        assert others == {n: v for n, v in round_defaults().items() if n != name}
        env.close()
    env = gym.make("shockwave_gym/Teaching-v0", max_rounds=2)
    env.reset(seed=0)
    truncated = False
    while not truncated:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        assert not terminated
    assert env.unwrapped.simulator.round_index == 2


def test_vector_env_takes_the_round_parameters():
    envs = gym.make_vec("shockwave_gym/Teaching-v0", num_envs=2, vectorization_mode="vector_entry_point",
                        restart_min_run_share=0.25, round_s=60.0)
    try:
        envs.reset(seed=0)
        config = envs.templates[0].sim_config
        assert (config.round_s, config.restart_min_run_share) == (60.0, 0.25)
        assert envs.sim.restart_threshold_s[0] == 15.0
    finally:
        envs.close()


def test_each_parameter_settable_from_evaluate(monkeypatch):
    from shockwave_gym.harness import api

    seen = []
    original = api.build_cells

    def spy(*args, **kwargs):
        cells = original(*args, **kwargs)
        seen.append(cells)
        return cells

    monkeypatch.setattr(api, "build_cells", spy)
    results = evaluate("fifo", "teaching-12", workers=1, figures=False, progress=False, **CHANGED)
    config = seen[0][0].config
    assert {name: getattr(config, name) for name in ROUND_PARAMETERS} == CHANGED
    assert seen[0][0].max_rounds == 4
    assert results["rounds"].iloc[0] == 4  # truncated after the 4 rounds asked for


def _run_json(capsys, *argv) -> dict:
    code = main(["run", "--agent", "fifo", "--trace", "teaching-12", "--json", "--progress-every-s", "0", *argv])
    assert code == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ROUND_PARAMETERS)
def test_each_parameter_settable_from_run(name, capsys, monkeypatch):
    from shockwave_gym import runner

    configs = []
    original = runner.make_simulator
    monkeypatch.setattr(runner, "make_simulator", lambda jobs, config, *a, **k: configs.append(config) or original(jobs, config, *a, **k))
    _run_json(capsys, f"--{name.replace('_', '-')}", str(CHANGED[name]))
    assert getattr(configs[0], name) == CHANGED[name]


def test_restart_min_run_share_changes_a_run(capsys):
    """The new flag reaches the simulator: no overhead is paid with share 1 (no run is
    longer than the whole round), so the makespan shrinks."""
    default = _run_json(capsys)
    never = _run_json(capsys, "--restart-min-run-share", "1")
    assert never["makespan_s"] < default["makespan_s"]


@pytest.mark.parametrize("name", ROUND_PARAMETERS)
def test_each_parameter_settable_from_compare(name, tmp_path, monkeypatch):
    from shockwave_gym import harness

    calls = []
    monkeypatch.setattr(harness, "evaluate", lambda *a, **k: calls.append(k) or (_ for _ in ()).throw(SystemExit(0)))
    with pytest.raises(SystemExit):
        main(["compare", "--agents", "fifo", "--traces", "teaching-12", "--out", str(tmp_path / "o"),
              f"--{name.replace('_', '-')}", str(CHANGED[name])])
    assert calls[0][name] == CHANGED[name]
    assert not {n for n in ROUND_PARAMETERS if n != name} & set(calls[0])  # others: SimConfig's defaults
