"""Flakes over time: a history of recorded runs and each task's lifecycle (headless core).

:func:`open_store` opens a history (SQLite by default, PostgreSQL for a team);
:mod:`~flaketui.history.lifecycle` folds its runs into each task's state;
:mod:`~flaketui.history.owners` reads a CODEOWNERS-style owners file;
:func:`~flaketui.history.status.status_doc` makes ``history status``'s document.
No Textual, no Rich.
"""

from flaketui.history.store import HistoryError, RunRecord, Store, default_url, open_store

__all__ = ["HistoryError", "RunRecord", "Store", "default_url", "open_store"]
