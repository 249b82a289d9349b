"""The rules, the ``priority`` decoder, the features and the rewards exist exactly twice: the
readable reference and one set of compiled kernels. Counted mechanically over the package's
source (ast), by what each implementation must do:

* round rules: a module that stores into both the state's progress field (``work_done_s``)
  and its clock (``time_s``), directly or through a local alias of the field;
* ``priority`` decoder: a module that negates the agent's scores (the descending-score
  order), a score being any name containing ``score`` or computed from one;
* features: a module that multiplies by the features' input scales (``LOG_SCALE_IN``,
  ``V2_SCALE_IN`` or a name for them: ``SCALE_IN``, ``V2_IN``, ``scale_in``);
* rewards: a module that divides by the ``jct`` reward's normaliser (``jct_normaliser_s``).

A third copy of any of them (a synthetic module below) makes the count 3.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "shockwave_gym"

#: Each concept: the reference module and the kernel module, nothing else.
EXPECTED = {
    "round rules": {"shockwave_gym/simulator.py", "shockwave_gym/batch/jit.py"},
    "priority decoder": {"shockwave_gym/interface/actions.py", "shockwave_gym/env/vector/jit.py"},
    "features": {"shockwave_gym/interface/observation.py", "shockwave_gym/env/vector/features.py"},
    "rewards": {"shockwave_gym/env/rewards.py", "shockwave_gym/env/vector/fused.py"},
}
ROUND_FIELDS = {"work_done_s", "time_s"}
SCALE = re.compile(r"SCALE_IN|^V2_IN$|scale_in")


def _names(node) -> set[str]:
    """Every name and attribute name in ``node``."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


def _pairs(target, value):
    """(target, value) pairs of an assignment, tuples matched element by element."""
    if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List) \
            and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts, strict=True):
            yield from _pairs(t, v)
    else:
        yield target, value


def _assignments(func):
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield from _pairs(target, node.value)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and node.value is not None:
            yield node.target, node.value


def _stored_fields(func) -> set[str]:
    """The attribute fields ``func`` stores into: ``x.f = ...``, ``x.f[...] = ...``, or
    ``a[...] = ...`` with ``a`` a local alias of ``x.f``."""
    alias = {t.id: v.attr for t, v in _assignments(func) if isinstance(t, ast.Name) and isinstance(v, ast.Attribute)}
    out = set()
    for target, _ in _assignments(func):
        for leaf in ast.walk(target):
            if isinstance(leaf, ast.Attribute) and isinstance(leaf.ctx, ast.Store):
                out.add(leaf.attr)
            elif isinstance(leaf, ast.Subscript) and isinstance(leaf.ctx, ast.Store):
                base = leaf.value
                if isinstance(base, ast.Attribute):
                    out.add(base.attr)
                elif isinstance(base, ast.Name) and base.id in alias:
                    out.add(alias[base.id])
    return out


def _negates_scores(func) -> bool:
    """Whether ``func`` negates the agent's scores (a name containing "score", or computed
    from one)."""
    tainted = {n for n in _names(func) if "score" in n.lower()}
    for _ in range(5):  # to a fixed point: a = scores[...]; b = a[...]; -b
        grown = tainted | {t.id for t, v in _assignments(func) if isinstance(t, ast.Name) and _names(v) & tainted}
        if grown == tainted:
            break
        tainted = grown
    return any(isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _names(node.operand) & tainted
               for node in ast.walk(func))


def _scales_features(func) -> bool:
    for node in ast.walk(func):
        if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.Mult):
            operands = (node.left, node.right) if isinstance(node, ast.BinOp) else (node.target, node.value)
            if any(SCALE.search(name) for operand in operands for name in _names(operand)):
                return True
    return False


def _divides_by_normaliser(func) -> bool:
    return any(isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and "jct_normaliser_s" in _names(node.right)
               for node in ast.walk(func))


def implementations(sources: dict[str, str]) -> dict[str, set[str]]:
    """{concept: the modules implementing it} over ``sources`` ({path: source text})."""
    found = {concept: set() for concept in EXPECTED}
    for path, text in sources.items():
        functions = [node for node in ast.walk(ast.parse(text))
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
        stored = set().union(*(_stored_fields(f) for f in functions)) if functions else set()
        checks = {"round rules": ROUND_FIELDS <= stored,
                  "priority decoder": any(_negates_scores(f) for f in functions),
                  "features": any(_scales_features(f) for f in functions),
                  "rewards": any(_divides_by_normaliser(f) for f in functions)}
        for concept, hit in checks.items():
            if hit:
                found[concept].add(path)
    return found


def _package_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}


def test_each_concept_is_implemented_twice_the_reference_and_the_kernels():
    found = implementations(_package_sources())
    for concept, modules in found.items():
        assert modules == EXPECTED[concept], (concept, sorted(modules))
        assert len(modules) == 2


#: A third copy of each concept, as a module might add one.
SYNTHETIC = '''
import numpy as np
from shockwave_gym.interface.observation import V2_SCALE_IN


def run_round(sim, ids, round_s):
    work = sim.work_done_s
    work[ids] = work[ids] + round_s
    sim.time_s = sim.time_s + round_s


def decode_priority(action, slots):
    scores = np.asarray(action, dtype=np.float64)
    own = scores[slots.slots_by_job()]
    return slots.jobs_by_id()[(-own).argsort(kind="stable")]


def features(raw):
    return np.log1p(np.maximum(raw * V2_SCALE_IN[:, None], 0.0))


def jct_reward(area, t):
    return -area / t.jct_normaliser_s
'''


def test_a_third_copy_is_counted():
    sources = {**_package_sources(), "shockwave_gym/env/copy.py": SYNTHETIC}
    found = implementations(sources)
    for concept in EXPECTED:
        assert found[concept] == EXPECTED[concept] | {"shockwave_gym/env/copy.py"}, concept
        assert len(found[concept]) == 3
