"""How long ``history status`` and ``history record`` take on a big embedded history.

Builds (once, kept in --db) a SQLite history of RUNS runs × TASKS tasks through the real
schema (the migrations), loading task_results in bulk and folding the summary run by run as
``record`` does, then times, best of --repeat:

- ``status``: :meth:`Store.data` + :func:`status_doc` (what ``history status --format json`` computes);
- ``status CLI``: the whole command, ``flaketui history status --format json > /dev/null`` (and the
  table), in a new process: wall time, and the CPU time it used (user + system), which another
  job on a shared machine inflates less; once by the read-only sqlite3 path the command takes on
  a SQLite history (no SQLAlchemy, no Alembic imported), once through the store (the URL given
  with its driver named, ``sqlite+pysqlite:///``, which the sqlite3 path leaves to the store);
- ``record``: recording one more TASKS-task run (:meth:`Store.record`: one transaction).

``--docs`` also writes the figures into docs/performance.md (section ``history``).

Usage: python benchmarks/bench_history.py [--runs 1000] [--tasks 10000] [--db PATH] [--docs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from flaketui.history import RunRecord, open_store
from flaketui.history import lifecycle as lc
from flaketui.history.status import status_doc


def build(db: Path, runs: int, tasks: int, seed: int = 0) -> None:
    """A history of ``runs`` × ``tasks`` (about a tenth of the tasks flaky in a run), in bulk."""
    open_store(f"sqlite:///{db}").close()  # the schema, by the migrations
    rng = np.random.default_rng(seed)
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("BEGIN")
    con.executemany("INSERT INTO tasks (id, name) VALUES (?, ?)",
                    ((i + 1, f"suite/task-{i:06d}") for i in range(tasks)))
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    ids = np.arange(1, tasks + 1)
    ev = lc.Evidence.empty(tasks)
    flaky_kind = rng.random(tasks) < 0.1  # these tasks are sometimes flaky
    con.execute("DROP INDEX ix_task_results_task_run")  # built once at the end
    for r in range(1, runs + 1):
        n = np.full(tasks, 8, dtype=np.int64)
        passes = n.copy()
        flaky = flaky_kind & (rng.random(tasks) < 0.3)
        passes[flaky] = rng.integers(0, 8, int(flaky.sum()))
        con.execute("INSERT INTO runs (id, name, content_hash, meta, recorded_at) VALUES (?, ?, ?, '{}', ?)",
                    (r, f"run-{r:04d}", f"{r:064x}", now))
        p = passes / n
        flakiness = 4 * p * (1 - p)
        con.executemany(
            "INSERT INTO task_results (run_id, task_id, trials, passes, errored, p_hat, flakiness) "
            "VALUES (?, ?, ?, ?, 0, ?, ?)",
            zip([r] * tasks, ids.tolist(), n.tolist(), passes.tolist(), p.tolist(), flakiness.tolist(),
                strict=True))
        ev = lc.fold(ev, r, n, passes)
    con.execute("CREATE INDEX ix_task_results_task_run ON task_results (task_id, run_id)")
    con.executemany(f"INSERT INTO task_summary (task_id, {', '.join(lc.FIELDS)}) VALUES (?{', ?' * len(lc.FIELDS)})",
                    zip(ids.tolist(), *(c.tolist() for c in ev.columns()), strict=True))
    con.execute("COMMIT")
    con.close()


def best_process(cmd: list[str], env: dict[str, str], repeat: int) -> tuple[float, float]:
    """The best wall time and the best CPU time (user + system) of ``cmd`` run ``repeat`` times."""
    import resource

    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--db", type=Path, default=None, help="kept between uses (default: /tmp/…)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--docs", action="store_true", help="also write the figures into docs/performance.md")
    args = ap.parse_args()
    db = args.db or Path(f"/tmp/flaketui-bench-history-{args.runs}x{args.tasks}.sqlite")
    if not db.exists():
        t = time.perf_counter()
        build(db, args.runs, args.tasks)
        print(f"built {db} ({db.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.0f} s")
    url = f"sqlite:///{db}"
    with open_store(url) as store:
        doc = {}

        def status() -> None:
            doc["d"] = status_doc(store.data())

        t_status = best(status, args.repeat)
        runs = doc["d"]["runs"]
        print(f"status ({runs} runs × {args.tasks} tasks): {t_status * 1000:.0f} ms  "
              f"counts {doc['d']['counts']}")
        whole = {}
        for path, where in (("sqlite3", url), ("store", url.replace("sqlite:///", "sqlite+pysqlite:///", 1))):
            env = {**os.environ, "FLAKETUI_HISTORY": where}
            for fmt in ("json", "table"):
                wall, cpu = whole[path, fmt] = best_process([sys.executable, "-m", "flaketui", "history", "status",
                                                             "--format", fmt], env, args.repeat)
                print(f"status CLI ({path}), whole process, {fmt} to /dev/null: {wall * 1000:.0f} ms "
                      f"(CPU {cpu * 1000:.0f} ms)")
        tasks = [f"suite/task-{i:06d}" for i in range(args.tasks)]
        n = np.full(args.tasks, 8)
        k = [0]

        def record() -> None:
            k[0] += 1
            passes = n - (np.arange(args.tasks) % 50 == k[0] % 50)
            store.record([RunRecord(f"bench-{time.time_ns()}", tasks, n, passes, np.zeros(args.tasks, np.int64))])

        t_record = best(record, 3)
        print(f"record one {args.tasks}-task run: {t_record * 1000:.0f} ms")
    if args.docs:
        from docs_tables import PERFORMANCE, markdown_table, write_section

        size = f"{runs:,} runs × {args.tasks:,} tasks, SQLite, {db.stat().st_size / 1e6:.0f} MB"
        rows = [(f"`history status`: the computation (best of {args.repeat})", f"{t_status * 1000:.0f}", "")]
        for (path, fmt), (wall, cpu) in whole.items():
            how = "read-only sqlite3, no SQLAlchemy" if path == "sqlite3" else "through the store (SQLAlchemy)"
            rows.append((f"`history status --format {fmt}`, the whole process, {how} (best of {args.repeat})",
                         f"{wall * 1000:.0f}", f"{cpu * 1000:.0f}"))
        rows.append((f"recording one more {args.tasks:,}-task run (best of 3)", f"{t_record * 1000:.0f}", ""))
        write_section(PERFORMANCE, "history", markdown_table((size, "wall ms", "CPU ms"), rows))


if __name__ == "__main__":
    main()
