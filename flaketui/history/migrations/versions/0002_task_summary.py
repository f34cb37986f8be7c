"""task_summary: each task's lifecycle evidence, folded over its runs (backfilled from task_results)."""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    op.create_table(
        "task_summary",
        sa.Column("task_id", sa.Integer, sa.ForeignKey("tasks.id"), primary_key=True),
        sa.Column("runs_seen", sa.Integer, nullable=False),
        sa.Column("first_flaky", sa.Integer, nullable=False),
        sa.Column("last_flaky", sa.Integer, nullable=False),
        sa.Column("last_bad", sa.Integer, nullable=False),
        sa.Column("clean_since", sa.BigInteger, nullable=False),
        sa.Column("max_gap", sa.BigInteger, nullable=False),
        sa.Column("last_run", sa.Integer, nullable=False),
    )
    from flaketui.history.store import rebuild_summary

    # The columns this revision has (later ones add more, and backfill them).
    rebuild_summary(op.get_bind(), ("runs_seen", "first_flaky", "last_flaky", "last_bad", "clean_since",
                                    "max_gap", "last_run"))


def downgrade() -> None:
    op.drop_table("task_summary")
