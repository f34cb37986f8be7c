"""task_summary.trials / passes: each task's usable trials and passes over every recorded run, the
evidence its class (flaky, stable, undetermined against a flakiness cap) is stated on (backfilled
from task_results).
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    # Nullable, without a default: ALTER TABLE … ADD COLUMN on both databases, no table rebuild (and
    # no default for the schema guard to tell apart); the rebuild writes them on every row, as
    # every recording does after it.
    op.add_column("task_summary", sa.Column("trials", sa.BigInteger, nullable=True))
    op.add_column("task_summary", sa.Column("passes", sa.BigInteger, nullable=True))
    from flaketui.history.store import rebuild_summary

    rebuild_summary(op.get_bind())


def downgrade() -> None:
    with op.batch_alter_table("task_summary") as batch:
        batch.drop_column("passes")
        batch.drop_column("trials")
