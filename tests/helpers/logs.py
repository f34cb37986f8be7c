"""Writing small JSONL logs for a test, and comparing two loaded trial tables column by column."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from flaketui.model import PARSED_COLUMNS, TrialLog

COLUMNS = tuple(PARSED_COLUMNS)
"""The trial table's columns that two loads of the same log must agree on."""


def write_log(path: Path, records: list[dict]) -> Path:
    """One JSON object a line."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_runs(path: Path, runs: dict[str, dict[str, tuple[int, int]]],
               config: dict[str, dict[str, object]] | None = None) -> Path:
    """A log where each run's task has (passes, trials); ``config[run]`` is added to every trial."""
    lines = []
    for run_name, tasks in runs.items():
        extra = (config or {}).get(run_name, {})
        for task, (c, n) in tasks.items():
            lines += [json.dumps({"run": run_name, "task": task, "trial": i, "passed": i < c, **extra})
                      for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def assert_same(a: TrialLog, b: TrialLog) -> None:
    """Two loads hold the same trials, metrics and problems (NaN equal to NaN)."""
    assert (a.runs, a.tasks, a.groups) == (b.runs, b.tasks, b.groups)
    for name in COLUMNS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert sorted(a.metrics) == sorted(b.metrics)
    for name in a.metrics:
        assert np.array_equal(a.metrics[name], b.metrics[name], equal_nan=True), name
    assert [str(p) for p in a.problems] == [str(p) for p in b.problems]
