"""Re-ranking a relaxed plan: same rounds per job, heavily weighted jobs earlier.

:class:`Reranker` solves the re-ranking problem (:func:`.packing.rank_program`) of a schedule
by ``config.rank_method``:

- ``"mip"``: the binary program, warm-started from the greedy ranking
  (:func:`.packing.rank_greedily`), under ``rank_node_limit`` nodes;
- ``"local"`` (default): no integer program. The LP relaxation is solved, rounded to a feasible
  ranking (:func:`.rank_rounding.round_relaxation`) and improved by local search
  (:func:`.ranking.improve_ranking`, a bounded number of sweeps). The cost is polynomial in
  jobs and rounds (the LP solve takes a fraction of a second even at 2,000 jobs);
- ``"hybrid"``: ``"local"``, then the binary program warm-started from its result,
  but only when the LP bound does not already prove the local ranking within the program's
  gap (``rel_gap`` 1e-3, absolute 1e-6) and the program has at most
  ``rank_mip_max_columns`` columns; larger programs keep the local ranking.

Every solve stops on work limits (``config.rank_limits()``), so the ranking does not depend on
machine speed or load unless the opt-in ``rank_time_limit_s`` is set. Whichever way, the
ranking replaces the schedule only if it is feasible; otherwise (or if nothing can move) the
schedule is kept as it is.
"""

from __future__ import annotations

import time

import numpy as np

from shockwave_agents.shockwave.config import RANK_METHODS, ShockwaveConfig
from shockwave_agents.shockwave.packing import rank_greedily, rank_program
from shockwave_agents.shockwave.rank_rounding import round_relaxation
from shockwave_agents.shockwave.ranking import (
    RankTerms,
    improve_ranking,
    rank_terms,
    typed_rank_terms,
)
from shockwave_agents.shockwave.record import PlanRecord
from shockwave_agents.shockwave.results import SolveStatus


class Reranker:
    """Re-ranks schedules with one backend under one configuration."""

    def __init__(self, config: ShockwaveConfig, backend):
        self.config = config
        self.backend = backend

    def rank(self, instance, x: np.ndarray, log_weights: np.ndarray, record: PlanRecord) -> np.ndarray:
        """The re-ranked ``x`` (n, T) of ``instance``; ``x`` itself if nothing improves it."""
        if instance.typed:
            return self._rank_typed(instance, x, log_weights, record)
        t0 = time.perf_counter()
        round0_cost = None
        if self.config.restart_aware and instance.restart_loss_s is not None:
            round0_cost = instance.restart_loss_s / instance.round_s
        keep_round0 = bool(np.any(instance.loss_s > 0))
        terms = rank_terms(instance.gang, x, log_weights, instance.gpus, keep_round0=keep_round0, round0_cost=round0_cost)
        if terms is None:
            return x
        if self.config.rank_method == "mip":
            greedy = rank_greedily(instance.gang, x, log_weights, instance.gpus, keep_round0=terms.first == 1)
            block = self._solve(terms, (x if greedy is None else greedy)[terms.movable, terms.first:], record)
        else:
            block = self._local_then_polish(terms, x, record)
        record.rank_s += time.perf_counter() - t0
        if block is None:
            return x
        ranked = x.copy()
        ranked[terms.movable, terms.first:] = block
        return ranked

    def _rank_typed(self, instance, x: np.ndarray, log_weights: np.ndarray, record: PlanRecord) -> np.ndarray:
        """A typed plan (n, K, T) re-ranked type by type: on each type, the jobs planned on it
        alone move (same rounds on it, within its capacity in every round); jobs planned on
        several types keep their rounds. With ``restart_aware``, running in round 0 on a type
        other than the job's last costs its restart overhead as delay."""
        t0 = time.perf_counter()
        ranked = x.copy()
        on_types = x.any(axis=2)
        for k in range(instance.num_types):
            round0_cost = None
            if self.config.restart_aware and instance.restart_loss_s is not None:
                stay = instance.last_type == k if instance.last_type is not None else np.zeros(instance.num_jobs, bool)
                round0_cost = np.where(stay, 0.0, instance.restart_loss_s) / instance.round_s
            alone = on_types[:, k] & (on_types.sum(axis=1) == 1)
            terms = typed_rank_terms(instance.gang, ranked[:, k, :], alone, log_weights,
                                     int(instance.type_capacity[k]), round0_cost=round0_cost)
            if terms is None:
                continue
            if self.config.rank_method == "mip":
                block = self._solve(terms, ranked[terms.movable, k, terms.first:], record)
            else:
                block = self._local_then_polish(terms, ranked[:, k, :], record)
            if block is not None:
                ranked[terms.movable, k, terms.first:] = block
        record.rank_s += time.perf_counter() - t0
        return ranked

    def _local_then_polish(self, terms: RankTerms, x: np.ndarray, record: PlanRecord) -> np.ndarray:
        """The local ranking, polished by the binary program when ``hybrid`` asks for it."""
        relaxation = self.backend.solve(rank_program(terms, relaxed=True), limits=self.config.rank_limits())
        if relaxation.fallback_reason is not None:
            record.solver_fallbacks += 1
        start = x[terms.movable, terms.first:]
        if relaxation.has_solution:
            rounded = round_relaxation(terms, relaxation.vector.reshape(start.shape))
            start = start if rounded is None else rounded
        block = improve_ranking(terms, start)
        record.rank_source = "local"
        record.rank_status = SolveStatus.FEASIBLE
        if self.config.rank_method == "local" or terms.cost.size > self.config.rank_mip_max_columns:
            return block
        if relaxation.has_solution and self._proven(terms, block, relaxation.objective):
            return block
        polished = self._solve(terms, block, record)
        return block if polished is None else polished

    @staticmethod
    def _proven(terms: RankTerms, block: np.ndarray, lp_objective: float) -> bool:
        """True if the LP bound proves ``block`` within the program's gap (normalised units;
        the backend reports the relaxation's cost in the instance's units, ``top`` times more)."""
        value = terms.objective(block)
        bound = lp_objective / terms.top
        return value - bound <= max(1e-6, 1e-3 * abs(value))

    def _solve(self, terms: RankTerms, start: np.ndarray, record: PlanRecord) -> np.ndarray | None:
        """The binary program's ranking, warm-started from ``start``; None if it failed."""
        program = rank_program(terms)
        warm = start.astype(np.float64).ravel()
        result = self.backend.solve(program, limits=self.config.rank_limits(), warm_start=warm)
        record.rank_status = result.status
        if result.fallback_reason is not None:
            record.solver_fallbacks += 1
        if not result.has_solution:
            if result.status != SolveStatus.NO_SOLUTION:
                record.warnings.append(f"re-ranking failed ({result.message}); keeping the solver's order")
            return None
        record.rank_source = "mip"
        return result.vector.reshape(terms.cost.shape) > 0.5


__all__ = ["RANK_METHODS", "Reranker"]
