"""One round, written once: ``Simulator.run_round`` is the only implementation of the round
rules, and a cluster of several GPU types changes it only through the round's GPU-type hooks
(identity on a cluster of one type). The simulator modules stay within the code-size limits."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import numpy as np
import pytest

from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.hetero_simulator import HeteroSimulator
from shockwave_gym.placement import place_in_order
from shockwave_gym.simulator import Simulator
from shockwave_gym.traces import load_trace

PACKAGE = Path(__file__).resolve().parents[1] / "shockwave_gym"
SIMULATOR_MODULES = ("simulator.py", "hetero_simulator.py", "hetero_state.py", "state.py", "placement.py")


def _definitions(name: str) -> list[str]:
    """``module:Class.name`` of every function called ``name`` in the package's top-level modules."""
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text())
        for cls in [tree, *[n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]]:
            for node in cls.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                    owner = getattr(cls, "name", "")
                    found.append(f"{path.name}:{owner}.{name}" if owner else f"{path.name}:{name}")
    return found


def test_run_round_is_defined_once():
    assert _definitions("run_round") == ["simulator.py:Simulator.run_round"]
    assert HeteroSimulator.run_round is Simulator.run_round
    assert HeteroSimulator.step is Simulator.step


def test_the_typed_simulator_uses_only_public_members_of_the_round():
    """HeteroSimulator is configuration and hooks: every private name it touches on ``self``
    is one of its own, none of Simulator's internals."""
    tree = ast.parse((PACKAGE / "hetero_simulator.py").read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "HeteroSimulator"]
    own = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    touched = {
        n.attr for n in ast.walk(cls)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
        and n.attr.startswith("_") and not n.attr.startswith("__")
    }
    assert touched and touched <= own, touched - own


def _code_lines(source: str, node: ast.AST) -> int:
    """Lines of ``node`` holding code: no blank, comment-only or docstring line."""
    docstrings = set()
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(inner, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines = set()
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    first, last = getattr(node, "lineno", 1), getattr(node, "end_lineno", source.count("\n") + 1)
    return sum(1 for line in lines - docstrings if first <= line <= last)


@pytest.mark.parametrize("module", SIMULATOR_MODULES)
def test_simulator_modules_stay_within_the_size_limits(module):
    """At most 60 code lines per function, 12 parameters, 400 code lines per module."""
    source = (PACKAGE / module).read_text()
    tree = ast.parse(source)
    assert _code_lines(source, tree) <= 400
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            params = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs) + bool(args.vararg) + bool(args.kwarg)
            assert params <= 12, (module, node.name, params)
            assert _code_lines(source, node) <= 60, (module, node.name)


def test_the_hooks_are_the_identity_on_one_type():
    """On ``--gpus N`` the hooks hand back what they are given: the round is the plain one."""
    trace = load_trace("teaching-12", gpus=4)
    sim = Simulator(trace.jobs, SimConfig(gpus=4))
    ids = sim.active_job_ids().copy()
    assert ids.size >= 1
    placed, types = sim.place_round(ids, None)
    assert placed is ids and types is None
    work, iso = sim.work_done_s[ids], sim.static.isolated_time_s[ids]
    tau, total = sim.to_type_time(ids, None, work, iso)
    assert tau is work and total is iso
    assert sim.to_reference_work(ids, None, tau) is tau
    sim.step(ids)
    assert sim.stayed_on_type(ids, None).all()
    assert sim.history[-1].gpu_types is None


def _greedy(sim, rng) -> list[int]:
    """A random order of the active jobs, packed while their gangs fit (by total GPUs)."""
    chosen, free = [], sim.config.gpus
    for j in rng.permutation(sim.active_job_ids()).tolist():
        if sim.static.gang[j] <= free:
            chosen.append(j)
            free -= int(sim.static.gang[j])
    return chosen


def test_v100_only_cluster_repeats_every_round_record_bit_for_bit():
    """Through the typed hooks on a cluster of V100s only, every round record (run and
    overhead seconds, completions, end time) and state array equals the plain round's."""
    trace = load_trace("teaching-12", gpus=4)
    plain = Simulator(trace.jobs, SimConfig(gpus=4))
    typed = HeteroSimulator(trace.jobs, SimConfig(cluster=ClusterSpec.parse("v100=4")))
    rng = np.random.default_rng(3)
    while not plain.done:
        chosen = _greedy(plain, rng)
        a, b = plain.step(chosen), typed.run_round(np.array(sorted(chosen), dtype=np.int64))
        for name in ("job_ids", "run_s", "overhead_s", "completed_ids"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert (a.start_s, a.end_s, a.gpus_busy) == (b.start_s, b.end_s, b.gpus_busy)
        assert b.gpu_types.tolist() == [0] * len(chosen)
        for name in ("work_done_s", "epoch_pos", "status", "ran_last_round", "last_run_s", "rounds_run"):
            np.testing.assert_array_equal(getattr(plain, name), getattr(typed, name))
        assert typed.last_type.tolist() == np.where(plain.ran_last_round, 0, -1).tolist()
    assert typed.done and plain.time_s == typed.time_s


def test_default_placement_inside_the_round_equals_the_checked_action():
    """On a mixed cluster, ``run_round(ids)`` (the default rule applied by the round's
    placement hook) and ``step(ids)`` (checked, then placed) give the same run."""
    trace = load_trace("teaching-12", gpus=4)
    cluster = SimConfig(cluster=ClusterSpec.parse("v100=4,p100=2,k80=4"))
    a, b = HeteroSimulator(trace.jobs, cluster), HeteroSimulator(trace.jobs, cluster)
    rng = np.random.default_rng(5)
    moved = 0
    while not a.done:
        view = a.view
        order = rng.permutation(a.active_job_ids())
        # an order the default rule places whole: the jobs it keeps, in scan order
        order = place_in_order(order, a.static.gang, view.throughput_by_type, view.runnable,
                               view.type_gpus).job_ids
        ra, rb = a.step(order.tolist()), b.run_round(order)
        np.testing.assert_array_equal(ra.gpu_types, rb.gpu_types)
        np.testing.assert_array_equal(ra.job_ids, rb.job_ids)
        np.testing.assert_array_equal(ra.overhead_s, rb.overhead_s)
        np.testing.assert_array_equal(a.work_done_s, b.work_done_s)
        moved += int(np.count_nonzero(ra.overhead_s))
    np.testing.assert_array_equal(a.completion_s, b.completion_s)
    assert moved > 0  # the restart rule was exercised
