"""Where cells run: in this process, in a local process pool, or on a Ray cluster.

Every backend takes cells and yields ``(cell, record)`` pairs as cells finish, in
completion order; the caller stores each record as it arrives, so stopping early loses
only the cells still running. All backends run the same :func:`~.cells.run_cell`, so their
results are identical.

- ``process`` (default): a ``spawn`` process pool of ``workers`` processes (no threads or
  locks inherited from the caller); ``workers=1`` runs in this process. Workers die with
  the caller, even if it is killed with SIGKILL (:mod:`~.lifeline`).
- ``ray``: one Ray task per cell. Ray is an optional extra, imported only here. A local Ray
  is started with ``workers`` CPUs (and shut down afterwards) unless Ray is already
  initialised or ``RAY_ADDRESS`` names a cluster to join.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from shockwave_gym.errors import InputError, install_hint
from shockwave_gym.harness.cells import Cell, check_sendable, init_worker, run_cell
from shockwave_gym.harness.lifeline import die_with_parent

BACKENDS = ("process", "ray")

#: Worker processes when none are asked for: this project's machines have 2 cores.
DEFAULT_WORKERS = 2


def default_workers() -> int:
    return max(1, min(DEFAULT_WORKERS, os.cpu_count() or 1))


def run_cells(cells: Iterable[Cell], backend: str = "process", workers: int | None = None) -> Iterator[tuple[Cell, dict]]:
    """Run ``cells`` and yield ``(cell, record)`` as each finishes.

    A record with an ``"error"`` key is a cell whose agent raised. Closing the iterator
    (or an exception in the caller, such as ``KeyboardInterrupt``) cancels what has not
    finished.
    """
    cells = list(cells)
    if backend not in BACKENDS:
        raise InputError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if workers is not None and workers < 1:
        raise InputError(f"workers must be >= 1, got {workers}")
    workers = min(workers or default_workers(), max(1, len(cells)))
    if backend == "ray":
        return _ray(cells, workers)
    if workers == 1:
        return _serial(cells)
    for cell in cells:
        check_sendable(cell.agent)
    return _process_pool(cells, workers)


def _serial(cells: list[Cell]) -> Iterator[tuple[Cell, dict]]:
    for cell in cells:
        yield cell, run_cell(cell)


def _pool_worker_init(parent_pid: int) -> None:
    # A killed parent cannot stop its pool: the worker dies with it instead (no orphans).
    die_with_parent(parent_pid)
    # Ctrl-C reaches the whole process group; let only the parent react, and stop workers
    # itself, so that a half-finished cell never reports a spurious KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    init_worker()


def _process_pool(cells: list[Cell], workers: int) -> Iterator[tuple[Cell, dict]]:
    context = multiprocessing.get_context("spawn")
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                   initializer=_pool_worker_init, initargs=(os.getpid(),))
    finished = False
    try:
        pending = {executor.submit(run_cell, cell): cell for cell in cells}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                cell = pending.pop(future)
                error = future.exception()
                if error is not None:  # the worker process itself died
                    hint = ""
                    if isinstance(error, BrokenProcessPool):
                        hint = (" (in a script, call evaluate() under `if __name__ == \"__main__\":`"
                                " since workers are spawned processes that re-import it; or pass workers=1)")
                    raise RuntimeError(f"{cell.label}: worker failed: {error!r}{hint}") from error
                yield cell, future.result()
        finished = True
    finally:
        if not finished:
            # Stop running cells now rather than waiting for them (they are recomputed on
            # resume). ``_processes`` is the executor's only handle on its workers.
            for process in list((getattr(executor, "_processes", None) or {}).values()):
                process.terminate()
        executor.shutdown(wait=finished, cancel_futures=True)


def _run_cell_in_worker(cell: Cell) -> dict:
    init_worker()
    return run_cell(cell)


def _ray(cells: list[Cell], workers: int) -> Iterator[tuple[Cell, dict]]:
    try:
        import ray
    except ImportError:
        raise InputError(
            f"backend 'ray' needs Ray, the optional 'ray' extra: {install_hint('ray')}"
        ) from None
    started_here = not ray.is_initialized()
    if started_here:
        if os.environ.get("RAY_ADDRESS"):
            ray.init(log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    remote_run = ray.remote(num_cpus=1, max_retries=0)(_run_cell_in_worker)
    pending = {}
    try:
        pending = {remote_run.remote(cell): cell for cell in cells}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                cell = pending.pop(ref)
                yield cell, ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started_here:
            ray.shutdown()
