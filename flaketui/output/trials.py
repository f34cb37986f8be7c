"""The trial table: one row per trial, for a warehouse, DuckDB or Spark (``flaketui export``).

Columns: ``run``, ``task``, ``trial``, ``outcome`` (``pass`` / ``fail`` / ``errored``),
``passed`` (true / false, null when errored), ``errored``, ``score`` (null when the log
gave none), ``group``, one ``metric_<name>`` column per metric, and where the trial
lives: ``source`` (the file's absolute path or URL), ``source_kind`` (how it is stored:
``jsonl``, ``json``, ``inspect``…), ``offset`` and ``length`` (its bytes, or its place, in
that file) and ``line``. flaketui reads such a Parquet table back as a log; a trace is
then read from ``source`` by ``offset`` and ``length``.

Parquet is written with pyarrow (``pip install 'flaketui[parquet]'``); CSV with the
standard library, text cells neutralised against spreadsheet formulas unless ``raw``.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from flaketui.loading.formats.parquet_checks import SOURCES_TAG, sources_tag
from flaketui.loading.formats.parquet_trials import METRIC_PREFIX, OUTCOMES, pyarrow_parquet
from flaketui.model import ERRORED, PASS, TrialLog
from flaketui.sanitize import csv_cell, mask_url, visible
from flaketui.safefile import atomic_write

OUTCOME_NAMES = np.array(sorted(OUTCOMES, key=OUTCOMES.__getitem__), dtype=object)
"""Outcome names by code + 1 (:data:`~flaketui.model.ERRORED` is -1): errored, fail, pass."""


def _locations(log: TrialLog) -> list[str]:
    """Each source as the URI a reader finds it by: an absolute path for a local file; a URL
    masked (:func:`~flaketui.sanitize.mask_url`: no password, no presigned signature; such a
    URL is not read again, one whose credentials come from the environment is)."""
    out = []
    for s in log.sources:
        out.append(mask_url(s.path) if "://" in s.path else os.path.abspath(s.path))
    return out


def trial_columns(log: TrialLog, text: Callable[[str], str] | None = None) -> dict[str, Any]:
    """The table as columns (numpy arrays; names as object arrays), in the documented order;
    ``text`` is applied to each distinct run, task, group and source name (once a name, not
    once a row)."""
    def names(values: Sequence[str]) -> list[str]:
        return list(map(text, values)) if text is not None else list(values)

    runs = np.array(names(log.runs), dtype=object)
    tasks = np.array(names(log.tasks), dtype=object)
    groups = np.array([*names(log.groups), None], dtype=object)  # -1 picks the trailing None
    sources = np.array(names(_locations(log)), dtype=object)
    kinds = np.array([s.kind for s in log.sources], dtype=object)
    errored = log.outcome == ERRORED
    passed = np.where(errored, None, log.outcome == PASS).astype(object)
    score = log.score.astype(object)
    score[np.isnan(log.score)] = None
    cols: dict[str, Any] = {
        "run": runs[log.run], "task": tasks[log.task], "trial": log.trial,
        "outcome": OUTCOME_NAMES[log.outcome.astype(np.int64) + 1], "passed": passed,
        "errored": errored, "score": score, "group": groups[log.group],
    }
    for name in sorted(log.metrics):
        v = log.metrics[name].astype(object)
        v[np.isnan(log.metrics[name])] = None
        cols[METRIC_PREFIX + name] = v
    cols.update({"source": sources[log.source], "source_kind": kinds[log.source],
                 "offset": log.offset, "length": log.length, "line": log.line})
    return cols


def write_parquet(log: TrialLog, out: Path) -> None:
    """Write the trial table to ``out`` (Parquet, zstd-compressed) with
    :func:`flaketui.safefile.atomic_write`: a temporary file of a random name that
    :func:`tempfile.mkstemp` creates ``O_CREAT | O_EXCL | O_NOFOLLOW`` in the same folder,
    then renamed over ``out`` when complete, so nothing is written through a link planted
    at ``out`` or at a predictable temp name (as ``.OUT.tmp-PID`` was). Its metadata holds
    :func:`~flaketui.loading.formats.parquet_checks.sources_tag`, so that this user's flaketui
    reads its traces from wherever the logs are."""
    pq = pyarrow_parquet()
    import pyarrow as pa

    cols = trial_columns(log)
    types = {"trial": pa.int64(), "passed": pa.bool_(), "errored": pa.bool_(), "score": pa.float64(),
             "offset": pa.int64(), "length": pa.int64(), "line": pa.int64()}
    arrays = {name: pa.array(values, type=types.get(name, pa.float64() if name.startswith(METRIC_PREFIX)
                                                    else pa.string()))
              for name, values in cols.items()}
    used = np.unique(log.source).tolist()  # the pairs the table holds, as its reader finds them
    locations = _locations(log)
    tag = sources_tag({(locations[i], log.sources[i].kind) for i in used})
    table = pa.table(arrays, metadata=None if tag is None else {SOURCES_TAG: tag})
    sink = pa.BufferOutputStream()  # the compressed file: small beside the columns just built
    pq.write_table(table, sink, compression="zstd")
    atomic_write(out, memoryview(sink.getvalue()))


CSV_ROWS = 1 << 16
"""Rows made into Python values at a time (the rest stay numpy columns)."""


def trials_csv(log: TrialLog, raw: bool = False) -> str:
    """The trial table as CSV (:func:`trials_csv_chunks` joined)."""
    return "".join(trials_csv_chunks(log, raw))


def trials_csv_chunks(log: TrialLog, raw: bool = False, terminal: bool = False) -> Iterator[str]:
    """The trial table as CSV, :data:`CSV_ROWS` rows a piece; text cells pass
    :func:`~flaketui.sanitize.csv_cell` unless ``raw`` (each distinct name once), missing
    values are empty cells. ``raw`` for a ``terminal`` still spells out control characters
    (:func:`~flaketui.sanitize.visible`): a name from a log never reaches a terminal raw."""
    text = (visible if terminal else None) if raw else csv_cell
    cols = trial_columns(log, text)
    arrays = list(cols.values())
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    header = list(cols) if text is None else list(map(text, cols))  # metric names come from the log too
    # a raw name with a CR is quoted (the writer quotes only its own line ending, "\n")
    if any("\r" in h for h in header):
        csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL).writerow(header)
    else:
        w.writerow(header)
    for start in range(0, len(log), CSV_ROWS):  # the csv module writes None as an empty cell
        w.writerows(zip(*(a[start:start + CSV_ROWS].tolist() for a in arrays), strict=True))
        yield out.getvalue()
        out.seek(0)
        out.truncate()
    if out.tell():
        yield out.getvalue()
