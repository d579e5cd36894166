"""What the lifespan opens, as a route sees it: one typed object and one dependency each.

The lifespan (serving/app.py) yields `{STATE_KEY: ServiceState(...)}` as Starlette's lifespan
state; the server copies that into every request's scope. A route asks for what it needs by type,
`database: DatabaseDep` or `settings: SettingsDep`, and a test swaps either with
`app.dependency_overrides[database] = ...` like any FastAPI dependency.
"""

from dataclasses import dataclass
from typing import {% if cookiecutter.auth == "jwt" %}TYPE_CHECKING, {% endif %}Annotated

from fastapi import Depends
from starlette.requests import Request

from ..db import Database
from ..settings import Settings
{%- if cookiecutter.auth == "jwt" %}

if TYPE_CHECKING:
    from .auth import TokenVerifier
{%- endif %}

STATE_KEY = "service"


@dataclass(frozen=True, slots=True)
class ServiceState:
    database: Database
    settings: Settings
{%- if cookiecutter.auth == "jwt" %}
    token_verifier: "TokenVerifier"
{%- endif %}


def service_state(request: Request) -> ServiceState:
    """The lifespan's state of the app serving this request."""
    state: ServiceState = request.scope["state"][STATE_KEY]
    return state


# async def: FastAPI runs a plain def dependency in its thread pool, a thread hop per request.
async def database(request: Request) -> Database:
    return service_state(request).database


async def settings(request: Request) -> Settings:
    return service_state(request).settings


DatabaseDep = Annotated[Database, Depends(database)]
SettingsDep = Annotated[Settings, Depends(settings)]
