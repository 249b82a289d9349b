"""``evaluate``: the head-to-head harness as one Python call (the CLI's ``compare`` is a thin
wrapper around it)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from contextlib import closing, nullcontext
from pathlib import Path

import pandas as pd

from shockwave_gym.config import round_options
from shockwave_gym.errors import InputError
from shockwave_gym.harness.backends import run_cells
from shockwave_gym.harness.cells import Cell
from shockwave_gym.harness.grid import (
    AgentsArg,
    TracesArg,
    build_cells,
    resolve_agents,
    resolve_clusters,
    resolve_seeds,
    resolve_throughputs,
    resolve_traces,
)
from shockwave_gym.harness.progress import Progress
from shockwave_gym.harness.records import result_from_json
from shockwave_gym.harness.seeding import seed_free_labels, seeds_note
from shockwave_gym.harness.store import CellStore, DamagedRecord
from shockwave_gym.harness.summary import choose_reference, summarise, summary_markdown
from shockwave_gym.metrics import jobs_table
from shockwave_gym.throughput import ThroughputTable


class HarnessWarning(UserWarning):
    """Something the user should know about a run that still goes ahead: a damaged cell
    record (recomputed), or seeds that make no difference (run once)."""


class DamagedCellWarning(HarnessWarning):
    """A stored cell record that a resumed run does not trust (old schema, edited, out of
    range, damaged): it is recomputed; the message names its file."""


class OutputsNotWritten(OSError):
    """Every cell ran (``results`` holds their rows) but an output file could not be written
    (a full disk, a quota): the OS error, naming the file."""

    def __init__(self, error: OSError, results: pd.DataFrame):
        super().__init__(error.errno, error.strerror, error.filename)
        self.results = results


class CellsFailed(RuntimeError):
    """Some cells raised; the others were saved. ``errors`` maps cell label -> traceback;
    ``results`` holds the rows of the cells that finished."""

    def __init__(self, errors: dict[str, str], results: pd.DataFrame):
        self.errors, self.results = errors, results
        first_label, first_error = next(iter(errors.items()))
        super().__init__(
            f"{len(errors)} cell(s) failed ({', '.join(errors)}); finished cells were saved and "
            f"a re-run retries only the failed ones. First failure, {first_label}:\n{first_error}"
        )


def evaluate(
    agents: AgentsArg,
    traces: TracesArg,
    gpus: int | Mapping[str, int] | None = None,
    seeds: int | Iterable[int] = (0,),
    throughputs: str | Path | ThroughputTable | None = None,
    workers: int | None = None,
    out: str | Path | None = None,
    backend: str = "process",
    force: bool = False,
    reference: str = "shockwave",
    *,
    agent_options: Mapping[str, dict] | None = None,
    round_s: float | None = None,
    restart_overhead_s: float | None = None,
    restart_min_run_share: float | None = None,
    max_rounds: int | None = None,
    oracle: bool = False,
    figures: bool = True,
    gantt: tuple | None = None,
    progress: bool | None = None,
    command: str = "",
    cluster=None,
    regime=None,
) -> pd.DataFrame:
    """Run every agent x trace x seed cell and return one row per cell (all metrics).

    - ``agents``: ``"all"``, ``"fifo,gavel"``, a list of names / ``"module:factory"``
      paths, or a dict label -> name or factory. ``traces``: bundled names, paths or
      :class:`~shockwave_gym.traces.Trace` objects. ``gpus`` defaults per bundled trace.
      ``cluster`` (a :class:`~shockwave_gym.cluster.ClusterSpec` or ``"v100=12,p100=12,k80=12"``)
      runs every trace on that heterogeneous cluster (docs/HETEROGENEOUS.md), or a mapping
      trace name -> spec one per trace (absent or ``None``: the trace's default); a bundled
      heterogeneous trace uses its own cluster when neither is given.
    - ``agent_options`` maps an agent's label to keyword arguments for its factory (they
      extend and override a labelled spec's own options).
    - ``workers`` processes (default 2; 1 runs in this process) or ``backend="ray"``.
      ``progress``: ``None`` chooses from stderr (a live bar on a terminal, plain lines
      elsewhere), ``True`` plain lines, ``False`` nothing.
    - With ``out``, each finished cell is saved at once; a later call with the same
      inputs reuses saved cells (``force=True`` recomputes them), then writes
      ``results.csv``, ``jobs.csv``, ``summary.md`` and (``figures=True``) PNGs under
      ``out/figures/``. ``gantt=(agent, trace, seed)`` picks the Gantt cell (parts may be
      omitted); ``command`` (the command line that reproduces the run) is written in
      ``summary.md``. Without ``out`` nothing is written and nothing is reused.
    - A saved record is checked before it is reused; a damaged one is recomputed, with a
      :class:`HarnessWarning` naming its file. ``out`` is locked for the whole call: a
      second call on the same ``out`` while one runs raises
      :class:`~shockwave_gym.errors.InputError` naming the running process.
    - An agent whose decisions do not depend on the seed (:mod:`~.seeding`) runs the first
      seed only, with one :class:`HarnessWarning` naming those agents.
    - ``round_s``, ``restart_overhead_s``, ``restart_min_run_share``, ``max_rounds``: the
      round parameters (:class:`~shockwave_gym.config.SimConfig`); ``None`` keeps its default.
      ``oracle=True`` gives the agents views that show hidden future information
      (:class:`~shockwave_gym.view.ClusterView`; ablations only).
    - ``regime`` (:class:`~shockwave_gym.regimes.Regime`): what the agents may know of job
      lengths and which jobs end early (docs/SEMANTICS.md, "Information regimes"); ``None``
      is the default (exact lengths, no early endings), whose cells keep their keys. A mapping
      trace name -> regime gives one per trace (absent or ``None``: the default).
    - The result's ``attrs`` hold ``reference`` (the agent used for normalising: ``reference``
      if evaluated, else the first agent) and ``reference_note``.

    Raises :class:`~shockwave_gym.errors.InputError` for bad inputs before running
    anything, and :class:`CellsFailed` after the run if an agent raised in some cell.
    """
    rounds = round_options(round_s=round_s, restart_overhead_s=restart_overhead_s,
                           restart_min_run_share=restart_min_run_share, max_rounds=max_rounds)
    table = resolve_throughputs(throughputs)
    refs = resolve_agents(agents, agent_options)
    seed_list = resolve_seeds(seeds)
    if cluster is not None and gpus is None and not isinstance(cluster, Mapping):
        from shockwave_gym.cluster import ClusterSpec

        gpus = (cluster if isinstance(cluster, ClusterSpec) else ClusterSpec.parse(cluster)).total
    loaded = resolve_traces(traces, gpus, table)
    clusters = resolve_clusters(loaded, gpus, cluster)
    single_seed = seed_free_labels(refs) if len(seed_list) > 1 else []
    cells = build_cells(
        refs, loaded, seed_list, table, rounds=rounds, oracle=oracle, single_seed=single_seed,
        clusters=clusters, raw_throughputs=throughputs, regime=regime,
    )
    if gantt is not None:
        _gantt_cell(gantt, cells, refs[0].label, single_seed)  # fail on a bad choice before running
    store = CellStore(out) if out is not None else None
    with store.locked() if store is not None else nullcontext():
        if single_seed:
            note = seeds_note(single_seed, [trace.name for trace, _ in loaded], seed_list)
            warnings.warn(note, HarnessWarning, stacklevel=2)
        records = {} if store is None or force else _saved_records(store, cells)
        pending = sorted((c for c in cells if c.key_hash not in records), key=lambda c: -c.cost_hint)
        errors = _run(pending, records, store, backend, workers, progress, total=len(cells))
        run_now = {c.key_hash for c in pending if c.key_hash in records}  # recomputed ones included
        results = _finish(cells, refs, records, store, reference, figures, gantt, command, single_seed)
        results.attrs["run_now"] = run_now
    if errors:
        raise CellsFailed(errors, results)
    return results


def _saved_records(store: CellStore, cells: list[Cell]) -> dict[str, dict]:
    """Records of the cells saved in ``store``; a damaged one is left out (so it is
    recomputed) with a warning naming its file."""
    records = {}
    for cell in cells:
        try:
            record = store.load(cell)
        except DamagedRecord as damaged:
            warnings.warn(f"cell record {damaged.path} is not reused ({damaged.problem}); recomputing "
                          "that cell", DamagedCellWarning, stacklevel=3)
            continue
        if record is not None:
            records[cell.key_hash] = record
    return records


def _finish(cells: list[Cell], refs: list, records: dict, store: CellStore | None, reference: str,
            figures: bool, gantt: tuple | None, command: str, single_seed: list[str]) -> pd.DataFrame:
    """The results frame of the finished cells; with a store, also the tables and figures."""
    finished = [records[c.key_hash] for c in cells if c.key_hash in records]
    results = pd.DataFrame([record["row"] for record in finished])
    ref_name, note = choose_reference([r.label for r in refs], reference)
    results.attrs.update(reference=ref_name, reference_note=note)
    if store is not None and finished:
        try:
            _write_outputs(store, cells, records, results, ref_name, note, figures, gantt, command, single_seed)
        except OSError as exc:
            raise OutputsNotWritten(exc, results) from exc
    return results


def _run(pending: list[Cell], records: dict, store: CellStore | None, backend: str,
         workers: int | None, progress: bool | None, total: int) -> dict[str, str]:
    """Run ``pending`` cells, saving each record as it arrives; returns failures."""
    errors: dict[str, str] = {}
    with Progress(total, skipped=total - len(pending), enabled=progress) as bar:
        if store is not None and len(pending) < total:
            bar.note(f"resuming: {total - len(pending)} of {total} cells already saved in {store.out}; running {len(pending)}")
        if not pending:
            return errors
        many = "" if workers == 1 or len(pending) == 1 else " in parallel"
        bar.note(f"running {len(pending)} cell(s){many}, longest first (first: {pending[0].label}); "
                 "a line as each finishes")
        with closing(run_cells(pending, backend, workers)) as stream:
            for cell, record in stream:
                if "error" in record:
                    errors[cell.label] = record["error"]
                    bar.cell_done(cell.label, 0.0, failed=True)
                    continue
                if store is not None:
                    store.save(cell, record)
                records[cell.key_hash] = record
                bar.cell_done(cell.label, record["row"]["wall_s"])
    return errors


def _write_outputs(store: CellStore, cells: list[Cell], records: dict, results: pd.DataFrame,
                   reference: str, note: str, figures: bool, gantt: tuple | None, command: str,
                   single_seed: list[str]) -> None:
    finished = [c for c in cells if c.key_hash in records]
    episodes = {
        (c.trace.name, c.agent.label, c.seed): result_from_json(records[c.key_hash]["result"])
        for c in finished
    }
    jobs = pd.DataFrame([
        {"trace": trace, "agent": agent, "seed": seed, **row}
        for (trace, agent, seed), result in episodes.items() for row in jobs_table(result)
    ])
    store.write_text("results.csv", results.to_csv(index=False))
    store.write_text("jobs.csv", jobs.to_csv(index=False))
    summary = summarise(results, reference)
    store.write_text("summary.md", summary_markdown(summary, reference, note, command=command))
    if figures:
        from shockwave_gym.harness.figures import write_figures

        try:
            gantt_cell = _gantt_cell(gantt, finished, reference, single_seed)
        except InputError:  # the chosen cell failed (reported by CellsFailed): use the default
            gantt_cell = _gantt_cell(None, finished, reference)
        write_figures(results, jobs, summary, episodes, reference, store.out / "figures",
                      gantt_cell=gantt_cell)


def _gantt_cell(gantt: tuple | None, finished: list[Cell], reference: str,
                single_seed: Iterable[str] = ()) -> tuple[str, str, int]:
    """(trace, agent, seed) for the Gantt chart; unspecified parts default to the reference
    agent (or the first), the first trace and the first seed. Any seed names the one cell of
    an agent in ``single_seed``."""
    agent, trace, seed = (tuple(gantt or ()) + (None, None, None))[:3]
    agents = [c.agent.label for c in finished]
    agent = agent or (reference if reference in agents else agents[0])
    if agent in single_seed:
        seed = None
    for cell in finished:
        if cell.agent.label == agent and (trace is None or cell.trace.name == trace) and (seed is None or cell.seed == int(seed)):
            return cell.trace.name, agent, cell.seed
    raise InputError(f"gantt: no finished cell for agent={agent!r}, trace={trace!r}, seed={seed!r}")
