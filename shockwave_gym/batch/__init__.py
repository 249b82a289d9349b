"""K independent clusters simulated together (the vector env's core, and the single env's
compiled step at K = 1).

* :mod:`~shockwave_gym.batch.bank` - the per-epoch arrays of the traces the clusters run,
  concatenated once per distinct trace;
* :mod:`~shockwave_gym.batch.rounds` - :class:`BatchSimulator`: the clusters' padded
  (clusters x jobs) arrays, by name (:class:`~shockwave_gym.batch.rounds.SimArrays`);
* :mod:`~shockwave_gym.batch.jit` - the round rules compiled (numba), and the state struct the
  kernels take.
* :mod:`~shockwave_gym.batch.elastic` - the elastic simulator's rounds (one GPU type) on the
  compiled round rules, for the single env.

Every value is computed with the same float64 operations, in the same order, as
:class:`~shockwave_gym.simulator.Simulator` and :class:`~shockwave_gym.view.ClusterView` do for
one cluster; ``tests/test_kernels_reference.py`` compares them bit for bit.
"""

from shockwave_gym.batch.bank import EpochBank
from shockwave_gym.batch.rounds import BatchSimulator

__all__ = ["BatchSimulator", "EpochBank"]
