"""The one list of resources: every router the app serves, in the order FastAPI tries them."""

from fastapi import APIRouter

from ..health import routes as health
from ..{{ cookiecutter.resource_plural }} import routes as {{ cookiecutter.resource_plural }}

# Resources first: FastAPI tries included routers in order, and the hot paths should not pay for
# matching the probes' router on every request.
ROUTERS: list[APIRouter] = [
    {{ cookiecutter.resource_plural }}.router,
    health.router,
]
