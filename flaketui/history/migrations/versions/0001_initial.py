"""The tables: tasks, runs, task_results, quarantines."""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.UniqueConstraint("name", name="uq_tasks_name"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("meta", sa.JSON, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("content_hash", name="uq_runs_content_hash"),
    )
    op.create_table(
        "task_results",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("task_id", sa.Integer, sa.ForeignKey("tasks.id"), primary_key=True),
        sa.Column("trials", sa.Integer, nullable=False),
        sa.Column("passes", sa.Integer, nullable=False),
        sa.Column("errored", sa.Integer, nullable=False),
        sa.Column("p_hat", sa.Float, nullable=True),
        sa.Column("flakiness", sa.Float, nullable=True),
        sa.Column("suggested_source", sa.Text, nullable=True),
        sa.Column("first_divergence", sa.Integer, nullable=True),
    )
    op.create_index("ix_task_results_task_run", "task_results", ["task_id", "run_id"])
    op.create_table(
        "quarantines",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task", sa.Text, nullable=False),
        sa.Column("who", sa.Text, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.Column("ticket", sa.Text, nullable=True),
        sa.Column("lifted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lifted_by", sa.Text, nullable=True),
    )
    op.create_index("uq_quarantines_active", "quarantines", ["task"], unique=True,
                    sqlite_where=sa.text("lifted_at IS NULL"), postgresql_where=sa.text("lifted_at IS NULL"))


def downgrade() -> None:
    op.drop_table("quarantines")
    op.drop_table("task_results")
    op.drop_table("runs")
    op.drop_table("tasks")
