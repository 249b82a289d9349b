"""MST: maximum sum of throughputs over the Gavel round mechanism.

Rule: maximise ``sum_j thr_j x_j`` (raw iterations/s at each job's current batch size and
gang) subject to ``0 <= x_j <= 1`` and ``sum_j sf_j x_j <= G``. This is a fractional knapsack
on the density ``thr_j / sf_j``: classes of equal density are filled in descending order,
each job of a class that fits gets ``x = 1``, and the class at the margin is split equally
(``x = free GPUs / sum of its gangs``).

Heterogeneous form (Gavel's ``max_sum_throughput_perf`` over types; docs/HETEROGENEOUS.md):
maximise ``sum_{j,t} tput[j, t] X[j, t]`` subject to ``sum_j sf_j X[j, t] <= G_t``,
``sum_t X[j, t] <= 1``, ``0 <= X``, ``X[j, t] = 0`` where ``j`` cannot run on ``t``: an LP,
solved with HiGHS (scipy).

Source: the throughput-maximising policy of Gavel (Narayanan et al., OSDI '20). Authors'
policy key: ``max_sum_throughput_perf``.

Deliberate difference: the authors solve the LP with cvxpy/ECOS; with a tied marginal class
the optimum is degenerate and the solver's interior point splits it unevenly. The equal split
is exact otherwise and measured -0.7% avg JCT against the authors (docs/SEMANTICS.md). On our
simulator the closed form lands at +0.5% makespan / +2.5% avg JCT and the ECOS LP at -0.3% /
+2.2%: the residual comes from the simulator (batch-size changes at profile epochs rather
than the authors' late switch, docs/SEMANTICS.md R5), which moves raw rates and so MST's order.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.gavel.mechanism import GavelRoundAgent
from shockwave_agents.gavel.typed_lp import typed_blocks
from shockwave_gym.view import ClusterView


def max_throughput_allocation(throughput: np.ndarray, gang: np.ndarray, gpus: int) -> np.ndarray:
    """Fractional-knapsack optimum of ``max sum thr x`` with an equal split at the margin."""
    throughput = np.asarray(throughput, dtype=np.float64)
    gang = np.asarray(gang, dtype=np.float64)
    x = np.zeros(throughput.size)
    density = throughput / gang
    free = float(gpus)
    for value in np.unique(density)[::-1]:
        if free <= 0.0 or value <= 0.0:
            break
        members = density == value
        need = float(gang[members].sum())
        if need <= free:
            x[members] = 1.0
            free -= need
        else:
            x[members] = free / need
            free = 0.0
    return x


def hetero_max_throughput_allocation(throughput: np.ndarray, gang: np.ndarray, type_gpus: np.ndarray) -> np.ndarray:
    """``X`` (m, T) maximising ``sum tput X`` over types (module docstring); HiGHS LP."""
    from scipy.optimize import linprog

    throughput = np.asarray(throughput, dtype=np.float64)
    m, num_types = throughput.shape
    if m == 0:
        return np.zeros((0, num_types))
    capacity, rows, bounds = typed_blocks(throughput, np.asarray(gang, dtype=np.float64))
    result = linprog(-throughput.ravel(), A_ub=np.vstack([capacity, rows]),
                     b_ub=np.concatenate([np.asarray(type_gpus, dtype=np.float64), np.ones(m)]),
                     bounds=bounds, method="highs")
    if result.status != 0:
        raise RuntimeError(f"heterogeneous max-sum-throughput LP failed: {result.message}")
    return np.clip(result.x.reshape(m, num_types), 0.0, 1.0)


class MstAgent(GavelRoundAgent):
    """Throughput-maximising allocation (MST) turned into rounds by the shared mechanism."""

    name = "mst"

    def compute_typed_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        throughput = np.where(view.runnable[job_ids], view.throughput_by_type[job_ids], 0.0)
        return hetero_max_throughput_allocation(throughput, view.gang[job_ids], view.type_gpus)

    def compute_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        return max_throughput_allocation(view.current_throughput[job_ids], view.gang[job_ids], view.gpus)
