"""The layering is structural: import-linter contracts hold (and catch a forbidden import),
the core imports without Gymnasium, and the view is a real information boundary."""

from __future__ import annotations

import dataclasses
import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

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
    assert "core: gym-free, and imports no layer above it" in out.stdout
    assert "shockwave_gym.simulator -> shockwave_gym.env" in out.stdout


HIDE_GYMNASIUM = """
import sys
sys.modules["gymnasium"] = None  # `import gymnasium` now fails as if it were not installed
import shockwave_gym.simulator, shockwave_agents.gavel
from shockwave_agents import make_agent
from shockwave_gym.config import SimConfig
from shockwave_gym.runner import run_episode
from shockwave_gym.traces import load_trace
outcome = run_episode(load_trace("teaching-12", gpus=4), make_agent("gavel"), SimConfig(gpus=4), progress=False)
loaded = sorted(m for m in sys.modules if m.startswith("shockwave_gym.env") or m.startswith("gymnasium."))
print(outcome.metrics["completed_jobs"], sys.modules["gymnasium"] is None, loaded)
"""


def test_the_core_and_the_agents_work_without_gymnasium():
    out = subprocess.run([sys.executable, "-c", HIDE_GYMNASIUM], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "12 True []"


def _view_mid_episode():
    from shockwave_agents import make_agent
    from shockwave_gym.config import SimConfig
    from shockwave_gym.simulator import Simulator
    from shockwave_gym.traces import load_trace

    trace = load_trace("teaching-12", gpus=4)
    sim = Simulator(trace.jobs, SimConfig(gpus=4), trace_name=trace.name)
    agent = make_agent("fifo")
    agent.reset(sim.view, 0)
    for _ in range(12):
        sim.step(agent.act(sim.view))
    return trace, sim


def _everything_the_view_returns(view, job_id):
    """Every public property's value and every one-argument method's value for ``job_id``."""
    from shockwave_gym.view import OracleAccessError

    found = {}
    for name in dir(type(view)):
        if name.startswith("_"):
            continue
        attr = getattr(type(view), name)
        try:
            if isinstance(attr, property):
                found[name] = getattr(view, name)
            elif callable(attr) and len(inspect.signature(attr).parameters) == 2:
                found[name] = getattr(view, name)(job_id)
        except OracleAccessError:
            found[name] = "oracle-only"
    return found


def _flatten(value) -> list:
    if dataclasses.is_dataclass(value):
        return [getattr(value, f.name) for f in dataclasses.fields(value)]
    if isinstance(value, (tuple, list)):
        return list(value)
    return [value]


def test_no_public_path_from_the_view_returns_the_future():
    from shockwave_gym.profile import job_profile

    trace, sim = _view_mid_episode()
    view = sim.view
    # jobs whose batch size still changes after the epochs they have done
    changing = []
    for j in view.active_job_ids:
        future = job_profile(trace.jobs[j], view.throughputs).batch_sizes[int(view.epochs_done[j]):]
        if np.unique(future).size > 1:
            changing.append(int(j))
    assert changing, "the probe needs a job with batch-size changes ahead"
    for j in changing:
        spec = view.spec(j)
        assert not hasattr(spec, "duration_s") and not hasattr(spec, "batch_sizes")
        with pytest.raises(TypeError):  # the probe of the review: no profile from public facts
            job_profile(spec, view.throughputs)
        hidden = trace.jobs[j]
        schedule = np.asarray(job_profile(hidden, view.throughputs).batch_sizes)
        for name, value in _everything_the_view_returns(view, j).items():
            for item in _flatten(value):
                array = np.asarray(item) if not isinstance(item, str) else None
                if array is None or array.dtype == object:
                    continue
                if array.ndim >= 1 and array.size == schedule.size and schedule.size > 1:
                    assert not np.array_equal(array.ravel(), schedule), f"view.{name} returns job {j}'s schedule"
                if hidden.duration_s is not None and array.dtype.kind == "f":
                    assert not np.any(np.isclose(array, hidden.duration_s)), f"view.{name} returns the duration"
        assert _everything_the_view_returns(view, j)["batch_size_schedule"] == "oracle-only"
