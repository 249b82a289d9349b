"""Recursion past the C stack."""
import sys

sys.setrecursionlimit(10**7)


def nsw_allocation(instance, depth=0):
    return nsw_allocation(instance, depth + 1)
