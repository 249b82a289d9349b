"""Bundled traces, installed as the data package ``shockwave_gym.bundled_traces``.

This package holds data only: JSON-lines traces made by our generator. Load them by name
with :func:`shockwave_gym.traces.load_trace`; :data:`shockwave_gym.traces.BUNDLED_GPUS`
gives the cluster size each one is meant for, and ``README.md`` here lists the command that
regenerates each file.
"""
