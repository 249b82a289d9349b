"""Training loops for learned schedulers: they need the env (RL) or a teacher agent
(imitation), so they live here, above both, not in the agent code that decides.

* :mod:`~shockwave_gym.training.workload` - training and held-out generated traces;
* :mod:`~shockwave_gym.training.train` - RL training with SB3 (``shockwave-gym train``);
* :mod:`~shockwave_gym.training.imitation` - behaviour cloning (+ DAgger) of a planner;
* :mod:`~shockwave_gym.training.progress` - the training monitor callback;
* :mod:`~shockwave_gym.training.evaluation` - a policy's figures on held-out traces.

The policies they produce are agents in :mod:`shockwave_agents.learned`. Importing this
package imports neither torch nor the env; the modules above do.
"""
