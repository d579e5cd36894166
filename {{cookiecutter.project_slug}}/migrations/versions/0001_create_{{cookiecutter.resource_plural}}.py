"""Create the {{ cookiecutter.resource_plural }} table.

Revision ID: 0001
Revises:
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The primary key's b-tree is the one index every query needs: by-id reads and keyset pages
    # (WHERE id > $1 ORDER BY id). No other index until a query needs it: each one taxes writes.
    # The CHECKs repeat the API's limits so that no path around the API can store what it rejects.
    op.execute("""
        CREATE TABLE {{ cookiecutter.resource_plural }} (
            id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name        text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
            description text                 CHECK (char_length(description) <= 2000),
            price_cents bigint      NOT NULL CHECK (price_cents >= 0),
            quantity    integer     NOT NULL DEFAULT 0 CHECK (quantity >= 0),
            created_at  timestamptz NOT NULL DEFAULT now(),
            updated_at  timestamptz NOT NULL DEFAULT now(),
            version     integer     NOT NULL DEFAULT 1 CHECK (version >= 1)
        )
    """)


def downgrade() -> None:
    op.execute("DROP TABLE {{ cookiecutter.resource_plural }}")
