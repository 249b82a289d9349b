"""Allocates 3 GB."""
hog = bytearray(3 * 1024**3)


def nsw_allocation(instance):
    return [0.0] * instance.num_jobs
