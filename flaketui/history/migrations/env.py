"""Alembic's entry point: migrate on the connection (and inside the transaction) the store gave."""

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("flaketui's history migrations run from flaketui.history.store, on its connection")
context.configure(connection=connection, target_metadata=None, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
