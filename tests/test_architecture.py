"""The layering is structural: import-linter contracts hold (and catch a forbidden import),
the core imports without Gymnasium, and the view is a real information boundary."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(cwd: Path, pythonpath: str | None = None) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(
        [str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_import_contracts_hold():
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_a_forbidden_import_breaks_a_contract(tmp_path):
    """The contracts are not vacuous: a copy of the code where the simulator imports the env
    fails, and the report names the contract and the offending line."""
    shutil.copytree(ROOT / "shockwave_gym", tmp_path / "shockwave_gym")
    shutil.copytree(ROOT / "agents", tmp_path / "shockwave_agents")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    simulator = tmp_path / "shockwave_gym" / "simulator.py"
    simulator.write_text(simulator.read_text() + "\nfrom shockwave_gym.env import ClusterEnv  # noqa\n")
    out = _lint(tmp_path, pythonpath=str(tmp_path))
    assert out.returncode != 0
    assert "layers: the stack BROKEN" in out.stdout
    assert "shockwave_gym.simulator -> shockwave_gym.env" in out.stdout


def test_a_new_core_module_importing_gymnasium_breaks_a_contract(tmp_path):
    """The heavy-packages contract covers modules nobody listed: a new module importing
    gymnasium, placed in the base layer, is caught."""
    shutil.copytree(ROOT / "shockwave_gym", tmp_path / "shockwave_gym")
    shutil.copytree(ROOT / "agents", tmp_path / "shockwave_agents")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "shockwave_gym" / "units.py").write_text("import gymnasium  # noqa\n")
    out = _lint(tmp_path, pythonpath=str(tmp_path))
    assert out.returncode != 0
    assert "heavy packages" in out.stdout and "shockwave_gym.units -> gymnasium" in out.stdout


def _contracts() -> list[dict]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _layers() -> list[list[str]]:
    """The layers contract's layers, top first, each a list of module names."""
    (contract,) = [c for c in _contracts() if c["type"] == "layers"]
    return [[name.strip() for name in layer.replace(":", "|").split("|")] for layer in contract["layers"]]


def test_one_layers_contract_places_every_module():
    """Every top-level module and package of both packages sits in exactly one layer, so a
    new module must be placed (and is then checked) before it lands."""
    import pkgutil

    import shockwave_gym

    placed = [name for layer in _layers() for name in layer]
    assert len(placed) == len(set(placed))
    modules = {f"shockwave_gym.{m.name}" for m in pkgutil.iter_modules(shockwave_gym.__path__)}
    assert modules | {"shockwave_agents"} == set(placed)
    assert [c["type"] for c in _contracts()].count("layers") == 1


def test_architecture_doc_lists_the_contract_layers():
    """docs/ARCHITECTURE.md's layer table lists the contract's layers in order, with the same
    modules and the same kind of siblings."""
    import re

    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    table = text.split("<!-- layers: checked against pyproject.toml")[1].split("<!-- layers: end -->")[0]
    rows = [line.split("|")[1:-1] for line in table.splitlines() if re.match(r"\| \d+ \|", line)]
    documented = [[m if m == "shockwave_agents" else f"shockwave_gym.{m}" for m in re.findall(r"`([^`]+)`", row[2])]
                  for row in rows]
    assert documented == _layers()
    (contract,) = [c for c in _contracts() if c["type"] == "layers"]
    for row, layer in zip(rows, contract["layers"], strict=True):
        kind = "independent" if "|" in layer else "may import each other" if ":" in layer else "—"
        assert row[3].strip() == kind, row


def _cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """The import cycles of ``edges`` (module -> modules it imports): every strongly connected
    component of more than one module, or a module importing itself (Tarjan, iteratively)."""
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    cycles.append(sorted(component))
    return cycles


def test_the_cycle_finder_finds_cycles():
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": ["e"], "f": []}
    assert sorted(_cycles(edges)) == [["a", "b", "c"], ["e"]]


def test_the_import_graph_has_no_cycle():
    """No module of either package imports itself back through others (lazy imports
    inside functions count)."""
    import grimp

    graph = grimp.build_graph("shockwave_gym", "shockwave_agents")
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert len(edges) > 150
    assert _cycles(edges) == []
