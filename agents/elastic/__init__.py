"""Elastic baselines: schedulers that choose each job's GPU count (docs/SEMANTICS.md,
"Elastic jobs"). On a trace without elastic jobs each job's only count is its gang, so they
act as rigid schedulers there."""
