"""Parse log files on a Dask cluster (``--scheduler tcp://HOST:8786`` or ``FLAKETUI_SCHEDULER``).

Parsing is per file; a Dask task parses a batch of consecutive files (about four per worker
thread, :func:`_batches`), each file read by its worker where it lives (a shared
filesystem, or object storage through fsspec) with the same readers as a local load, and
sends back only the parsed columns (a :class:`~flaketui.loading.parsed.Parsed`, a few
bytes a trial), never the file. The client merges them in file order exactly as a local
load does, so the result is the same.

Dask reschedules the batch of a worker that dies (``allowed-failures``, default 3), and a
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
                     connect_timeout: float = 10.0,
                     sizes: Sequence[int] | None = None) -> list[tuple[str, Parsed]]:
    """(kind, Parsed) of each of ``files``, in order, parsed on the cluster at ``scheduler``.

    Consecutive files go to the cluster in batches of about :data:`BATCHES_PER_THREAD` per
    worker thread (a file larger than that is a batch alone): a Dask task costs milliseconds
    of scheduling, more than parsing a small file does. ``sizes`` (bytes of each file, when
    the caller knows them) size the batches and the progress; else each file is asked.

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
        nbytes = list(sizes) if sizes is not None else [_size(f) for f in files]
        slots = max(1, sum(client.nthreads().values()))
        batches = _batches(nbytes, slots * BATCHES_PER_THREAD)
        futures = client.map(parse_batch, [paths[a:b] for a, b in batches], fields=fields, pure=False,
                             retries=retries)
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[list[tuple[str, Parsed]] | None] = [None] * len(batches)
        for future, result in as_completed(futures, with_results=True):
            i = index[future.key]
            out[i] = result
            a, b = batches[i]
            tick(sum(nbytes[a:b]))
    return [r for batch in out if batch is not None for r in batch]


BATCHES_PER_THREAD = 4
"""Batches per worker thread: enough to balance uneven files, few enough that scheduling
costs little beside parsing."""


def parse_batch(paths: list[str], fields: FieldMap) -> list[tuple[str, Parsed]]:
    """On a worker: :func:`parse_one` of each of ``paths``, in order."""
    return [parse_one(p, fields) for p in paths]


def _batches(nbytes: Sequence[int], count: int) -> list[tuple[int, int]]:
    """[start, end) index ranges cutting files of ``nbytes`` into about ``count`` runs of
    consecutive files of similar total size (a file larger than a share is a run alone)."""
    share = max(sum(nbytes) / max(count, 1), 1)
    out, start, acc = [], 0, 0
    for i, n in enumerate(nbytes):
        if acc and acc + n > share:  # this file would overfill the run: it starts the next
            out.append((start, i))
            start, acc = i, 0
        acc += n
        if acc >= share:
            out.append((start, i + 1))
            start, acc = i + 1, 0
    if start < len(nbytes):
        out.append((start, len(nbytes)))
    return out


def _size(path: Any) -> int:
    try:
        return int(path.stat().st_size)
    except OSError:
        return 0
