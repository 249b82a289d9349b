"""Seeds that make no difference: declared per agent, checked against behaviour, and a
multi-seed comparison runs such agents once (n=1) with one warning naming them."""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest
from helpers import harness_agents as helpers

from shockwave_agents import available_agents, make_agent, registry
from shockwave_gym.cli import main
from shockwave_gym.harness import HarnessWarning, evaluate
from shockwave_gym.harness.cells import agent_ref
from shockwave_gym.harness.seeding import uses_seed

BUILTINS = [name for name in available_agents() if registry.registered_factory(name) is None]


def seedless_lifo():
    return helpers.LifoAgent()


seedless_lifo.uses_seed = False  # how a third-party factory declares it


def test_every_builtin_agent_declares_whether_it_uses_the_seed():
    """Every built-in's entry of the agent table is a full AgentEntry (a bare
    "module:attr" string would be taken to use the seed, undeclared)."""
    assert BUILTINS
    for name in [*BUILTINS, *registry.policy_kinds()]:
        raw = registry._BUILTIN.get(name) or registry._POLICY_KINDS.get(name)
        assert isinstance(raw, registry.AgentEntry) and raw.description, name


@pytest.mark.parametrize("name", BUILTINS)
def test_the_declaration_matches_what_the_agent_does(name):
    """An agent declared seed-free plays the same episode for seeds 0 and 1; Shockwave with
    prediction noise (declared seed-dependent) does not."""
    declared = uses_seed(agent_ref(name, name))
    metrics = [helpers.direct_metrics(make_agent(name), seed) for seed in (0, 1)]
    assert (metrics[0] != metrics[1]) == declared, name
    if name.startswith("shockwave") and "distilled" not in name:
        noisy = agent_ref(name, name, {"noise": 0.3})
        assert uses_seed(noisy)
        runs = [helpers.direct_metrics(make_agent(name, noise=0.3), seed) for seed in (0, 1)]
        assert runs[0] != runs[1]


def test_undeclared_factories_use_the_seed_and_declared_ones_do_not():
    assert uses_seed(agent_ref("test-random", "test-random"))  # registered, undeclared
    assert uses_seed(agent_ref("slow", helpers.module_spec("slow_fifo")))  # module:factory, undeclared
    assert not uses_seed(agent_ref("mine", seedless_lifo))
    assert not uses_seed(agent_ref("mine", f"{__name__}:seedless_lifo"))
    assert uses_seed(agent_ref("gone", "no_such_module_xyz:factory"))  # cannot tell: every seed


def test_seed_free_agents_run_once_with_one_warning_naming_them(tmp_path):
    agents = {"fifo": "fifo", "mine": seedless_lifo, "test-random": "test-random"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = evaluate(agents, helpers.TRACE, seeds=(3, 1, 2), workers=1, out=tmp_path,
                         progress=False, figures=False)
    messages = [str(w.message) for w in caught if issubclass(w.category, HarnessWarning)]
    assert messages == [
        "seeds 3, 1, 2 make no difference for fifo, mine on teaching-12 (a fixed trace and agents "
        "that do not use the seed): ran seed 3 only for them (n=1 in the table)"
    ]
    assert list(zip(frame["agent"], frame["seed"], strict=True)) == [
        ("fifo", 3), ("mine", 3), ("test-random", 3), ("test-random", 1), ("test-random", 2)]
    summary = (tmp_path / "summary.md").read_text()
    rows = {line.split(" | ")[1]: line.rstrip(" |").rsplit(" | ", 1)[1]
            for line in summary.splitlines() if line.startswith(f"| {helpers.TRACE} |")}
    assert rows == {"fifo": "1", "mine": "1", "test-random": "3"}  # n


def test_one_seed_or_only_seeded_agents_give_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", HarnessWarning)
        evaluate("fifo", helpers.TRACE, seeds=(0,), workers=1, progress=False)
        frame = evaluate("test-random", helpers.TRACE, seeds=(0, 1), workers=1, progress=False)
    assert list(frame["seed"]) == [0, 1]


def test_cli_prints_the_seed_warning_once_and_n_1_in_the_table(tmp_path):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["compare", "--agents", "fifo,srtf", "--traces", helpers.TRACE, "--seeds", "0", "1",
                     "--workers", "1", "--out", str(tmp_path), "--no-figures", "--quiet"])
    assert code == 0, err.getvalue()
    warned = [line for line in err.getvalue().splitlines() if line.startswith("shockwave-gym: warning:")]
    assert warned == ["shockwave-gym: warning: seeds 0, 1 make no difference for fifo, srtf on "
                      "teaching-12 (a fixed trace and agents that do not use the seed): ran seed 0 "
                      "only for them (n=1 in the table)"]
    table = [line.split() for line in out.getvalue().splitlines() if line.split()[:1] in (["fifo"], ["srtf"])]
    assert [row[-1] for row in table[:2]] == ["1", "1"]  # the n column of the first block


def _documented_seed_examples():
    """(where, agents, options, seeds) of every compare/evaluate example with several seeds
    in README.md and docs/HARNESS.md."""
    import ast
    import re
    import shlex
    from pathlib import Path

    from shockwave_gym.cli.compare_command import parse_per_agent_options

    repo = Path(__file__).resolve().parents[1]
    found = []
    for page in ("README.md", "docs/HARNESS.md"):
        for line in (repo / page).read_text(encoding="utf-8").splitlines():
            if line.startswith("shockwave-gym compare") and "--seeds" in line:
                words = shlex.split(line.split("#")[0])
                flags: dict[str, list[str]] = {}
                for word in words[2:]:
                    if word.startswith("--"):
                        key = word
                        flags.setdefault(key, [])
                    else:
                        flags[key].append(word)
                agents = ",".join(flags["--agents"]).split(",")
                options = parse_per_agent_options(flags.get("--agent-opt", []))
                found.append((page, agents, options, [int(s) for s in flags["--seeds"]]))
            for match in re.finditer(r"evaluate\((\[[^\]]*\]).*?seeds=\(([\d, ]+)\)", line):
                found.append((page, ast.literal_eval(match.group(1)), {}, [int(s) for s in match.group(2).split(",") if s.strip()]))
    return found


def test_the_documented_seed_examples_run_every_seed_for_every_agent():
    """The docs' own examples do not trigger the "seeds make no difference" warning."""
    from shockwave_gym.harness.grid import resolve_agents
    from shockwave_gym.harness.seeding import seed_free_labels

    examples = _documented_seed_examples()
    assert any(page == "README.md" for page, *_ in examples)
    for page, agents, options, seeds in examples:
        if len(seeds) > 1:
            assert seed_free_labels(resolve_agents(agents, dict(options))) == [], (page, agents, options)
