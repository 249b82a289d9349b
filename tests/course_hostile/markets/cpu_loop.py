"""An endless busy loop in the graded function."""


def nsw_allocation(instance):
    while True:
        pass
