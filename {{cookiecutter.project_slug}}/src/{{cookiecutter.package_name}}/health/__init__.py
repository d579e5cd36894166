"""The probes: liveness and readiness."""
