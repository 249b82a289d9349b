"""The native vector env: K clusters in one batched pass (docs/VECTOR_ENV.md).

* :mod:`~shockwave_gym.env.vector.vector_env` - :class:`ClusterVectorEnv`, the Gymnasium
  ``VectorEnv`` behind every id's ``vector_entry_point``;
* :mod:`~shockwave_gym.env.vector.estimates` - predictor, rho-hat and features, batched;
* :mod:`~shockwave_gym.env.vector.slots` - the slot map, batched;
* :mod:`~shockwave_gym.env.vector.actions` - the action modes' checks and masks, and the
  ``sequential`` mode's picks, batched;
* :mod:`~shockwave_gym.env.vector.fused`, :mod:`~shockwave_gym.env.vector.jit` - the compiled
  kernels of a step (decode, rounds, rewards, seating, estimates, features) over one state
  struct (:mod:`~shockwave_gym.env.vector.state`);
* :mod:`~shockwave_gym.env.vector.single` - the single env's step on those kernels, at K = 1.

The round rules themselves are the core's :mod:`shockwave_gym.batch`.
"""
