"""tasks.group_name: the group a task was last recorded in (owners' patterns match it too)."""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    # A nullable column: ALTER TABLE … ADD COLUMN on both databases, no table rebuild (a history
    # of millions of results migrates at once); the tasks recorded before have no group.
    op.add_column("tasks", sa.Column("group_name", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("group_name")
