"""Parse log files on a Dask cluster (``--scheduler tcp://HOST:8786`` or ``FLAKETUI_SCHEDULER``).

Parsing is per file, so a cluster takes one file per task: each worker reads its file
where it lives (a shared filesystem, or object storage through fsspec) with the same
readers as a local load, and sends back only the parsed columns (a
:class:`~flaketui.loading.parsed.Parsed`, a few bytes a trial), never the file. The
client merges them in file order exactly as a local load does, so the result is the same.

Dask reschedules the task of a worker that dies (``allowed-failures``, default 3), and a
file a worker cannot read comes back as a :class:`~flaketui.model.Problem` naming it, as it
would locally. Needs ``pip install 'flaketui[dask]'`` (dask.distributed).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from flaketui.loading.location import as_path, unreadable
from flaketui.loading.parsed import Parsed
from flaketui.model import FieldMap, InputError

DASK_EXTRA = "pip install 'flaketui[dask]'"
SCHEDULER_ENV = "FLAKETUI_SCHEDULER"
"""The environment variable that names a scheduler when ``--scheduler`` is not given."""
SCHEDULER: str | None = None
"""The scheduler :func:`~flaketui.loading.load_logs` uses by default (set by ``--scheduler``
or :data:`SCHEDULER_ENV` for the whole process, the app included); None: the local pool."""
UNREADABLE = ""
"""The kind :func:`parse_one` gives a file it could not read (its piece holds the problem)."""


def scheduler_address(given: str | None) -> str | None:
    """``--scheduler`` if given, else :data:`SCHEDULER_ENV`, else None (the local pool)."""
    return given or os.environ.get(SCHEDULER_ENV) or None


def parse_one(path: str, fields: FieldMap) -> tuple[str, Parsed]:
    """On a worker: parse one file (a path, or a URL read where it lives) with the local
    readers, in one process (the worker's own cores are the cluster's business). An
    unreadable file is kind :data:`UNREADABLE` with the problem a local load names."""
    from flaketui.loading.formats import read_file

    p = as_path(path)
    try:
        size = p.stat().st_size
        return read_file(p, size, fields, 1, lambda _n: None)
    except OSError as exc:
        return UNREADABLE, Parsed.empty([unreadable(path, exc)])


def parse_on_cluster(files: Sequence[Path], fields: FieldMap, scheduler: str,
                     tick: Callable[[int], None], retries: int = 2,
                     connect_timeout: float = 10.0) -> list[tuple[str, Parsed]]:
    """(kind, Parsed) of each of ``files``, in order, parsed on the cluster at ``scheduler``.

    Raises
    ------
    InputError
        If dask.distributed is not installed or the scheduler cannot be reached.
    """
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise InputError(f"--scheduler needs the dask extra: {DASK_EXTRA}") from None
    try:
        client = Client(scheduler, timeout=connect_timeout)
    except (OSError, TimeoutError) as exc:
        raise InputError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({exc})") from None
    with client:
        paths = [str(f) for f in files]
        sizes = {p: _size(f) for p, f in zip(paths, files, strict=True)}
        futures = client.map(parse_one, paths, fields=fields, pure=False, retries=retries)
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[tuple[str, Parsed] | None] = [None] * len(paths)
        for future, result in as_completed(futures, with_results=True):
            i = index[future.key]
            out[i] = result
            tick(sizes[paths[i]])
    return [r for r in out if r is not None]


def _size(path: Any) -> int:
    try:
        return int(path.stat().st_size)
    except OSError:
        return 0
