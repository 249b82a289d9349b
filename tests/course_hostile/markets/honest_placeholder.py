"""Honest: the student placeholder, an equal share (scores 0 on the task)."""
import numpy as np


def nsw_allocation(instance):
    share = instance.gpus * instance.rounds / instance.num_jobs
    return np.minimum(share / instance.gang, instance.cap)
