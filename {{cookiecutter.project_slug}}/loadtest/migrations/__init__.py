"""`make migrate-under-load`: the service driven at its serving rate while `make migrate` applies
one revision after another, each a kind a schema change is made of (phases.py), and what the
service's clients saw during each (run.py): failed requests, p99, how the migration ended.
"""
