"""What the service knows of one resource: its router, its table and its declared fields.

Each resource package exposes one `RESOURCE`; serving/resources.py lists them, and the tests and
the load test find every resource there.
"""

from dataclasses import dataclass

from fastapi import APIRouter

from .models import Declared


@dataclass(frozen=True)
class Resource:
    router: APIRouter
    table: str
    fields: type[Declared]

    @property
    def prefix(self) -> str:
        return self.router.prefix
