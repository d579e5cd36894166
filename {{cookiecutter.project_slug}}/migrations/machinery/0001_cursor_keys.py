"""Create cursor_keys: the key signing sorted list pages' cursors, shared by every pod.

Machinery, not a resource (kit/cursor_keys.py). One row, made here once with a random key from
PostgreSQL's own generator: every pod of every release reads the same key at start-up, so a
cursor made by one pod holds on another and across restarts, with nothing to configure.
CURSOR_SECRET, when set, overrides it. `python -m <package> rotate-cursor-key` rotates it.

Revision ID: machinery_0001
Revises: 0000
"""

from alembic import op

revision = "machinery_0001"
down_revision = "0000"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # 32 bytes from two gen_random_uuid() (core PostgreSQL since 13, pg_strong_random, 244 random
    # bits): no pgcrypto needed. `previous_key` is the key before the last rotation, still accepted.
    op.execute("""
        CREATE TABLE cursor_keys (
            id           smallint    PRIMARY KEY CHECK (id = 1),
            signing_key  bytea       NOT NULL CHECK (length(signing_key) >= 32),
            previous_key bytea,
            rotated_at   timestamptz NOT NULL DEFAULT now()
        )
    """)
    op.execute("""
        INSERT INTO cursor_keys (id, signing_key)
        VALUES (1, decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'))
    """)


def downgrade() -> None:
    op.execute("DROP TABLE cursor_keys")
