"""How a load reads its logs: the settings both faces pass in, instead of module globals they write.

The CLI builds one from its shared options (``--sources-root``, ``--timeout``, ``--max-bytes``,
``--no-cache``, ``--scheduler``, ``--problems``); the app receives the same from the command line
that started it. Passing them in, rather than setting ``parquet_checks.SOURCES_ROOTS`` or
``location.TIMEOUT`` before a load, keeps two loads in one process (a test, the app's reload)
from seeing each other's settings.
"""

from __future__ import annotations

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
