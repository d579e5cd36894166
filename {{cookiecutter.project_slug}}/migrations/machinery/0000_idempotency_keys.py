"""Create the idempotency_keys table: the stored answers of creates sent with an Idempotency-Key.

Machinery, not a resource: every resource's create writes here (kit/idempotency.py). The
machinery's revisions are a branch of their own in migrations/machinery/ (alembic.ini), so one the
template adds later applies on a database already at the resources' head (`alembic upgrade heads`).

Revision ID: 0000
Revises:
"""

from alembic import op

revision = "0000"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    # One row per (client, key), written in the transaction of the create it answers. The
    # expires_at index serves the lifespan's sweep (small batches of expired rows).
    op.execute("""
        CREATE TABLE idempotency_keys (
            client        text        NOT NULL,
            key           text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
            fingerprint   bytea       NOT NULL,
            status        smallint    NOT NULL,
            location      text,
            etag          text,
            content_type  text,
            body          bytea       NOT NULL,
            created_at    timestamptz NOT NULL DEFAULT now(),
            expires_at    timestamptz NOT NULL,
            PRIMARY KEY (client, key)
        )
    """)
    op.execute("CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at)")


def downgrade() -> None:
    op.execute("DROP TABLE idempotency_keys")
