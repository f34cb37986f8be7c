"""flaketui's own trial table in Parquet (``flaketui export --format parquet``), read back.

One row per trial: ``run``, ``task``, ``trial``, ``outcome`` (``pass``/``fail``/
``errored``), ``score``, ``group``, ``metric_<name>`` columns, and where the trial's line
lives: ``source`` (path or URL), ``source_kind``, ``offset``, ``length``. The table holds
no trace: opening a trial reads its record from ``source`` through the format of
``source_kind``, by ``offset`` and ``length``, as if that file had been loaded itself.
A trial's "line" here is its 1-based row in the table.

Read with pyarrow (``pip install 'flaketui[parquet]'``); rows are turned into columns with
numpy, none by one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from flaketui.loading.formats.base import LogFormat, Record, Tick
from flaketui.loading.location import as_path, is_url, open_binary
from flaketui.loading.parsed import Parsed
from flaketui.model import ERRORED, FAIL, PASS, FieldMap, InputError, Problem, Source

PARQUET_EXTRA = "pip install 'flaketui[parquet]'"
OUTCOMES = {"pass": PASS, "fail": FAIL, "errored": ERRORED}
"""The ``outcome`` column's words and their codes."""
METRIC_PREFIX = "metric_"
"""Columns named ``metric_<name>`` are the trial's metrics."""
REQUIRED = ("run", "task", "outcome", "source", "source_kind", "offset", "length")
"""What a table must have to be read as trials."""


def pyarrow_parquet() -> Any:
    """``pyarrow.parquet``, or an :class:`InputError` naming the extra to install."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"reading or writing Parquet needs the parquet extra: {PARQUET_EXTRA}") from None
    return pq


def _strings(column: Any) -> np.ndarray:
    """A string column as an object array (None where null)."""
    return np.array(column.to_pylist(), dtype=object)


class ParquetTrials(LogFormat):
    """A Parquet table of trials (``.parquet``; files starting with ``PAR1``)."""

    suffixes: ClassVar[tuple[str, ...]] = (".parquet",)
    kinds: ClassVar[tuple[str, ...]] = ("parquet",)

    def __init__(self, format_of_kind: Callable[[str], LogFormat]) -> None:
        self._format_of_kind = format_of_kind
        """The registry's look-up (given, not imported: the registry imports this module)."""
        self._locations: dict[tuple[str, int, int], tuple[np.ndarray, ...]] = {}

    def matches(self, path: Path, head: bytes) -> bool:
        return path.name.lower().endswith(self.suffixes) or head.startswith(b"PAR1")

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        spath = str(path)
        pq = pyarrow_parquet()
        try:
            schema = pq.read_schema(_readable(path))
            missing = [c for c in REQUIRED if c not in schema.names]
            if missing:
                tick(size)
                return Parsed.empty([Problem(spath, None, "not a flaketui trial table: no column "
                                             + ", ".join(missing))])
            table = pq.read_table(_readable(path))
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            tick(size)
            return Parsed.empty([Problem(spath, None, f"not a readable Parquet file ({exc})")])
        tick(size)
        n = table.num_rows
        problems: list[Problem] = []
        run = _strings(table["run"])
        task = _strings(table["task"])
        outcome_words = _strings(table["outcome"])
        outcome = np.full(n, -2, dtype=np.int8)
        for word, code in OUTCOMES.items():
            outcome[outcome_words == word] = code
        bad = (outcome == -2) | np.equal(run, None) | np.equal(task, None)
        for row in np.flatnonzero(bad)[:1000].tolist():
            what = ("no run" if run[row] is None else "no task" if task[row] is None
                    else f"outcome {outcome_words[row]!r} is not pass, fail or errored")
            problems.append(Problem(spath, row + 1, what))
        if bad.sum() > 1000:
            problems.append(Problem(spath, None, f"{int(bad.sum()) - 1000} more rows without a run, "
                                    "task or known outcome"))
        keep = np.flatnonzero(~bad)
        runs, run_ids = np.unique(run[keep].astype(str), return_inverse=True)
        tasks, task_ids = np.unique(task[keep].astype(str), return_inverse=True)
        if "group" in table.column_names:
            group = _strings(table["group"])[keep]
            has_group = ~np.equal(group, None)
            groups, gid = np.unique(group[has_group].astype(str), return_inverse=True)
            group_ids = np.full(keep.shape[0], -1, dtype=np.int32)
            group_ids[has_group] = gid
        else:
            groups, group_ids = np.empty(0, dtype=str), np.full(keep.shape[0], -1, dtype=np.int32)

        def numbers(name: str, fill: float) -> np.ndarray:
            if name not in table.column_names:
                return np.full(keep.shape[0], fill)
            return np.array(table[name].to_numpy(zero_copy_only=False), dtype=np.float64)[keep]

        trial = np.nan_to_num(numbers("trial", -1), nan=-1).astype(np.int64)
        metrics = {name[len(METRIC_PREFIX):]: numbers(name, np.nan)
                   for name in table.column_names if name.startswith(METRIC_PREFIX)}
        return Parsed(
            runs=runs.tolist(), tasks=tasks.tolist(), groups=groups.tolist(),
            run=run_ids.astype(np.int32), task=task_ids.astype(np.int32), group=group_ids,
            trial=trial, outcome=outcome[keep], score=numbers("score", np.nan),
            offset=keep.astype(np.int64), length=np.zeros(keep.shape[0], dtype=np.int64),
            line=keep.astype(np.int64) + 1, has_trace=np.ones(keep.shape[0], dtype=np.int8),
            metrics=metrics, problems=problems,
        )

    def _where(self, path: str) -> tuple[np.ndarray, ...]:
        """The table's (source, source_kind, offset, length) columns, read once per version."""
        st = as_path(path).stat()
        key = (path, st.st_size, st.st_mtime_ns)
        if key not in self._locations:
            table = pyarrow_parquet().read_table(_readable(path), columns=["source", "source_kind", "offset", "length"])
            self._locations.clear()
            self._locations[key] = (_strings(table["source"]), _strings(table["source_kind"]),
                                    table["offset"].to_numpy(), table["length"].to_numpy())
        return self._locations[key]

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        paths, kinds, offsets, lengths = self._where(source.path)
        if not 0 <= offset < paths.shape[0]:
            raise ValueError(f"{source.path}: no row {offset + 1}; was the table rewritten?")
        kind = str(kinds[offset])
        where = Source(str(paths[offset]), kind)
        return self._format_of_kind(kind).read_record(where, int(offsets[offset]), int(lengths[offset]),
                                                     trace_names, max_steps)


def _readable(path: str | Path) -> Any:
    """What pyarrow reads: a local path as it is; a remote object as a file read by range
    requests (pyarrow seeks to the footer and the columns it needs)."""
    return open_binary(path, stream=False) if is_url(path) else str(path)
