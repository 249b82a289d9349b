"""One agent table (shockwave_agents/registry.py): an entry added there appears in
``shockwave-gym agents``, the harness's seeding and the leaderboard's agent set."""

from __future__ import annotations

import inspect

import pytest

from shockwave_agents import registry
from shockwave_gym.cli import main
from shockwave_gym.harness.cells import agent_ref
from shockwave_gym.harness.grid import resolve_agents
from shockwave_gym.harness.leaderboard import agent_commands
from shockwave_gym.harness.seeding import uses_seed


@pytest.fixture
def extra_entry(monkeypatch):
    """A new built-in, added by one line of the table (the FIFO class under a new name)."""
    table = dict(registry._BUILTIN)
    table["fifo-again"] = registry.AgentEntry("shockwave_agents.fifo:FifoAgent", "FIFO under another name",
                                              uses_seed=False, options=("backfill",))
    monkeypatch.setattr(registry, "_BUILTIN", table)
    return "fifo-again"


def test_an_added_entry_appears_everywhere(extra_entry, capsys):
    assert main(["agents"]) == 0
    assert extra_entry in capsys.readouterr().out.split()
    assert main(["agents", "--long"]) == 0
    assert "FIFO under another name" in capsys.readouterr().out
    assert not uses_seed(agent_ref(extra_entry, extra_entry))  # the harness's seeding reads the entry
    assert extra_entry in [ref.label for ref in resolve_agents("all")]  # what `leaderboard` (agents=("all",)) runs
    assert agent_commands(("all",))[extra_entry] == f"--agents {extra_entry}"


def test_seed_declaration_comes_from_the_entry(extra_entry, monkeypatch):
    table = dict(registry._BUILTIN)
    table[extra_entry] = registry.AgentEntry("shockwave_agents.fifo:FifoAgent", "seeded now", uses_seed=True)
    monkeypatch.setattr(registry, "_BUILTIN", table)
    assert uses_seed(agent_ref(extra_entry, extra_entry))
    assert uses_seed(agent_ref("shockwave", "shockwave", {"noise": 0.2}))
    assert not uses_seed(agent_ref("shockwave", "shockwave"))


def test_a_bare_target_string_still_works(monkeypatch):
    """The table's old shape (name -> "module:attr") is read as an undescribed entry that
    uses the seed."""
    table = dict(registry._BUILTIN)
    table["plain"] = "shockwave_agents.fifo:FifoAgent"
    monkeypatch.setattr(registry, "_BUILTIN", table)
    assert "plain" in registry.available_agents()
    assert registry.make_agent("plain").__class__.__name__ == "FifoAgent"
    assert uses_seed(agent_ref("plain", "plain"))


@pytest.mark.parametrize("name", [*registry._BUILTIN, *registry._POLICY_KINDS])
def test_declared_options_bind_to_the_factory(name):
    entry = registry.agent_entry(name)
    factory = registry.resolve_factory(name)
    inspect.signature(factory).bind(**{option: None for option in entry.options})
    assert entry.learned == (name in registry._POLICY_KINDS or entry.target.startswith("shockwave_agents.learned"))


def test_no_other_module_keeps_a_table_of_agent_names():
    """The harness, CLI and leaderboard hold no list of built-in names of their own."""
    from pathlib import Path

    import shockwave_gym

    root = Path(shockwave_gym.__file__).parent
    offenders = []
    for path in [*root.joinpath("harness").glob("*.py"), *root.joinpath("cli").glob("*.py")]:
        text = path.read_text()
        if '"gandiva_fair"' in text and '"allox"' in text:
            offenders.append(path.name)
    assert offenders == []
