"""The one list of resources: every router the app serves, in the order FastAPI tries them."""

from fastapi import APIRouter

from ..health import routes as health
from ..kit import Resource

# `make resource` adds a resource here and `make resource-remove` takes it out; the tests and the
# load test find every resource in this list.
RESOURCES: list[Resource] = [
]

# Resources first: FastAPI tries included routers in order, and the hot paths should not pay for
# matching the probes' router on every request.
ROUTERS: list[APIRouter] = [*(resource.router for resource in RESOURCES), health.router]
