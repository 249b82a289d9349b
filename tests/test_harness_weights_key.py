"""The harness's cell fingerprint covers a learned agent's weight files (and only its)."""

from __future__ import annotations

import shutil

import numpy as np

from shockwave_agents.learned.pretrained import pretrained_path
from shockwave_gym.harness import evaluate
from shockwave_gym.harness.cells import Cell, agent_ref
from shockwave_gym.simulator import SimConfig
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import load_trace

TRACE = "teaching-12"


def make_cell(label: str, spec: str, options: dict | None = None) -> Cell:
    trace = load_trace(TRACE)
    return Cell(agent=agent_ref(label, spec, options), trace=trace, gpus=4, seed=0, config=SimConfig(gpus=4),
                throughputs=ThroughputTable.load(None), max_rounds=10_000, trace_sha256="t", throughputs_sha256="x")


def copy_policy(name: str, directory):
    source = pretrained_path(name)
    directory.mkdir()
    shutil.copy(source, directory / "policy.npz")
    shutil.copy(source.with_suffix(".json"), directory / "policy.json")
    return directory


def perturb(directory) -> None:
    """Rewrite the weights with one value changed (same names and shapes, so it still loads)."""
    with np.load(directory / "policy.npz", allow_pickle=False) as data:
        state = {key: data[key].copy() for key in data.files}
    key = sorted(state)[0]
    state[key].flat[0] += 0.5
    np.savez(directory / "policy.npz", **state)


def test_non_learned_agents_keep_their_key():
    cell = make_cell("srtf", "srtf")
    assert "agent_weights_sha256" not in cell.key
    assert set(cell.key) == {"format", "shockwave_gym_version", "agent", "agent_impl", "agent_options", "trace",
                             "trace_sha256", "gpus", "seed", "sim_config", "throughputs_sha256", "max_rounds", "oracle"}


def test_shipped_and_path_policies_are_keyed_on_their_bytes(tmp_path):
    shipped = make_cell("ppo", "ppo")
    assert len(shipped.key["agent_weights_sha256"]) == 64
    folder = copy_policy("ppo", tmp_path / "run")
    same_bytes = make_cell("ppo", "ppo", {"path": str(folder)})
    before = same_bytes.key_hash
    perturb(folder)
    after = make_cell("ppo", "ppo", {"path": str(folder)})
    assert after.key["agent_weights_sha256"] != same_bytes.key["agent_weights_sha256"]
    assert after.key_hash != before
    # the policy kinds are keyed the same way; a path to the .npz names the same pair as the folder
    by_file = make_cell("mine", "policy", {"path": str(folder / "policy.npz")})
    assert by_file.key["agent_weights_sha256"] == after.key["agent_weights_sha256"]


def test_retrained_weights_in_the_same_folder_are_not_reused(tmp_path):
    folder = copy_policy("ppo", tmp_path / "run")
    out = tmp_path / "out"
    agents = {"mine": "policy"}
    options = {"mine": {"path": str(folder)}}
    first = evaluate(agents, TRACE, seeds=0, workers=1, out=out, progress=False, figures=False, agent_options=options)
    with np.load(folder / "policy.npz", allow_pickle=False) as data:
        state = {key: data[key].copy() for key in data.files}
    # negate the score head (its deep and linear terms): the same shapes, the opposite order
    for key in state:
        if key.startswith("action_net."):
            state[key] *= -1.0
    np.savez(folder / "policy.npz", **state)
    records_before = sorted(p.name for p in out.rglob("seed0-*.json"))
    second = evaluate(agents, TRACE, seeds=0, workers=1, out=out, progress=False, figures=False, agent_options=options)
    records_after = sorted(p.name for p in out.rglob("seed0-*.json"))
    assert len(records_after) == len(records_before) + 1  # a new cell was run, not the old one reused
    assert first["avg_jct_s"].iloc[0] != second["avg_jct_s"].iloc[0]
