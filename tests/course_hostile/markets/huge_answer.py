"""Returns a 10**7-element answer and prints a lot."""
import numpy as np


def nsw_allocation(instance):
    print("x" * 100000)
    return np.zeros(10**7)
