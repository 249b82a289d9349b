"""Episode prefetching: a worker process draws the next traces and builds their tables.

A cluster's reset draws a trace from its source with the cluster's own RNG, then builds the
trace's simulator and tables (:func:`trace_tables`). For sources that draw a fresh trace
from the RNG alone (:func:`prefetchable`), the sequence of traces a cluster will see is fixed
by the RNG's state, whatever the policy does. So one worker process draws each cluster's next
traces ahead, from a copy of the cluster's RNG, builds their tables, and hands them over in
order with the RNG's state after each draw; the env adopts that state, so its RNG ends
exactly where drawing in-process would have left it. The episodes, their order and every
number are the same as without the worker; only where the work runs changes (on a 2-core
machine, beside the main process's learning).

* **Protocol.** ``start(i, rng)`` (on a reset with a seed, or the first one) begins stream
  ``i`` from ``rng``'s state; :meth:`Prefetcher.take` returns the stream's next
  ``(trace, tables, rng_state)``, waiting for the worker if it is behind. The worker keeps at
  most ``depth`` prepared episodes per cluster beyond those taken. A later ``start`` of the
  same cluster discards what the worker prepared for the old stream (a generation counter
  tells them apart).
* **Errors.** An exception the worker meets drawing or building an episode is raised by the
  :meth:`take` that reaches that episode, as it would have been raised in-process.
* **Shutdown.** :meth:`close` (the env's ``close()``) stops the worker and waits for it
  (terminating it after a timeout); a finalizer does the same if the env is dropped unclosed,
  and multiprocessing terminates the daemonic worker at interpreter exit. The worker also
  exits on its own when its parent process is gone.
* **One core.** ``workers="auto"`` (the training default) starts the worker only when this
  process may run on at least two CPUs; otherwise episodes are built in-process, as without
  prefetching.
"""

from __future__ import annotations

import bisect
import mmap
import multiprocessing
import os
import pickle
import queue
import sys
import weakref
from collections import deque

#: Prepared episodes the worker keeps per cluster beyond those taken.
DEFAULT_DEPTH = 4
#: Seconds between the main process's checks that the worker is still alive while it waits.
_POLL_S = 1.0
#: Bytes of the shared memory the worker hands episodes over in (address space: only the
#: pages written are ever allocated); an episode that does not fit goes through the pipe.
ARENA_BYTES = 256 << 20
_ALIGN = 64


def trace_tables(trace, sim_config, throughputs, obs_version: int) -> tuple:
    """``(trace, simulator, predictor, type table)`` of one episode: what a cluster's reset
    builds for a new trace (in-process or in the worker; the same code either way). On a
    heterogeneous ``sim_config``, ``throughputs`` is the env's TypedThroughputs."""
    from shockwave_gym.hetero_simulator import HeteroSimulator
    from shockwave_gym.interface.observation import type_throughput_table
    from shockwave_gym.interface.predictor import RemainingTimePredictor
    from shockwave_gym.simulator import Simulator

    kind = HeteroSimulator if sim_config.heterogeneous else Simulator
    simulator = kind(trace.jobs, sim_config, throughputs, trace_name=trace.name)
    type_table = type_throughput_table(simulator.view) if obs_version == 2 else None
    return trace, simulator, RemainingTimePredictor(simulator.view), type_table


def prefetchable(source) -> bool:
    """Whether ``source`` draws a fresh trace from the RNG alone at every sample (no state of
    its own, no trace object shared between samples), so its samples can be drawn ahead in
    another process: a source whose own class declares ``fresh_samples = True`` (the
    generated sources, the training workload's), and a suite's train split without fixed
    levels."""
    from shockwave_gym.traces.suites import SuiteTraceSource

    if type(source).__dict__.get("fresh_samples") is True:
        return True
    return type(source) is SuiteTraceSource and source.split == "train" and source.train_levels is None


def available_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def want_worker(workers) -> bool:
    """``workers``: True / False, or ``"auto"`` (a worker when at least two CPUs are usable)."""
    if workers == "auto":
        return available_cpus() >= 2
    if isinstance(workers, bool):
        return workers
    from shockwave_gym.errors import InputError

    raise InputError(f"prefetch must be True, False or 'auto', got {workers!r}")


def _start_method() -> str:
    """``fork`` on Linux: the worker starts at once with this process's modules loaded, and
    never re-runs the main script (which ``spawn`` and ``forkserver`` do, breaking scripts
    without a ``__main__`` guard); it runs only numpy and Python code, none of the threads a
    fork does not copy. Elsewhere ``spawn`` (the platforms' safe default)."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


class Prefetcher:
    """One worker process preparing the next episodes of the clusters that use it."""

    def __init__(self, depth: int = DEFAULT_DEPTH):
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"prefetch depth must be an integer >= 1, got {depth!r}")
        self.depth = depth
        method = _start_method()
        context = multiprocessing.get_context(method)
        # requests go down a plain pipe (small messages, written at once: no feeder thread
        # in this process to compete for the GIL); episodes come back through a queue, whose
        # feeder thread in the worker keeps it from ever blocking on a full pipe
        self._requests_in, self._requests = context.Pipe(duplex=False)
        self._results = context.Queue()
        # anonymous shared memory, inherited by the forked worker (a pipe carries 64 KB at a
        # time, so a megabyte episode would cost both processes many wake-ups)
        self._arena = mmap.mmap(-1, ARENA_BYTES) if method == "fork" else None
        self._process = context.Process(target=_work, args=(self._requests_in, self._results, self._arena,
                                                            self._requests), name="shockwave-prefetch", daemon=True)
        self._process.start()
        self._requests_in.close()  # the worker's end
        self._generation: dict[int, int] = {}
        self._ready: dict[int, deque] = {}
        self._spec_ids: dict[int, int] = {}  # cluster -> id of its (source, config, ...) sent once
        self._spec_data: list[bytes] = []
        self._closed = False
        self._finalizer = weakref.finalize(self, _shutdown, self._process, self._requests, self._results, self._arena)

    @property
    def pid(self) -> int:
        return self._process.pid

    def start(self, i: int, rng, source, sim_config, throughputs, obs_version: int) -> None:
        """Begin cluster ``i``'s stream at ``rng``'s current state (``rng`` is not changed)."""
        self._check_open()
        spec = self._spec_ids.get(i)
        if spec is None:
            data = pickle.dumps((source, sim_config, throughputs, obs_version), protocol=pickle.HIGHEST_PROTOCOL)
            known = {self._spec_data[s]: s for s in self._spec_ids.values()} if self._spec_ids else {}
            spec = known.get(data)
            if spec is None:
                spec = len(self._spec_data)
                self._spec_data.append(data)
                self._send(("spec", spec, data))
            self._spec_ids[i] = spec
        generation = self._generation.get(i, 0) + 1
        self._generation[i] = generation
        for _, payload in self._ready.get(i, ()):  # the old stream's episodes, never taken
            self._release(payload)
        self._ready[i] = deque()
        self._send(("start", i, generation, pickle.dumps(rng, protocol=pickle.HIGHEST_PROTOCOL), spec, self.depth))

    def active(self, i: int) -> bool:
        return i in self._generation

    def take(self, i: int) -> tuple:
        """Cluster ``i``'s next ``(trace, tables, rng_state)``; raises what drawing it raised."""
        self._check_open()
        ready = self._ready[i]
        while not ready:
            try:
                message = self._results.get(timeout=_POLL_S)
            except queue.Empty:
                if not self._process.is_alive():
                    raise RuntimeError(f"the prefetch worker (pid {self._process.pid}) died "
                                       f"(exit code {self._process.exitcode})") from None
                continue
            kind, j, generation, payload = message
            if generation == self._generation.get(j):
                self._ready[j].append((kind, payload))
            else:
                self._release(payload)
        kind, payload = ready.popleft()
        offset = size = 0
        if isinstance(payload, tuple):  # (offset, size) in the arena: read it there, then free it
            offset, size = payload
            view = memoryview(self._arena)[offset : offset + size]
            try:
                result = pickle.loads(view)  # numpy arrays are copied out of the buffer
            finally:
                view.release()
        else:
            result = pickle.loads(payload)
        self._send(("more", i, self._generation[i], offset, size))
        if kind == "error":
            raise result
        return result

    def _release(self, payload) -> None:
        if isinstance(payload, tuple):
            self._send(("free", *payload))

    def _send(self, message) -> None:
        try:
            self._requests.send(message)
        except OSError as exc:  # the worker is gone
            raise RuntimeError(f"the prefetch worker (pid {self._process.pid}) died "
                               f"(exit code {self._process.exitcode})") from exc

    def close(self) -> None:
        """Stop the worker and wait for it (idempotent)."""
        if not self._closed:
            self._closed = True
            self._finalizer()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the prefetcher is closed")


def _shutdown(process, requests, results, arena) -> None:
    try:
        requests.send(("stop",))
    except (OSError, ValueError):
        pass
    process.join(timeout=5.0)
    if process.is_alive():
        process.terminate()
        process.join(timeout=5.0)
    requests.close()
    results.close()
    results.cancel_join_thread()  # nothing left to deliver: never block on a full pipe
    if arena is not None:
        arena.close()


class _Arena:
    """First-fit allocation of the shared memory, kept by the worker; the parent frees a
    block once it has copied the episode out."""

    def __init__(self, memory):
        self.memory = memory
        self.free = [(0, len(memory))]  # (offset, size), sorted, never adjacent

    def put(self, data: bytes):
        """``(offset, size)`` of a block holding ``data``, or None if none is large enough."""
        size = len(data)
        need = -(-size // _ALIGN) * _ALIGN
        for index, (offset, room) in enumerate(self.free):
            if room >= need:
                if room == need:
                    del self.free[index]
                else:
                    self.free[index] = (offset + need, room - need)
                self.memory[offset : offset + size] = data
                return offset, size
        return None

    def release(self, offset: int, size: int) -> None:
        need = -(-size // _ALIGN) * _ALIGN
        free = self.free
        index = bisect.bisect(free, (offset, 0))
        end = offset + need
        if index < len(free) and free[index][0] == end:  # merge with the next block
            end = free[index][0] + free[index][1]
            del free[index]
        if index > 0 and free[index - 1][0] + free[index - 1][1] == offset:  # and the previous
            offset = free[index - 1][0]
            index -= 1
            del free[index]
        free.insert(index, (offset, end - offset))


class _Stream:
    __slots__ = ("generation", "rng", "spec", "owed")

    def __init__(self, generation, rng, spec, owed):
        self.generation, self.rng, self.spec, self.owed = generation, rng, spec, owed


def _work(requests, results, memory=None, parent_end=None) -> None:
    """The worker's loop: read requests, then prepare one episode of the cluster owed the
    most (the lowest index on ties), until told to stop or the parent is gone."""
    results.cancel_join_thread()  # exit promptly even if the parent never reads the rest
    if parent_end is not None:
        parent_end.close()  # so that the parent's death ends the requests with EOF
    parent = multiprocessing.parent_process()
    streams: dict[int, _Stream] = {}
    specs: dict[int, tuple] = {}
    arena = _Arena(memory) if memory is not None else None

    def handle(message) -> bool:
        if message[0] == "stop":
            return False
        if message[0] == "spec":
            specs[message[1]] = pickle.loads(message[2])
        elif message[0] == "start":
            _, i, generation, rng, spec, depth = message
            streams[i] = _Stream(generation, pickle.loads(rng), specs[spec], depth)
        elif message[0] == "free":
            arena.release(*message[1:])
        else:  # "more": the parent took an episode (and freed its block, if any)
            _, i, generation, offset, size = message
            if size:
                arena.release(offset, size)
            stream = streams.get(i)
            if stream is not None and stream.generation == generation:
                stream.owed += 1
        return True

    while True:
        busy = any(s.owed > 0 for s in streams.values())
        try:
            if requests.poll(0 if busy else _POLL_S):
                while True:
                    if not handle(requests.recv()):
                        return
                    if not requests.poll(0):
                        break
            elif not busy and parent is not None and not parent.is_alive():
                return
        except (EOFError, OSError):  # the parent is gone
            return
        owed = [i for i, s in streams.items() if s.owed > 0]
        if not owed:
            continue
        i = max(owed, key=lambda j: (streams[j].owed, -j))
        stream = streams[i]
        stream.owed -= 1
        source, sim_config, throughputs, obs_version = stream.spec
        try:
            trace = source.sample(stream.rng)
            tables = trace_tables(trace, sim_config, throughputs, obs_version)
            payload = ("episode", pickle.dumps((trace, tables, stream.rng.bit_generator.state),
                                               protocol=pickle.HIGHEST_PROTOCOL))
        except Exception as exc:  # raised in the parent when it reaches this episode
            try:
                payload = ("error", pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL))
            except Exception:
                payload = ("error", pickle.dumps(RuntimeError(f"prefetch worker: {exc!r}")))
        kind, data = payload
        block = arena.put(data) if arena is not None and kind == "episode" else None
        results.put((kind, i, stream.generation, data if block is None else block))
