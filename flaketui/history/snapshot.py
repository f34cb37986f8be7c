"""What ``history status`` reads, in plain SQL on a DB-API cursor: the one statement of that read,
for both databases (:meth:`~flaketui.history.store.Store.data` runs it on its own connection),
and a read-only path for a SQLite history that imports neither SQLAlchemy nor Alembic
(:func:`read_sqlite`: stdlib :mod:`sqlite3`, ``mode=ro``), which is most of what a status of a big
history costs otherwise. No Textual, no Rich.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np

from flaketui.history import lifecycle
from flaketui.history.lifecycle import Evidence

ENV = "FLAKETUI_HISTORY"
"""The environment variable naming the history URL when ``--history`` is not given."""

HEAD = "0005"
"""The newest schema revision (the last of ``migrations/versions``): a history already there
opens without importing Alembic, and only a history there is read by :func:`read_sqlite`."""


@dataclass
class HistoryData:
    """What ``history status`` needs, read in one snapshot."""

    runs: int
    """Runs recorded."""
    run_names: dict[int, str]
    tasks: list[str]
    evidence: Evidence
    groups: list[str | None]
    """Each task's group (aligned with :attr:`tasks`; None: none recorded)."""
    recent_runs: list[str]
    """The names of the last runs (oldest first) whose p̂ :attr:`recent_p_hat` holds."""
    recent_p_hat: np.ndarray
    """tasks × recent runs; NaN where the task was not in the run (or had no trial)."""
    quarantines: dict[str, dict[str, Any]]
    """Active quarantines by task: who, at, why, ticket (and, for one that ends by itself,
    ``until``, ``until_clean``, ``clean_runs``, ``progress``)."""


def aware(at: Any) -> dt.datetime | None:
    """A stored time as an aware datetime (SQLite gives text back, without a zone: UTC)."""
    if at is None:
        return None
    if isinstance(at, str):
        at = dt.datetime.fromisoformat(at)
    return at if at.tzinfo is not None else at.replace(tzinfo=dt.timezone.utc)


def when(at: Any) -> str:
    """A stored time as ISO 8601 to the second, UTC when it has no zone."""
    try:
        got = aware(at)
    except ValueError:
        return str(at)
    return got.isoformat(timespec="seconds") if isinstance(got, dt.datetime) else str(at)


def matrix(rows: Sequence[Sequence[Any]], width: int, dtype: type) -> np.ndarray:
    """``rows`` of ``width`` numbers as a rows × width array, read in one pass in C
    (:func:`numpy.fromiter` over the flattened rows: no Python object per row); a value that is
    not a number of that kind: :class:`BadValue`."""
    try:
        flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=dtype, count=width * len(rows))
    except (ValueError, TypeError, OverflowError) as exc:
        raise BadValue(f"a value is not a number of its column's kind ({str(exc).splitlines()[0][:120]})") from None
    return flat.reshape(len(rows), width)


@dataclass(frozen=True)
class QuarantineProgress:
    """A quarantine's evidence since it was set: runs and trials of its task recorded since,
    and how many of those runs were clean in a row (since the last bad one)."""

    runs: int
    trials: int
    clean_runs: int
    clean_trials: int
    bad_runs: int

    def line(self) -> str:
        """``14 clean trials over 3 runs since quarantined`` (and the bad runs, if any)."""
        s = "" if self.clean_runs == 1 else "s"
        text = f"{self.clean_trials} clean trials over {self.clean_runs} run{s} since quarantined"
        if self.bad_runs:
            text += f" ({self.bad_runs} flaky or failing run{'' if self.bad_runs == 1 else 's'} before them)"
        return text


def quarantine_progress(results: Sequence[tuple[int, int]]) -> QuarantineProgress:
    """The :class:`QuarantineProgress` of a task's (trials, passes) in the runs recorded since its
    quarantine, oldest first (a run without a usable trial counts for nothing)."""
    runs = trials = clean_runs = clean_trials = bad = 0
    for n, p in results:
        if n <= 0:
            continue
        runs += 1
        trials += n
        if p >= n:
            clean_runs += 1
            clean_trials += n
        else:
            bad += 1
            clean_runs = clean_trials = 0
    return QuarantineProgress(runs, trials, clean_runs, clean_trials, bad)


def progress(cur: Any, mark: str, quarantines: Sequence[tuple[str, int | None]]) -> dict[str, QuarantineProgress]:
    """Each (task, since_run)'s :class:`QuarantineProgress` (``mark``: the driver's placeholder)."""
    out = {}
    for task, since in quarantines:
        cur.execute("SELECT tr.trials, tr.passes FROM task_results tr JOIN tasks t ON t.id = tr.task_id "
                    f"WHERE t.name = {mark} AND tr.run_id > {mark} ORDER BY tr.run_id", (task, since or 0))
        out[task] = quarantine_progress(cur.fetchall())
    return out


def active_quarantines(cur: Any, mark: str, now: dt.datetime) -> dict[str, dict[str, Any]]:
    """Active quarantines by task: who, at, why, ticket, and when one ends by itself
    (``until``, ``until_clean``, ``clean_runs``, ``progress``: its evidence so far). One whose
    date has come is not active, though only the next write records its end."""
    cur.execute("SELECT task, who, at, why, ticket, until_at, until_clean, since_run FROM quarantines "
                "WHERE lifted_at IS NULL ORDER BY id")
    rows = cur.fetchall()
    got = progress(cur, mark, [(r[0], r[7]) for r in rows if r[6] is not None])
    out: dict[str, dict[str, Any]] = {}
    for task, who, at, why, ticket, until_at, until_clean, _ in rows:
        texts([task, who, why], "a quarantine's text")
        texts([ticket], "a quarantine's ticket", nullable=True)
        until = aware(until_at)
        if until is not None and until <= now:
            continue
        entry: dict[str, Any] = {"who": who, "at": when(at), "why": why, "ticket": ticket}
        if until is not None or until_clean is not None:
            pr = got.get(task)
            entry.update(until=None if until is None else when(until), until_clean=until_clean,
                         clean_runs=None if pr is None else pr.clean_runs,
                         progress=None if pr is None else pr.line())
        out[task] = entry
    return out


class BadValue(ValueError):
    """A row holding what its column cannot (a history written by something else): SQLite keeps
    whatever a row was given."""


def texts(values: list[Any], what: str, nullable: bool = False) -> list[Any]:
    """``values`` when each is text (or None, when ``nullable``), else :class:`BadValue`."""
    ok = (str, type(None)) if nullable else str
    for v in values:
        if not isinstance(v, ok):
            raise BadValue(f"{what} is a {type(v).__name__}, not text")
    return values


def read_data(cur: Any, mark: str, recent: int, now: dt.datetime | None = None) -> HistoryData:
    """Everything ``history status`` shows, through ``cur`` (in one snapshot: the caller's
    transaction): the summary row of each task (not its runs: the time does not grow with the
    runs), and p̂ in the last ``recent`` runs (:func:`recent_p_hat`). The big read (a row per
    task) goes from the driver's rows straight into arrays."""
    cur.execute("SELECT id, name FROM runs ORDER BY id")
    run_rows = cur.fetchall()
    run_names = dict(zip([r[0] for r in run_rows], texts([r[1] for r in run_rows], "a run name"), strict=True))
    fields = ", ".join(f"s.{f}" for f in lifecycle.FIELDS)
    cur.execute(f"SELECT t.id, t.name, t.group_name, {fields} FROM tasks t JOIN task_summary s "
                "ON s.task_id = t.id ORDER BY t.id")
    rows = cur.fetchall()
    names = texts([row[1] for row in rows], "a task name")
    groups = texts([row[2] for row in rows], "a group", nullable=True)
    cols = matrix([(row[0], *row[3:]) for row in rows], 1 + len(lifecycle.FIELDS), np.int64)
    ids = cols[:, 0]
    ev = Evidence(*(cols[:, j + 1].copy() for j in range(len(lifecycle.FIELDS))))
    last = [i for i, _ in run_rows[-recent:]] if recent > 0 else []
    p = recent_p_hat(cur, ids, last)
    quar = active_quarantines(cur, mark, now or dt.datetime.now(dt.timezone.utc))
    return HistoryData(len(run_rows), run_names, names, ev, groups, [run_names[i] for i in last], p, quar)


def recent_p_hat(cur: Any, ids: np.ndarray, last: list[int]) -> np.ndarray:
    """p̂ of tasks ``ids`` (sorted) in runs ``last`` (ascending ids): tasks × runs, NaN where a task
    is not in the run or had no trial.

    Most p̂ are 1 (a task that passed every trial), so the database is asked only for what is
    not: the p̂ other than 1, and, in a run with fewer results than tasks, the tasks it lacks.
    What crosses into Python is the flaky and the missing, not tasks × runs rows (100,000 for
    10,000 tasks and the last 10 runs)."""
    p = np.full((len(ids), len(last)), np.nan)
    if not last or not len(ids):
        return p
    first = int(last[0])
    runs = np.array(last, dtype=np.int64)
    cur.execute(f"SELECT run_id, COUNT(*) FROM task_results WHERE run_id >= {first} GROUP BY run_id")
    per_run = dict(cur.fetchall())
    sizes = np.array([per_run.get(i, 0) for i in last], dtype=np.int64)
    p[:, sizes > 0] = 1.0
    partial = [int(i) for i, n in zip(last, sizes.tolist(), strict=True) if 0 < n < len(ids)]
    if partial:
        cur.execute("SELECT r.id, s.task_id FROM runs r CROSS JOIN task_summary s "
                    f"WHERE r.id IN ({', '.join(map(str, partial))}) AND NOT EXISTS (SELECT 1 FROM task_results tr "
                    "WHERE tr.run_id = r.id AND tr.task_id = s.task_id)")
        absent = cur.fetchall()
        if absent:
            got = matrix(absent, 2, np.int64)
            p[np.searchsorted(ids, got[:, 1]), np.searchsorted(runs, got[:, 0])] = np.nan
    cur.execute("SELECT run_id, task_id, COALESCE(p_hat, -1.0) FROM task_results "
                f"WHERE run_id >= {first} AND (p_hat IS NULL OR p_hat <> 1.0)")
    other = cur.fetchall()
    if other:
        got = matrix(other, 3, np.float64)
        p[np.searchsorted(ids, got[:, 1].astype(np.int64)),
          np.searchsorted(runs, got[:, 0].astype(np.int64))] = np.where(got[:, 2] < 0, np.nan, got[:, 2])
    return p


def default_url() -> str:
    """``$FLAKETUI_HISTORY``, else SQLite in the user data folder (``history.sqlite``)."""
    import os

    env = os.environ.get(ENV)
    if env:
        return env
    import platformdirs

    return f"sqlite:///{platformdirs.user_data_path('flaketui') / 'history.sqlite'}"


def sqlite_file(url: str) -> Path | None:
    """The file of a plain ``sqlite:///PATH`` URL (None: another database, or a URL with more
    in it than a path, which the full store handles)."""
    if not url.startswith("sqlite:///") or "?" in url or "#" in url:
        return None
    path = unquote(url[len("sqlite:///"):])
    if path in ("", ":memory:"):
        return None
    return Path(path).expanduser()


def read_sqlite(url: str, recent: int, timeout: float = 10.0) -> HistoryData | None:
    """:func:`read_data` of the SQLite history at ``url`` through stdlib :mod:`sqlite3`, read-only,
    in one read transaction, its statements time-bounded; None when that cannot be done (not a plain
    SQLite URL, no file, a link, a schema not at :data:`HEAD` or not the one flaketui's migrations
    make, the expected schema not derived yet, or any database error): the caller opens the full
    store, which creates, migrates, checks or says what is wrong."""
    import sqlite3

    from flaketui.history import guard
    from flaketui.safefile import LinkRefused, refuse_link

    path = sqlite_file(url)
    if path is None or not path.is_file():
        return None
    want = guard.kept_schema()  # the schema the migrations make (None: not derived yet here)
    try:
        refuse_link(path, "history database")
        if want is None:
            return None
        con = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=timeout,
                              isolation_level=None)
    except (sqlite3.Error, LinkRefused):  # the store says what is wrong
        return None
    try:
        guard.bound_statements(con)  # a history is input: no planted view runs until killed
        cur = con.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        cur.execute("BEGIN")
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'")
        if cur.fetchone() is None:
            return None
        cur.execute("SELECT version_num FROM alembic_version")
        row = cur.fetchone()
        if row is None or row[0] != HEAD or guard.unexpected(cur, True, want):
            return None  # the store refuses a schema flaketui's migrations did not make, in one line
        return read_data(cur, "?", recent)
    except (sqlite3.Error, ValueError, TypeError, OverflowError):  # the store says what is wrong
        return None
    finally:
        con.close()
