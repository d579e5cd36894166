"""Driving it: the service under test (started pinned, or found at --url) and its seed data, the
load engine and its client processes on their own HTTP/1.1 wire, wrk and k6 fed from the same
scenario table, and what the service says about each step from its /metrics (`evidence`)."""

from . import credentials, crosscheck, evidence, k6, postgres, service, wrk
from .engine import Engine, Step
from .evidence import describe
from .observe import Observer, moved

__all__ = [
    "Engine",
    "Observer",
    "Step",
    "credentials",
    "crosscheck",
    "describe",
    "evidence",
    "k6",
    "moved",
    "postgres",
    "service",
    "wrk",
]
