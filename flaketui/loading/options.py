"""How a load reads its logs: the settings both faces pass in, instead of module globals they write.

The CLI builds one from its shared options (``--sources-root``, ``--timeout``, ``--max-bytes``,
``--no-cache``, ``--scheduler``, ``--problems``); the app receives the same from the command line
that started it. Passing them in, rather than setting ``parquet_checks.SOURCES_ROOTS`` or
``location.TIMEOUT`` before a load, keeps two loads in one process (a test, the app's reload)
from seeing each other's settings. What reads them too deep in a load to take an argument reads
:func:`current`, which the loader sets for the load's duration (:func:`in_effect`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class LoadOptions:
    """What a load may read and how long it may wait (defaults: the CLI's)."""

    sources_roots: tuple[str, ...] = ()
    """Folders or URL prefixes a Parquet trial table's source column may point into, besides the
    table's own folder (``--sources-root``)."""
    timeout: float = 30.0
    """Remote logs: seconds a read may wait for an answer (``--timeout``)."""
    max_bytes: int = 2 << 30
    """Remote logs: the most bytes a file read whole may declare (``--max-bytes``)."""
    use_cache: bool = True
    """Read and write the index cache (``--no-cache`` turns it off)."""
    scheduler: str | None = None
    """A Dask scheduler's address to parse on (``--scheduler``), or None for this machine."""
    show_all_problems: bool = False
    """Show every problem the load met on a line of its own, not the first few (``--problems``)."""


_CURRENT: ContextVar[LoadOptions] = ContextVar("flaketui_load_options", default=LoadOptions())
"""The options of the load (or trial read) under way in this thread: set only by the loader
(:func:`flaketui.loading.load_logs`, :func:`flaketui.loading.read_trial`, the log watcher) for
the duration of a call, read by what sits too deep to take an argument (a remote store's
timeouts, a Parquet table's source checks)."""


def current() -> LoadOptions:
    """The options of the load under way (the defaults outside one)."""
    return _CURRENT.get()


@contextmanager
def in_effect(options: LoadOptions | None) -> Iterator[LoadOptions]:
    """Within the block, :func:`current` is ``options`` (None: those already in effect)."""
    if options is None:
        yield _CURRENT.get()
        return
    token = _CURRENT.set(options)
    try:
        yield options
    finally:
        _CURRENT.reset(token)
