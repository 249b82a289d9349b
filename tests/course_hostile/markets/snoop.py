"""Prints everything the process was started with: argv, environment, its command line."""
import os
import sys

import numpy as np

print("ARGV", sys.argv)
print("ENV", dict(os.environ))
with open("/proc/self/cmdline", "rb") as f:
    print("CMDLINE", f.read().replace(b"\0", b" ").decode())


def nsw_allocation(instance):
    print("INSTANCE", instance.name)
    share = instance.gpus * instance.rounds / instance.num_jobs
    return np.minimum(share / instance.gang, instance.cap)
