"""The native vector env: K clusters in one batched pass (docs/VECTOR_ENV.md).

* :mod:`~shockwave_gym.env.vector.vector_env` - :class:`ClusterVectorEnv`, the Gymnasium
  ``VectorEnv`` behind every id's ``vector_entry_point``;
* :mod:`~shockwave_gym.env.vector.estimates` - predictor, rho-hat and features, batched;
* :mod:`~shockwave_gym.env.vector.slots` - the slot map, batched;
* :mod:`~shockwave_gym.env.vector.actions` and :mod:`~shockwave_gym.env.vector.packing` -
  the action modes and the packing rule, batched;
* :mod:`~shockwave_gym.env.vector.rewards` - the built-in rewards, batched.

The round rules themselves are the core's :mod:`shockwave_gym.batch`.
"""
