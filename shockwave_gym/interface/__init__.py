"""The interface layer: what both the env and agents may use to read a view and to act.

It sits on the agents' side of the information boundary (it reads only the read-only
:class:`~shockwave_gym.view.ClusterView`) and below both the env and the agents:

* :mod:`~shockwave_gym.interface.predictor` - the remaining-time predictor;
* :mod:`~shockwave_gym.interface.lengths` - length beliefs by information regime, Gittins index;
* :mod:`~shockwave_gym.interface.ftf` - finish-time-fairness estimates;
* :mod:`~shockwave_gym.interface.slots` - the slot map of fixed-size observations;
* :mod:`~shockwave_gym.interface.observation` - observation features and builder
  (:mod:`~shockwave_gym.interface.length_features`: version 3's length-belief features);
* :mod:`~shockwave_gym.interface.actions` - the action modes' decoding;
* :mod:`~shockwave_gym.interface.packing` - the one packing rule;
* :mod:`~shockwave_gym.interface.placement` - packing and fair shares on a heterogeneous cluster.

Nothing here imports gymnasium at module level (spaces are built on request).
"""

from shockwave_gym.interface.ftf import contention, ftf_estimate
from shockwave_gym.interface.lengths import (
    LengthBelief,
    believed_total_epochs,
    expected_epochs_left,
    expected_future_epochs,
    expected_total_epochs,
    gittins_index_per_epoch,
    length_belief,
)
from shockwave_gym.interface.packing import pack_in_order
from shockwave_gym.interface.placement import (
    equal_share_fractions,
    equal_share_throughput,
    pack_for_cluster,
    pack_typed_in_order,
)
from shockwave_gym.interface.predictor import (
    RemainingTimePredictor,
    predicted_remaining_s,
    predictor_for,
)
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.placement import Placement

__all__ = [
    "LengthBelief",
    "believed_total_epochs",
    "expected_epochs_left",
    "expected_future_epochs",
    "expected_total_epochs",
    "gittins_index_per_epoch",
    "length_belief",
    "RemainingTimePredictor",
    "Placement",
    "SlotMap",
    "contention",
    "ftf_estimate",
    "equal_share_fractions",
    "equal_share_throughput",
    "pack_for_cluster",
    "pack_in_order",
    "pack_typed_in_order",
    "predicted_remaining_s",
    "predictor_for",
]
