"""K independent clusters simulated in one batched pass (the vector env's core).

* :mod:`~shockwave_gym.batch.bank` - the per-epoch arrays of the traces the clusters run,
  concatenated once per distinct trace;
* :mod:`~shockwave_gym.batch.rounds` - :class:`BatchSimulator`: the round rules (R1-R5) over
  padded (clusters x jobs) arrays (numba loops when installed, numpy otherwise);
* :mod:`~shockwave_gym.batch.jit` - the compiled (numba) loops of a round, optional;
* :mod:`~shockwave_gym.batch.sums` - row sums that add in exactly the order of a 1-D
  ``numpy.sum``, so batched reductions reproduce the single simulator bit for bit.

Every value is computed with the same float64 operations, in the same order, as
:class:`~shockwave_gym.simulator.Simulator` and :class:`~shockwave_gym.view.ClusterView` do for
one cluster; ``tests/test_env_vector.py`` compares them with ``np.array_equal``.
"""

from shockwave_gym.batch.bank import EpochBank
from shockwave_gym.batch.rounds import BatchSimulator
from shockwave_gym.batch.sums import pairwise_row_sums

__all__ = ["BatchSimulator", "EpochBank", "pairwise_row_sums"]
