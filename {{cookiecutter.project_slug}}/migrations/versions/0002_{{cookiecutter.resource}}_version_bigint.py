"""{{ cookiecutter.resource_plural }}.version becomes bigint: at integer's 2,147,483,647 a row could never be updated again.

Revision ID: 0002
Revises: 0001

The type change rewrites the table under an ACCESS EXCLUSIVE lock: on a large table, run it in a
maintenance window (or add a bigint column, backfill in batches and swap, for zero downtime).
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        ALTER TABLE {{ cookiecutter.resource_plural }}
              ALTER COLUMN version TYPE bigint
    """)


def downgrade() -> None:
    # Fails (numeric out of range) if any version has gone past integer: nothing is truncated.
    op.execute("""
        ALTER TABLE {{ cookiecutter.resource_plural }}
              ALTER COLUMN version TYPE integer
    """)
