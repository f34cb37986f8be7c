"""The log formats flaketui reads, in one ordered list: :data:`FORMATS`.

The loader, ``--watch``, the index cache and the trace reader all find a file's
format here: :func:`format_for` gives the first format in :data:`FORMATS` whose
``matches(path, head)`` is true; :func:`format_of_kind` gives the format that reads
a :class:`~flaketui.model.Source` back; :func:`log_suffixes` (what a directory is
searched for) is every format's ``suffixes``.

How to add a format
-------------------
1. Write one module in this folder, e.g. ``formats/my_format.py``, holding one class
   that subclasses :class:`~flaketui.loading.formats.base.LogFormat`:

   - ``suffixes``: the lower-case name endings a directory search picks up;
   - ``kinds``: the source kind(s) it gives its files (a new, unique name, e.g.
     ``"my-format"``; override ``kind_of`` if it gives more than one);
   - ``matches(path, head)``: whether it reads this file (by name, or by its first
     bytes ``head`` when the name is shared with another format);
   - ``read(path, size, fields, default_run, workers, tick)``: every trial as a
     :class:`~flaketui.loading.parsed.Parsed`. Usually: make a
     ``RecordSink(FieldMap(threshold=fields.threshold), default_run)``
     (:mod:`flaketui.loading.records`), call ``sink.add(obj, offset, length, line)``
     with one dict per trial in flaketui's own field names (``task``, ``passed`` or
     ``score``, ``trial``, ``error``, ``metrics``, ``trace``...; it returns the reason
     when a record is unusable: make that a :class:`~flaketui.model.Problem`, never
     raise), call ``tick(size)``, and return ``Parsed.from_sink(sink, problems)``;
   - ``read_record(source, offset, length, trace_names, max_steps)``: one trial read
     back by the ``offset``/``length`` that ``read`` gave it, for its trace.

   ``run_name``, ``appendable`` and ``read_lines`` have defaults (see ``base.py``).
   Import nothing heavy at module level: every format is imported on every start.
2. Add an instance to :data:`FORMATS` below, before any format that would also match
   its files (:class:`JsonLines` matches every file, so it stays last).
3. Test it in ``tests/unit/`` with a small real log of that format (see
   ``tests/unit/test_realdata.py``; ``TestRegistry`` in ``tests/unit/test_formats.py``
   adds a toy format end to end), and bump :data:`flaketui.loading.cache.FORMAT` if
   files already cached would now read differently (a format that takes over files
   another format read before).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from flaketui.loading.formats.base import LogFormat, Record, Tick
from flaketui.loading.formats.harbor import HarborJob
from flaketui.loading.formats.inspect_log import InspectLog
from flaketui.loading.formats.json_array import JsonArray
from flaketui.loading.formats.json_lines import JsonLines
from flaketui.loading.formats.lm_eval import LmEvalSamples
from flaketui.loading.formats.otel import OtelTraces
from flaketui.loading.formats.parquet_trials import ParquetTrials
from flaketui.loading.formats.tau2 import Tau2Results
from flaketui.loading.formats.terminal_bench import TerminalBench
from flaketui.loading.location import RemotePath, open_binary
from flaketui.loading.parsed import Parsed
from flaketui.model import FieldMap, InputError, TrialLog

FORMATS: list[LogFormat] = [
    InspectLog(),
    ParquetTrials(lambda kind: format_of_kind(kind)),
    HarborJob(),
    Tau2Results(),
    TerminalBench(),
    LmEvalSamples(),
    OtelTraces(),
    JsonArray(),
    JsonLines(),
]
"""Every format, in the order they are asked whether they read a file."""

HEAD_BYTES = 256
"""How many of a file's first bytes :meth:`LogFormat.matches` is shown."""


def log_suffixes() -> tuple[str, ...]:
    """What a directory is searched for: every format's ``suffixes``."""
    return tuple(dict.fromkeys(s for f in FORMATS for s in f.suffixes))


def format_for(path: Path) -> LogFormat:
    """The format that reads ``path``: the first of :data:`FORMATS` that matches it.

    Raises
    ------
    InputError
        If no format does.
    """
    head = getattr(path, "head", None)  # a remote object's, kept from the last look: no request
    if head is None:
        try:
            with open_binary(path, stream=False) as fh:
                head = fh.read(HEAD_BYTES)
        except OSError:
            head = b""  # reading the file itself will name the fault
        if isinstance(path, RemotePath):
            path.head = head
    for fmt in FORMATS:
        if fmt.matches(path, head):
            return fmt
    raise InputError(f"{path}: not a log format flaketui reads")


def read_file(path: Path, size: int, fields: FieldMap, workers: int | None, tick: Tick) -> tuple[str, Parsed]:
    """Parse one file with its format (:func:`flaketui.loading.formats.format_for`):
    (source kind, what it holds), file-level problems included.

    Raises
    ------
    OSError
        If the file can't be read.
    InputError
        If its format can't read it here (an optional package is missing).
    """
    fmt = format_for(path)
    return fmt.kind_of(path), fmt.read(path, size, fields, fmt.run_name(path), workers, tick)


def format_of_kind(kind: str) -> LogFormat:
    """The format that gives its files the source kind ``kind``.

    Raises
    ------
    ValueError
        If no format does (e.g. an index cache entry written by another version).
    """
    for fmt in FORMATS:
        if kind in fmt.kinds:
            return fmt
    raise ValueError(f"no log format gives source kind {kind!r}")


def no_trace_reason(log: TrialLog, rows: Sequence[int]) -> str:
    """Why the trials at ``rows`` of ``log`` have no trace, in their format's words
    (:attr:`LogFormat.no_trace`; the first row's format)."""
    kind = log.sources[int(log.source[rows[0]])].kind if len(rows) else "jsonl"
    try:
        return format_of_kind(kind).no_trace
    except ValueError:
        return LogFormat.no_trace


def run_name_for(path: Path) -> str:
    """The default run name of a file: its name without the format's extensions."""
    return format_for(path).run_name(path)


__all__ = ["FORMATS", "HEAD_BYTES", "LogFormat", "Record", "Tick", "format_for", "format_of_kind",
           "log_suffixes", "read_file", "run_name_for"]
