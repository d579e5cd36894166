"""Session fixtures of the template's tests: the default bake and one real PostgreSQL server."""

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .baking import bake, load_dev_module


@pytest.fixture(scope="session")
def default_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bake(tmp_path_factory.mktemp("default"))


@pytest.fixture(scope="session")
def postgres_url(default_project: Path) -> Iterator[str]:
    """A throwaway PostgreSQL (the baked service's own helper) shared by every baked suite;
    each suite creates and drops a database of its own on it.

    Its data lives outside pytest's temporary root, which any pytest session starting meanwhile
    resets to 0700: the server's own user could then no longer reach it to stop it.
    """
    devdb = load_dev_module(default_project, "devdb")
    folder = Path(tempfile.mkdtemp(prefix="template-pg-"))
    try:
        with devdb.ThrowawayPostgres(folder / "data") as server:
            yield server.url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def chart(default_project: Path) -> Path:
    """The default bake's Helm chart."""
    return default_project / "deploy" / "helm" / default_project.name
