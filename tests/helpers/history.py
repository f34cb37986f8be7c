"""The history's test material: run records, the scripted per-task sequences and the state
expected after each run, a recorder script for concurrent writers, and the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import sqlalchemy as sa

from flaketui.history import RunRecord, schema

# Six runs per task, each (trials, passes); the state expected after each run. A task mixed in
# a run is flaky only while its trials pooled over the runs have the class flaky at the default
# cap 0.36 (Clopper-Pearson 95% interval inside (0.1, 0.9); the pooled counts and their class,
# from scipy's beta quantiles, in the comments), undetermined while the interval straddles 0.1 or 0.9.
SEQUENCES = {
    "stable": ([(10, 10)] * 6, ["stable"] * 6),
    # 60 trials, 56 passes: [0.838, 0.982], undetermined
    "flaky-in-run-6": ([(10, 10)] * 5 + [(10, 6)], ["stable"] * 5 + ["undetermined"]),
    "failing": ([(10, 0)] * 6, ["failing"] * 6),
    # 10/5 [0.187, 0.813] flaky; 16/11 flaky; 22/17 on: the upper bound passes 0.9, undetermined
    "fixed": ([(10, 5), (6, 6), (6, 6), (6, 6), (6, 6), (6, 6)],
              ["flaky", "flaky", "undetermined", "undetermined", "undetermined", "fixed"]),
    "20-clean-not-enough": ([(10, 5), (4, 4), (4, 4), (4, 4), (4, 4), (4, 4)],
                            ["flaky", "flaky"] + ["undetermined"] * 4),
    "boundary-28": ([(10, 5), (6, 6), (6, 6), (6, 6), (5, 5), (5, 5)], ["flaky", "flaky"] + ["undetermined"] * 4),
    "boundary-29": ([(10, 5), (6, 6), (6, 6), (6, 6), (6, 6), (5, 5)],
                    ["flaky", "flaky"] + ["undetermined"] * 3 + ["fixed"]),
    # 20/15 undetermined
    "regressed": ([(10, 5), (10, 10), (10, 10), (9, 9), (10, 0), (5, 5)],
                  ["flaky", "undetermined", "undetermined", "fixed", "regressed", "regressed"]),
    "fixed-again": ([(10, 5), (29, 29), (10, 9), (15, 15), (14, 14), (0, 0)],
                    ["flaky", "fixed", "regressed", "regressed", "fixed", "fixed"]),
    # never mixed in a run: 20/10 pooled would be flaky, but it changed between runs
    "failing-then-fixed": ([(10, 0), (10, 10), (10, 10), (9, 9), (10, 10), (10, 10)],
                           ["failing", "failing", "failing", "fixed", "fixed", "fixed"]),
    "stable-then-failing": ([(10, 10)] * 4 + [(10, 0), (10, 0)], ["stable"] * 4 + ["failing"] * 2),
    # 10/3: [0.067, 0.652], the lower bound below 0.1: undetermined, and so on as failures add up
    "flaky-then-failing": ([(10, 3), (10, 0), (10, 0), (10, 0), (10, 0), (10, 0)], ["undetermined"] * 6),
    # 20/10: [0.272, 0.728], flaky, and more so as the runs add up (a run without a usable trial changes nothing)
    "flaky-by-evidence": ([(20, 10)] * 5 + [(0, 0)], ["flaky"] * 6),
    # 200 trials, 199 passes: [0.972, 1.0], stable-pass: one mixed run, and the trials rule out a flaky rate
    "mixed-once-stable-pass": ([(100, 100), (100, 99), (5, 5), (5, 5), (5, 5), (5, 5)], ["stable"] * 6),
}

def expected_transitions() -> int:
    """The transitions the six scripted runs make (15: every change into flaky, regressed or fixed)."""
    total = 0
    for _, states in SEQUENCES.values():
        prev = "stable"
        for st in states:
            total += st != prev and st in ("flaky", "regressed", "fixed")
            prev = st
    return total


def scipy_class(n: int, c: int) -> str:
    """A task's class at the default flakiness cap 0.36 (pass rates 0.1 and 0.9), from scipy's
    Clopper-Pearson beta quantiles: the reference the history's classes are pinned to."""
    from scipy.stats import beta

    if n <= 1:
        return "no-trials" if n == 0 else "unrepeated"
    lo = beta.ppf(0.025, c, n - c + 1) if c > 0 else 0.0
    hi = beta.ppf(0.975, c + 1, n - c) if c < n else 1.0
    if lo >= 0.9:
        return "stable-pass"
    if hi <= 0.1:
        return "stable-fail"
    return "flaky" if 0.1 < lo and hi < 0.9 else "undetermined"


RECORDER = """
import sys
import numpy as np
from flaketui.history import RunRecord, open_store
url, who, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = open_store(url, timeout=60)
for i in range(count):
    tasks = [f"t{j}" for j in range(200)]
    n = np.full(200, 5)
    store.record([RunRecord(f"{who}-{i}", tasks, n, n - (np.arange(200) % 7 == i % 7), np.zeros(200, np.int64))])
    store.record([RunRecord("shared", tasks, n, n, np.zeros(200, np.int64))])
store.close()
"""
"""A process that records ``count`` runs of its own and one shared run, each in its own transaction."""


def same(a, b) -> bool:  # type: ignore[no-untyped-def]
    """Two :class:`Evidence` (or their columns) hold the same numbers."""
    a = a.columns() if hasattr(a, "columns") else a
    b = b.columns() if hasattr(b, "columns") else b
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def run_of(i: int, per_task: dict[str, tuple[int, int]], prefix: str = "run") -> RunRecord:
    """Run ``i`` with per task (trials, passes)."""
    tasks = sorted(per_task)
    n = np.array([per_task[t][0] for t in tasks])
    passes = np.array([per_task[t][1] for t in tasks])
    return RunRecord(f"{prefix}-{i}", tasks, n, passes, np.zeros(len(tasks), np.int64), {"seed": i})


def by_task(doc: dict) -> dict[str, dict]:
    return {t["task"]: t for t in doc["tasks"]}


def counts(store) -> tuple[int, ...]:  # type: ignore[no-untyped-def]
    """Rows in the runs, tasks, task results and task summary tables."""
    with store.reading() as conn:
        return tuple(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar()
                     for t in (schema.runs, schema.tasks, schema.task_results, schema.task_summary))


def cli(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m flaketui ARGS`` in a fresh process (the history's locks and exit codes are real).
    Its cache folder is ``.cache`` in ``cwd`` (or the system's temporary folder): never a folder
    whose ``flaketui/`` subfolder would shadow the package for ``python -m flaketui`` run there."""
    import tempfile

    cache = (cwd or Path(tempfile.gettempdir())) / ".cache"
    return subprocess.run([sys.executable, "-m", "flaketui", *args], capture_output=True, text=True,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache), **(env or {})}, cwd=cwd)


def write_log(path: Path, run: str, per_task: dict[str, tuple[int, int]]) -> Path:
    """A log of one run with per task (trials, passes)."""
    lines = []
    for task, (n, p) in per_task.items():
        lines += [json.dumps({"run": run, "task": task, "trial": i, "passed": i < p}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def record_sequences(url: str, runs: int = 6):  # type: ignore[no-untyped-def]
    """A history at ``url`` with the first ``runs`` runs of :data:`SEQUENCES`, recorded a day
    apart from 2026-12-01 (UTC); the store, open."""
    import datetime as dt

    from flaketui.history import open_store

    store = open_store(url)
    for i in range(runs):
        store.record([run_of(i, {t: seq[0][i] for t, seq in SEQUENCES.items()})],
                     now=dt.datetime(2026, 12, 1 + i, tzinfo=dt.timezone.utc))
    return store
