"""`make perf-gate`: the working tree's service against a base revision's, side by side, on CPU
per request (`python -m loadtest.gate`; the comparison in compare.py, each side's preparation in
side.py, the figures and the verdict in figures.py)."""
