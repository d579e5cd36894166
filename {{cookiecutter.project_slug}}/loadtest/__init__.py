"""The service's load tests: a knee test in Python (`make loadtest`) and a k6 script (`make k6`).

Both read one budget, `loadtest/budget.toml`. See `loadtest/README.md` for the method.
"""
