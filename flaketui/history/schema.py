"""The history's tables at the newest schema revision (SQLAlchemy Core), as the migrations
in :mod:`flaketui.history.migrations` build them.

- ``tasks``: each task id once (``task_results`` and ``task_summary`` refer to it by number),
  with the group it was last recorded in (``group_name``, nullable: owners' patterns match it);
- ``runs``: one row per recorded run, ``content_hash`` unique (recording a run again is a no-op);
- ``task_results``: per run and task, trials, passes, errored, p̂, flakiness, the suggested
  source of flakiness and the first divergence step (both nullable);
- ``task_summary``: per task, the lifecycle evidence folded over its runs in recorded order
  (:mod:`flaketui.history.lifecycle`; run ids, -1 for none; usable trials and passes over every
  run, which the class is stated on), kept in step by each recording;
- ``quarantines``: who quarantined which task, when, why, a ticket, and when it was lifted
  (at most one active quarantine per task: the partial unique index ``uq_quarantines_active``,
  which migration 0001 builds; it is not declared here because a ``postgresql_where`` argument
  imports the PostgreSQL dialect into every use of a SQLite history); a quarantine may end by
  itself (``until_at``, a date; ``until_clean``, clean runs since ``since_run``, the last run
  recorded when it was set), and says why it ended (``ended_evidence``);
- ``transitions``: each lifecycle change recording found (a task turned flaky, regressed, was
  fixed, its quarantine ended), with its evidence line and run, and when a notification about
  it went out (``notified_at``, null: not yet; ``history notify`` sends each once; ``claimed_until``:
  a notifier is posting it, and no other may until then).

These tables are for building queries; the migrations, not :meth:`MetaData.create_all`, make
the database.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

tasks = Table(
    "tasks", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", Text, nullable=False),
    Column("group_name", Text, nullable=True),
    UniqueConstraint("name", name="uq_tasks_name"),
)

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("meta", JSON, nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("content_hash", name="uq_runs_content_hash"),
)

task_results = Table(
    "task_results", metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("task_id", Integer, ForeignKey("tasks.id"), primary_key=True),
    Column("trials", Integer, nullable=False),
    Column("passes", Integer, nullable=False),
    Column("errored", Integer, nullable=False),
    Column("p_hat", Float, nullable=True),
    Column("flakiness", Float, nullable=True),
    Column("suggested_source", Text, nullable=True),
    Column("first_divergence", Integer, nullable=True),
)
Index("ix_task_results_task_run", task_results.c.task_id, task_results.c.run_id)

task_summary = Table(
    "task_summary", metadata,
    Column("task_id", Integer, ForeignKey("tasks.id"), primary_key=True),
    Column("runs_seen", Integer, nullable=False),
    Column("first_flaky", Integer, nullable=False),
    Column("last_flaky", Integer, nullable=False),
    Column("last_bad", Integer, nullable=False),
    Column("clean_since", BigInteger, nullable=False),
    Column("max_gap", BigInteger, nullable=False),
    Column("last_run", Integer, nullable=False),
    Column("trials", BigInteger, nullable=True),
    Column("passes", BigInteger, nullable=True),
)

quarantines = Table(
    "quarantines", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("task", Text, nullable=False),
    Column("who", Text, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("why", Text, nullable=False),
    Column("ticket", Text, nullable=True),
    Column("lifted_at", DateTime(timezone=True), nullable=True),
    Column("lifted_by", Text, nullable=True),
    Column("until_at", DateTime(timezone=True), nullable=True),
    Column("until_clean", Integer, nullable=True),
    Column("since_run", Integer, nullable=True),
    Column("ended_evidence", Text, nullable=True),
)

transitions = Table(
    "transitions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("task", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("from_state", Text, nullable=False),
    Column("to_state", Text, nullable=False),
    Column("run_id", Integer, nullable=True),
    Column("evidence", Text, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("notified_at", DateTime(timezone=True), nullable=True),
    Column("claimed_until", DateTime(timezone=True), nullable=True),
)
Index("ix_transitions_pending", transitions.c.notified_at, transitions.c.id)
