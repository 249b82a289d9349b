"""The grading child: the one process that runs a course submission (docs/COURSE.md, "Isolation").

The grader starts ``python -I child.py`` afresh for every submission (never a fork of the
grader) and writes one request on its stdin: the lab, the submission's code, the instances to
solve as plain data, and the limits. Nothing private travels: no seed, no case name, no
baseline figure, no reference answer. The child

1. sets its own resource limits (address space, CPU seconds, file size, no core files);
2. installs an import guard (:class:`ImportGuard`) before importing anything of the package:
   modules a submission of this lab may not use (the course's grading code everywhere, and the
   package's answer to the lab, e.g. the remaining-time predictor in lab 1) load as stand-ins
   whose every use raises :class:`RefusedAccess` and is recorded; an oracle view of the
   simulator is refused the same way;
3. runs the submission, asks its entry point for *answers* (an agent's choices each round, an
   estimate per job, an allocation per instance), and writes them, with the refused uses, as
   one JSON document on the result descriptor the grader opened for it; then ends at once.

The grader replays and scores those answers itself. A submission shares this process, so it
can write on that descriptor too: it can only hand in other answers, which are graded like
any others. The same answer functions run in-process for a notebook's self-check.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from dataclasses import asdict, dataclass

import numpy as np

if __name__ == "__main__":  # the child's script: the course package is denied, so load the guards by path
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "shockwave_grading_guard", os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard.py"))
    _guards = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_guards)
    ImportGuard, RefusedAccess, install_audit_hook = _guards.ImportGuard, _guards.RefusedAccess, _guards.install_audit_hook
else:
    from shockwave_gym.course.guard import ImportGuard, RefusedAccess, install_audit_hook  # noqa: F401

#: Modules no submission may import, and those each lab adds (its answer, and what reaches it).
DENIED_ALWAYS = ("shockwave_gym.course", "shockwave_gym.cli", "shockwave_gym.harness", "shockwave_gym.training",
                 "_posixsubprocess")
_AGENTS = ("shockwave_agents.shockwave", "shockwave_agents.gavel", "shockwave_agents.learned")
DENIED = {
    "adaptation": DENIED_ALWAYS + _AGENTS + (
        "shockwave_gym.interface.predictor", "shockwave_gym.interface.ftf", "shockwave_gym.interface.observation",
        "shockwave_gym.env"),
    "fairness": DENIED_ALWAYS + _AGENTS,
    "markets": DENIED_ALWAYS + _AGENTS,
}
#: The most values of one answer the child sends back (a bigger array is reported by shape only).
MAX_VALUES = 100_000


def describe_exception(exc: BaseException) -> str:
    """``"NameError: name 'cp' is not defined"``, with a hint where the usual cause is known;
    safe for any exception (one whose ``__str__`` raises, a ``BaseException`` subclass)."""
    try:
        name = str(type(exc).__name__)
    except BaseException:  # noqa: BLE001 - a hostile exception class
        name = "an exception"
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001
        message = "(its message could not be shown: __str__ raised)"
    text = f"{name}: {message}"[:400]
    if isinstance(exc, NameError):
        text += " (the grader runs only the cells tagged 'graded': import or define it there)"
    return text


class LoadError(Exception):
    """The submission could not be compiled or run, or lacks its entry point; the message names
    the origin and line."""


def run_module(code: str, origin: str) -> dict:
    """Run ``code`` as a module named ``submission``; its namespace, or :class:`LoadError`."""
    try:
        compiled = compile(code, origin, "exec")
    except SyntaxError as exc:
        raise LoadError(f"{origin}:{exc.lineno}: syntax error: {exc.msg}") from None
    except BaseException as exc:  # noqa: BLE001 - e.g. null bytes, recursion in the parser
        raise LoadError(f"{origin}: cannot compile: {describe_exception(exc)}") from None
    namespace = {"__name__": "submission"}
    try:
        exec(compiled, namespace)  # noqa: S102 - running the student's code is the point
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt ... are the submission's failure
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == origin]
        where = f" (line {frames[-1].lineno})" if frames else ""
        raise LoadError(f"{origin}{where}: running the submission raised {describe_exception(exc)}") from None
    return namespace


def entry_of(namespace: dict, origin: str, entry: str, kind: str):
    """The submission's ``entry`` (``kind``: "a function", "an Agent class"), or :class:`LoadError`."""
    if entry not in namespace:
        raise LoadError(f"{origin}: defines no {entry!r} ({kind} the lab asks for)")
    value = namespace[entry]
    if not callable(value):
        raise LoadError(f"{origin}: {entry!r} must be {kind}, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class MarketInstance:
    """One planning window of lab 3 (see :mod:`shockwave_gym.course.lab_markets`)."""

    name: str
    gpus: int
    rounds: int
    gang: np.ndarray
    rate: np.ndarray
    done: np.ndarray
    total: np.ndarray

    @property
    def num_jobs(self) -> int:
        return int(self.gang.size)

    @property
    def cap(self) -> np.ndarray:
        """The most rounds each job can use: the window, or what finishes it."""
        return np.minimum(self.rounds, (self.total - self.done) / self.rate)

    def utility(self, x) -> np.ndarray:
        return (self.done + self.rate * np.asarray(x, dtype=float)) / self.total

    def data(self) -> dict:
        """The instance as plain data (what the child receives)."""
        return {"gpus": self.gpus, "rounds": self.rounds, **{key: getattr(self, key).tolist()
                                                                for key in ("gang", "rate", "done", "total")}}


def _instance(index: int, data: dict) -> MarketInstance:
    arrays = {key: np.asarray(data[key], dtype=float) for key in ("gang", "rate", "done", "total")}
    return MarketInstance(f"instance-{index + 1}", int(data["gpus"]), int(data["rounds"]), **arrays)


def _array_answer(values) -> dict:
    array = np.asarray(values, dtype=float)
    flat = array.ravel()
    return {"shape": list(array.shape), "values": flat.tolist() if flat.size <= MAX_VALUES else None}


def markets_answers(nsw_allocation, payload: list[dict]) -> dict:
    """Lab 3: the allocation of every instance, until the first that raises."""
    answers = []
    for index, data in enumerate(payload):
        try:
            answers.append(_array_answer(nsw_allocation(_instance(index, data))))
        except BaseException as exc:  # noqa: BLE001 - the student's function raised
            return {"answers": answers, "problem": {"case": index, "text": f"nsw_allocation raised {describe_exception(exc)}"}}
    return {"answers": answers, "problem": None}


def _trace(index: int, data: dict):
    from shockwave_gym.jobs import JobSpec
    from shockwave_gym.traces import Trace

    return Trace(f"case-{index + 1}", tuple(JobSpec(**job) for job in data["jobs"]))


def trace_data(trace, gpus: int) -> dict:
    """A grading case as plain data: its jobs and cluster size (no name: it may hold a seed)."""
    return {"jobs": [asdict(job) for job in trace.jobs], "gpus": int(gpus)}


def agent_answers(make, payload: list[dict]) -> dict:
    """The choices of the agents from ``make`` on every case, as ``check_agent`` accepted
    them, until the first case it does not accept."""
    from shockwave_gym.testing.agent import AgentCheckError, check_agent

    choices = []
    for index, data in enumerate(payload):
        try:
            choices.append([list(c) for c in check_agent(make, _trace(index, data), gpus=data["gpus"]).choices])
        except AgentCheckError as exc:
            return {"choices": choices, "problem": {"case": index, "text": str(exc)}}
        except BaseException as exc:  # noqa: BLE001 - the student's code raised: a broken rule
            return {"choices": choices, "problem": {"case": index, "text": f"the agent raised {describe_exception(exc)}"}}
    return {"choices": choices, "problem": None}


class BadEstimate(ValueError):
    """The estimate returned something that is not seconds per job."""


def checked_estimate(values, view) -> np.ndarray:
    """``values`` as seconds per job, or :class:`BadEstimate` naming the round and job."""
    where = f"round {view.round_index}"
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise BadEstimate(f"{where}: returned {type(values).__name__}, not an array of numbers") from None
    if array.shape != (view.num_jobs,):
        raise BadEstimate(f"{where}: expected shape ({view.num_jobs},), got {array.shape}")
    active = view.active_job_ids
    bad = active[~(np.isfinite(array[active]) & (array[active] >= 0))]
    if bad.size:
        raise BadEstimate(f"{where}: job {bad[0]}'s estimate is {float(array[bad[0]])!r}; estimates of active jobs "
                          "must be finite and >= 0")
    return array


def arrival_estimates(estimate, index: int, data: dict) -> list[float]:
    """Lab 1: every job's estimate in the first round it is active, along the given FIFO
    choices; the estimate is checked in every round."""
    from shockwave_gym.config import SimConfig
    from shockwave_gym.simulator import Simulator

    sim = Simulator(_trace(index, data).jobs, SimConfig(gpus=data["gpus"]))
    view, at_arrival = sim.view, [0.0] * sim.num_jobs
    seen = np.zeros(sim.num_jobs, dtype=bool)
    for choice in data["fifo"]:
        values = checked_estimate(estimate(view), view)
        new = view.active_job_ids[~seen[view.active_job_ids]]
        seen[new] = True
        for job in new.tolist():
            at_arrival[job] = float(values[job])
        sim.step(choice)
    return at_arrival


def adaptation_answers(estimate, payload: list[dict]) -> dict:
    """Lab 1: the estimates at arrival on every case, then SRTF's choices on the estimate."""
    from shockwave_agents.srtf import SrtfAgent

    arrivals = []
    for index, data in enumerate(payload):
        try:
            arrivals.append(arrival_estimates(estimate, index, data))
        except BadEstimate as exc:
            return {"arrivals": arrivals, "problem": {"case": index, "text": str(exc)}, "srtf": None}
        except BaseException as exc:  # noqa: BLE001 - the student's function raised
            return {"arrivals": arrivals, "problem": {"case": None, "text": f"the estimate raised {describe_exception(exc)}"},
                    "srtf": None}
    return {"arrivals": arrivals, "problem": None, "srtf": agent_answers(lambda: SrtfAgent(estimate=estimate), payload)}


ANSWERS = {"adaptation": adaptation_answers, "fairness": agent_answers, "markets": markets_answers}


def answers(lab_key: str, entry, payload: list[dict]) -> dict:
    """The answers of ``entry`` to lab ``lab_key`` on ``payload``, as JSON data."""
    return json.loads(json.dumps(ANSWERS[lab_key](entry, payload)))


def _limit(limits: dict) -> None:
    import resource

    memory = int(limits["memory_mb"]) * 1024 * 1024
    for which, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, int(limits["cpu_s"])),
                         (resource.RLIMIT_FSIZE, int(limits["file_mb"]) * 1024 * 1024), (resource.RLIMIT_CORE, 0)):
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value if which != resource.RLIMIT_CPU else hard))


def _refuse_oracle(guard: ImportGuard) -> None:
    from shockwave_gym.view import ClusterView, OracleAccessError

    def require_oracle(view, what: str) -> None:
        if guard.armed:
            guard.refused.append(f"ClusterView(oracle=True).{what}")
        raise OracleAccessError(f"{what}: the simulator's oracle is not available to a submission")

    ClusterView._require_oracle = require_oracle


def denied_paths(modules) -> list[str]:
    """The files of the ``modules`` (and their bytecode caches), as path prefixes."""
    import shockwave_agents.base
    import shockwave_gym.view

    roots = {name: os.path.dirname(os.path.abspath(module.__file__))
             for name, module in (("shockwave_gym", shockwave_gym.view), ("shockwave_agents", shockwave_agents.base))}
    paths = []
    for module in modules:
        top, *rest = module.split(".")
        if top in roots and rest:
            paths.append(os.path.join(roots[top], *rest))
            paths.append(os.path.join(roots[top], *rest[:-1], "__pycache__", rest[-1]))
    return paths


def _send(fd: int, document: dict) -> None:
    data = json.dumps(document).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)


def main() -> None:
    """Read the request on stdin, run the submission, write the answers on the result descriptor."""
    request = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    os.close(0)
    _limit(request["limits"])
    fd = int(request["result_fd"])
    os.set_inheritable(fd, False)
    sys.dont_write_bytecode = True
    guard = ImportGuard(DENIED[request["lab"]])
    sys.meta_path.insert(0, guard)
    import shockwave_agents.base  # noqa: F401 - the public API, loaded before the guard is armed
    import shockwave_agents.srtf  # noqa: F401
    import shockwave_gym.interface  # noqa: F401
    import shockwave_gym.testing.agent  # noqa: F401

    _refuse_oracle(guard)
    import _posixsubprocess  # starts processes without an audit event: if it was loaded already, disarm it
    import subprocess  # noqa: F401 - so that _posixsubprocess is a stand-in before the guard is armed

    _posixsubprocess.__dict__.pop("fork_exec", None)
    document = {"load_error": None, "answers": None, "refused": guard.refused}
    guard.armed = True
    here = os.path.dirname(os.path.abspath(__file__))
    install_audit_hook(guard, os.getcwd(), denied_paths(guard.denied) + list(request["deny_paths"]),
                       allowed_paths=[os.path.join(here, "child.py"), os.path.join(here, "guard.py")])
    try:
        namespace = run_module(request["code"], request["origin"])
        entry = entry_of(namespace, request["origin"], request["entry"], request["kind"])
        document["answers"] = ANSWERS[request["lab"]](entry, request["payload"])
    except LoadError as exc:
        document["load_error"] = str(exc)
    guard.armed = False
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a submission may have replaced or closed it
            pass
    _send(fd, document)
    os._exit(0)


if __name__ == "__main__":
    main()
