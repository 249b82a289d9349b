"""The action-mode factory: the plain modes (:mod:`~shockwave_gym.interface.actions`) on a
homogeneous cluster, their typed variants (:mod:`~shockwave_gym.interface.typed_actions`) on a
heterogeneous one. Its own module so that neither of those two imports the other back."""

from __future__ import annotations

from shockwave_gym.errors import InputError
from shockwave_gym.interface.actions import ACTION_MODES, PriorityMode, SelectMode, SequentialMode
from shockwave_gym.interface.elastic_actions import ELASTIC_MODES
from shockwave_gym.interface.typed_actions import TYPED_MODES
from shockwave_gym.jobs import GANG_SIZES

__all__ = ["ACTION_MODES", "make_action_mode"]


def make_action_mode(name: str, max_jobs: int, *, idle_allowed: bool = True, cluster=None, elastic: bool = False):
    """The action-mode object for ``name`` (one of :data:`ACTION_MODES`); ``idle_allowed``
    is the sequential mode's option (see :class:`SequentialMode`). Given a heterogeneous
    ``cluster`` (a ClusterSpec), its typed variant (:mod:`~shockwave_gym.interface.typed_actions`);
    with ``elastic``, its variant with a GPU configuration (type, count) per job
    (:mod:`~shockwave_gym.interface.elastic_actions`, on one type or on ``cluster``'s types)."""
    modes = {"select": SelectMode, "priority": PriorityMode, "sequential": SequentialMode}
    if name not in modes:
        raise InputError(f"unknown action_mode {name!r}; choose one of {', '.join(ACTION_MODES)}")
    if elastic:
        extra = {"idle_allowed": idle_allowed} if name == "sequential" else {}
        return ELASTIC_MODES[name](max_jobs, len(GANG_SIZES), 1 if cluster is None else cluster.num_types, **extra)
    if cluster is not None:
        if name == "sequential":
            return TYPED_MODES[name](max_jobs, cluster.num_types, idle_allowed=idle_allowed)
        return TYPED_MODES[name](max_jobs, cluster.num_types)
    if name == "sequential":
        return SequentialMode(max_jobs, idle_allowed=idle_allowed)
    return modes[name](max_jobs)
