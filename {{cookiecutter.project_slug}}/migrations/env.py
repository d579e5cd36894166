"""Alembic runs the SQL migrations against DATABASE_URL through psycopg (deploy time only)."""

import os
from pathlib import Path

from alembic import context
from sqlalchemy import create_engine, pool


def _url() -> str:
    # The variable, else the file of a Secret mounted in SECRETS_DIR (the chart's migration Job).
    secret = Path(os.environ.get("SECRETS_DIR", "/run/secrets")) / "DATABASE_URL"
    url = os.environ.get("DATABASE_URL") or (secret.read_text().strip() if secret.is_file() else "")
    if not url:
        raise SystemExit(f"DATABASE_URL is not set, nor in {secret}: nothing to migrate")
    # The same URL the service uses, pointed at SQLAlchemy's psycopg 3 dialect.
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def run_migrations() -> None:
    if context.is_offline_mode():
        context.configure(url=_url(), literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, transactional_ddl=True)
        with context.begin_transaction():
            context.run_migrations()


run_migrations()
