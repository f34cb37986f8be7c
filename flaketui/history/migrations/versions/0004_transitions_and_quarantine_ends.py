"""transitions: each task's lifecycle changes as recording found them, and whether a notification
went out; quarantines.until_at / until_clean / since_run / ended_evidence: quarantines that end.
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    op.create_table(
        "transitions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("from_state", sa.Text, nullable=False),
        sa.Column("to_state", sa.Text, nullable=False),
        sa.Column("run_id", sa.Integer, nullable=True),
        sa.Column("evidence", sa.Text, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("notified_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_transitions_pending", "transitions", ["notified_at", "id"])
    # Nullable columns: ALTER TABLE … ADD COLUMN on both databases, no table rebuild; the
    # quarantines set before last until someone lifts them, as they did.
    op.add_column("quarantines", sa.Column("until_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("quarantines", sa.Column("until_clean", sa.Integer, nullable=True))
    op.add_column("quarantines", sa.Column("since_run", sa.Integer, nullable=True))
    op.add_column("quarantines", sa.Column("ended_evidence", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("quarantines") as batch:
        for name in ("ended_evidence", "since_run", "until_clean", "until_at"):
            batch.drop_column(name)
    op.drop_index("ix_transitions_pending", "transitions")
    op.drop_table("transitions")
