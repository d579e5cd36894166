"""create_app(settings): the FastAPI application and the lifespan that owns the database pool."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from fastapi import FastAPI

from . import __version__, health
from .{{ cookiecutter.resource_plural }} import routes as {{ cookiecutter.resource_plural }}
from .db import Database
from .errors import install_error_handlers
from .observability.logging import configure_logging
from .security import SecurityHeadersMiddleware
from .settings import Settings

APPLICATION_NAME = "{{ cookiecutter.project_slug }}"
logger = structlog.get_logger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    configure_logging(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.db = await Database.connect(settings, APPLICATION_NAME)
        logger.info("pool_opened", min_size=settings.pool_min_size, max_size=settings.pool_max_size)
        try:
            yield
        finally:
            await app.state.db.close()
            logger.info("pool_closed")

    app = FastAPI(
        title="{{ cookiecutter.project_name }}",
        description="{{ cookiecutter.description }}",
        version=__version__,
        lifespan=lifespan,
    )
    app.state.settings = settings
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router({{ cookiecutter.resource_plural }}.router)
    app.add_middleware(SecurityHeadersMiddleware)  # added last = outermost: on every response
    return app
