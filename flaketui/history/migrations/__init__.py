"""Alembic migrations of the history database, run by :func:`flaketui.history.store.open_store`
(never by hand: ``env.py`` expects the connection the store opened)."""
