"""Session fixtures of the template's tests: the default bake and one real PostgreSQL server."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from .baking import bake, load_module


@pytest.fixture(scope="session")
def default_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bake(tmp_path_factory.mktemp("default"))


@pytest.fixture(scope="session")
def postgres_url(default_project: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A throwaway PostgreSQL (the baked service's own helper) shared by every baked suite;
    each suite creates and drops a database of its own on it."""
    devdb = load_module(default_project, "inventory_service", "devdb")
    with devdb.ThrowawayPostgres(tmp_path_factory.mktemp("postgres") / "data") as server:
        yield server.url
