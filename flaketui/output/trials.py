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
from pathlib import Path
from typing import Any

import numpy as np

from flaketui.loading.formats.parquet_trials import METRIC_PREFIX, OUTCOMES, pyarrow_parquet
from flaketui.model import ERRORED, PASS, TrialLog
from flaketui.sanitize import csv_cell

OUTCOME_NAMES = np.array(sorted(OUTCOMES, key=OUTCOMES.__getitem__), dtype=object)
"""Outcome names by code + 1 (:data:`~flaketui.model.ERRORED` is -1): errored, fail, pass."""


def _locations(log: TrialLog) -> list[str]:
    """Each source as the URI a reader finds it by: an absolute path for a local file."""
    out = []
    for s in log.sources:
        out.append(s.path if "://" in s.path else os.path.abspath(s.path))
    return out


def trial_columns(log: TrialLog) -> dict[str, Any]:
    """The table as columns (numpy arrays; names as object arrays), in the documented order."""
    runs = np.array(log.runs, dtype=object)
    tasks = np.array(log.tasks, dtype=object)
    groups = np.array([*log.groups, None], dtype=object)  # -1 picks the trailing None
    sources = np.array(_locations(log), dtype=object)
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
    """Write the trial table to ``out`` (Parquet, zstd-compressed), through a temporary
    file in the same folder that replaces ``out`` only when complete."""
    pq = pyarrow_parquet()
    import pyarrow as pa

    cols = trial_columns(log)
    types = {"trial": pa.int64(), "passed": pa.bool_(), "errored": pa.bool_(), "score": pa.float64(),
             "offset": pa.int64(), "length": pa.int64(), "line": pa.int64()}
    arrays = {name: pa.array(values, type=types.get(name, pa.float64() if name.startswith(METRIC_PREFIX)
                                                    else pa.string()))
              for name, values in cols.items()}
    table = pa.table(arrays)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def trials_csv(log: TrialLog, raw: bool = False) -> str:
    """The trial table as CSV; text cells pass :func:`~flaketui.sanitize.csv_cell` unless ``raw``."""
    cols = trial_columns(log)
    text = {"run", "task", "group", "source"}
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(cols)
    values = [cols[name].tolist() for name in cols]
    for row in zip(*values, strict=True):
        w.writerow(["" if v is None else (csv_cell(v) if (name in text and not raw) else v)
                    for name, v in zip(cols, row, strict=True)])
    return out.getvalue()
