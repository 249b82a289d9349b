"""docs/VIEW.md's table of ``ClusterView``'s members stays true: it names exactly the class's
public members, each with its kind (property or method), its access (what a view built
without ``oracle=True`` refuses) and, for what it returns, its shape, dtype or type, read off
a view in the middle of an episode on a heterogeneous cluster."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.hetero_simulator import make_simulator
from shockwave_gym.regimes import Regime, apply_regime
from shockwave_gym.traces import load_trace
from shockwave_gym.view import ClusterView, OracleAccessError

DOC = Path(__file__).resolve().parents[1] / "docs" / "VIEW.md"
PUBLIC = sorted(name for name in dir(ClusterView) if not name.startswith("_"))


def _rows(text: str) -> dict[str, list[str]]:
    """Member name -> the cells of its row (the table's rows start with a code span)."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            name = cells[0].strip("`")
            assert name not in rows, f"{name} listed twice"
            rows[name] = cells
    return rows


ROWS = _rows(DOC.read_text(encoding="utf-8"))


def _view(oracle: bool, knowledge: str = "exact") -> ClusterView:
    """A view after 15 rounds of FIFO into teaching-12 on 3 types, in an information regime."""
    trace = load_trace("teaching-12")
    config = SimConfig(cluster=ClusterSpec.parse("v100=2,p100=2,k80=2"))
    jobs = apply_regime(trace.jobs, Regime(knowledge))
    sim = make_simulator(jobs, config, None, trace_name=trace.name, oracle=oracle)
    agent = make_agent("fifo")
    agent.reset(sim.view)
    for _ in range(15):
        sim.step(agent.act(sim.view))
    return sim.view


@pytest.fixture(scope="module")
def views() -> dict[bool, ClusterView]:
    """oracle -> a view of the same state (exact regime)."""
    return {oracle: _view(oracle) for oracle in (False, True)}


@pytest.fixture(scope="module")
def regime_views() -> dict[str, ClusterView]:
    """knowledge -> a non-oracle view in that regime."""
    return {knowledge: _view(False, knowledge) for knowledge in ("exact", "estimate", "unknown")}


def _access(view: ClusterView, name: str) -> bool:
    try:
        _value(view, name)
    except OracleAccessError:
        return False
    return True


def _value(view: ClusterView, name: str):
    member = getattr(view, name)
    return member(0) if inspect.ismethod(member) else member


def test_the_table_lists_exactly_the_public_members():
    assert len(PUBLIC) > 40 and "active_job_ids" in PUBLIC
    assert sorted(ROWS) == PUBLIC, (f"missing from docs/VIEW.md: {sorted(set(PUBLIC) - set(ROWS))}; "
                                    f"not members: {sorted(set(ROWS) - set(PUBLIC))}")


#: what each access of the table means: in which regimes a non-oracle view answers
ACCESS = {"public": {"exact", "estimate", "unknown"}, "oracle only": set(),
          "exact regime": {"exact"}, "estimate regime": {"estimate"}}


@pytest.mark.parametrize("name", PUBLIC)
def test_kind_and_access(name, views, regime_views):
    kind = "property" if isinstance(inspect.getattr_static(ClusterView, name), property) else "method"
    assert ROWS[name][1] == kind
    answers = {knowledge for knowledge, view in regime_views.items() if _access(view, name)}
    assert answers == ACCESS[ROWS[name][-1]], (name, sorted(answers))
    assert _access(views[True], name) or ROWS[name][-1] == "estimate regime"


@pytest.mark.parametrize("name", PUBLIC)
def test_shape_dtype_or_type(name, views, regime_views):
    view = regime_views["estimate"] if ROWS[name][-1] == "estimate regime" else views[True]
    value = _value(view, name)
    cell = ROWS[name][3]
    if name == "derived_arrays":
        public = sorted(s for s in type(value).__slots__ if not s.startswith("_"))
        assert sorted(re.findall(r"`(\w+)`", ROWS[name][2])) == public
        return
    if isinstance(value, np.ndarray):
        sizes = {"N": view.num_jobs, "W": view.reachable_sizes.shape[1], "T": len(view.cluster.types), "C": len(view.gpu_counts),
                 "A": view.num_active, "num_epochs[job_id]": int(views[True].num_epochs[0])}
        shape = re.match(r"`\(([^)]*)\)`", cell)
        assert shape, cell
        assert tuple(sizes[part.strip()] for part in shape.group(1).split(",") if part.strip()) == value.shape
        assert str(value.dtype) in cell
        assert value.flags.writeable == ("fresh" in cell)
    else:
        stated = re.match(r"`([^`]*)`", cell).group(1)
        assert stated.partition("[")[0] == type(value).__name__
