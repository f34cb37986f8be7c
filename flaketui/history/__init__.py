"""Flakes over time: a history of recorded runs and each task's lifecycle (headless core).

:func:`open_store` opens a history (SQLite by default, PostgreSQL for a team);
:mod:`~flaketui.history.lifecycle` folds its runs into each task's state;
:mod:`~flaketui.history.owners` reads a CODEOWNERS-style owners file;
:func:`~flaketui.history.status.status_doc` makes ``history status``'s document (read, on SQLite,
without SQLAlchemy by :mod:`~flaketui.history.snapshot`); :mod:`~flaketui.history.trend` the
suite over the recorded runs; :mod:`~flaketui.history.notify` the webhook messages about
transitions; :mod:`~flaketui.history.issue` a Markdown issue for a task. No Textual, no Rich.

The names below are loaded on first use (:func:`__getattr__`): reading an owners file (the app's
``--owners``) does not import SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flaketui.history.store import HistoryError, RunRecord, Store, default_url, open_store

__all__ = ["HistoryError", "RunRecord", "Store", "default_url", "open_store"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from flaketui.history import store

        return getattr(store, name)
    raise AttributeError(f"module 'flaketui.history' has no attribute {name!r}")
