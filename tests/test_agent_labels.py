"""`--agent LABEL=KIND[:opt=value,...]` in run and compare; trained policies by algorithm name."""

from __future__ import annotations

import csv
import json

import pytest

torch = pytest.importorskip("torch")

from shockwave_agents import make_agent  # noqa: E402
from shockwave_agents.learned.weights import build_policy, save_policy  # noqa: E402
from shockwave_gym.cli import main  # noqa: E402
from shockwave_gym.errors import InputError  # noqa: E402
from shockwave_gym.harness.agent_specs import parse_agent_spec  # noqa: E402
from shockwave_gym.harness.grid import resolve_agents  # noqa: E402


def _policy(tmp_path, name, algo, mode, training=None, seed=0):
    policy = build_policy(algo, mode, 16, embed_dim=16, hidden_dim=32)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.copy_(0.1 * torch.randn(parameter.shape, generator=generator))
    folder = tmp_path / name
    folder.mkdir()
    save_policy(policy, folder / "policy", algo=algo, action_mode=mode, training=training)
    return folder


@pytest.fixture
def policies(tmp_path):
    return {
        "mppo": _policy(tmp_path, "mppo", "maskable_ppo", "select"),
        "ppo": _policy(tmp_path, "ppo", "ppo", "priority", seed=1),
        "bc": _policy(tmp_path, "bc", "ppo", "select", {"teacher": "shockwave"}, seed=2),
    }


@pytest.mark.parametrize("text, expected", [
    ("ppo", ("ppo", "ppo", {})),
    ("mine=ppo:path=runs/x", ("mine", "ppo", {"path": "runs/x"})),
    ("mppo=maskable_ppo:path=runs/y,max_jobs=64", ("mppo", "maskable_ppo", {"path": "runs/y", "max_jobs": 64})),
    ("maskable_ppo:path=runs/y", ("maskable_ppo", "maskable_ppo", {"path": "runs/y"})),
    ("noisy=shockwave:noise=0.2,trust=true", ("noisy", "shockwave", {"noise": 0.2, "trust": True})),
    ("mine=my.pkg:make", ("mine", "my.pkg:make", {})),
    ("mine=my.pkg:make:beta=0.5", ("mine", "my.pkg:make", {"beta": 0.5})),
    ("my.pkg:make", ("make", "my.pkg:make", {})),
    ("w=ppo:path=C:/runs/x", ("w", "ppo", {"path": "C:/runs/x"})),
])
def test_specs_parse(text, expected):
    assert parse_agent_spec(text) == expected


@pytest.mark.parametrize("bad, match", [
    ("=ppo", "empty label"),
    ("a b=ppo", "label"),
    ("mine=ppo:path", "KEY=VALUE"),
    ("mine=ppo:path=x,path=y", "given twice"),
    ("mine=", "no agent kind"),
])
def test_malformed_specs_are_input_errors(bad, match):
    with pytest.raises(InputError, match=match):
        parse_agent_spec(bad)


def test_unknown_kind_and_unknown_option_are_clear_errors():
    with pytest.raises(InputError, match="unknown agent 'nope'.*maskable_ppo"):
        resolve_agents(["mine=nope:path=x"])
    with pytest.raises(InputError, match="does not take options.*colour"):
        resolve_agents(["mine=fifo:colour=red"])


def test_policy_kinds_need_a_path_and_the_right_file(policies):
    with pytest.raises(InputError, match="needs path="):
        make_agent("maskable_ppo")
    with pytest.raises(InputError, match="is a 'ppo' policy"):
        make_agent("maskable_ppo", path=str(policies["ppo"]))
    with pytest.raises(InputError, match="is a 'maskable_ppo' policy"):
        make_agent("bc", path=str(policies["mppo"]))
    assert make_agent("maskable_ppo", path=str(policies["mppo"])).policy_meta["algo"] == "maskable_ppo"
    assert make_agent("imitation", path=str(policies["bc"])).policy_meta["training"]["teacher"] == "shockwave"
    assert make_agent("policy", path=str(policies["ppo"])).policy_meta["algo"] == "ppo"


def _run_json(capsys, *argv):
    assert main(["run", "--trace", "teaching-12", "--json", "--progress-every-s", "0", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_run_reports_the_label_and_the_same_metrics_as_the_plain_name(capsys, policies):
    labelled = _run_json(capsys, "--agent", f"mine=maskable_ppo:path={policies['mppo']}")
    plain = _run_json(capsys, "--agent", "maskable_ppo", "--agent-opt", f"path={policies['mppo']}")
    via_ppo = _run_json(capsys, "--agent", "ppo", "--agent-opt", f"path={policies['mppo']}")
    assert labelled["agent"] == "mine" and plain["agent"] == "maskable_ppo" and via_ppo["agent"] == "ppo"
    for key in ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction", "rounds"):
        assert labelled[key] == plain[key] == via_ppo[key]
    fifo = _run_json(capsys, "--agent", "fifo")
    assert fifo["agent"] == "fifo"  # the plain name is unchanged


def test_compare_puts_labelled_policies_beside_shipped_agents(tmp_path, policies):
    out = tmp_path / "cmp"
    code = main(["compare", "--agents", "fifo", "--agent", f"mine=ppo:path={policies['ppo']}",
                 "--agent", f"mppo=maskable_ppo:path={policies['mppo']}", "--agent", f"bc=bc:path={policies['bc']}",
                 "--agent-opt", "mppo:max_jobs=20",
                 "--traces", "teaching-12", "--workers", "1", "--out", str(out), "--no-figures", "--quiet"])
    assert code == 0
    rows = {row["agent"]: row for row in csv.DictReader((out / "results.csv").open())}
    assert list(rows) == ["fifo", "mine", "mppo", "bc"]
    record = next(p for p in (out / "cells").rglob("*.json") if json.loads(p.read_text())["row"]["agent"] == "mppo")
    assert ["max_jobs", "20"] in json.loads(record.read_text())["key"]["agent_options"]
    # the labelled ppo equals the ppo agent loading the same file
    single = tmp_path / "single"
    assert main(["compare", "--agents", "ppo", "--agent-opt", f"ppo:path={policies['ppo']}", "--traces", "teaching-12",
                 "--workers", "1", "--out", str(single), "--no-figures", "--quiet"]) == 0
    ppo_row = next(csv.DictReader((single / "results.csv").open()))
    for key in ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction"):
        assert rows["mine"][key] == ppo_row[key]


def test_compare_needs_some_agent(tmp_path, capsys):
    assert main(["compare", "--traces", "teaching-12", "--out", str(tmp_path / "x")]) == 2
    assert "--agent LABEL=KIND" in capsys.readouterr().err


def test_agents_command_describes_every_agent_in_one_line(capsys, monkeypatch):
    from shockwave_agents import available_agents
    from shockwave_agents.registry import policy_kinds, register_agent

    def make_lifo(**options):
        """Last in, first out (a test agent).

        More detail that the listing leaves out."""
        return make_agent("fifo", **options)

    monkeypatch.setattr("shockwave_agents.registry._EXTRA", {})
    register_agent("lifo-doc", make_lifo)
    assert main(["agents"]) == 0
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines() if line.strip())
    for name in [*available_agents(), *policy_kinds()]:
        assert len(lines.get(name, "").strip()) > 10, name
    assert lines["lifo-doc"] == "Last in, first out (a test agent)."
    assert "tiresias" in lines["las"].lower() and "path= required" in lines["maskable_ppo"]
