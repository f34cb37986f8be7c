"""The history store: one code path (SQLAlchemy Core, Alembic migrations) over SQLite and PostgreSQL.

:func:`open_store` opens a history URL (``sqlite:///PATH``, ``postgresql://…``; default
:func:`default_url`), migrates it to the newest revision (refusing a newer one) and returns a
:class:`Store`. Every write is one transaction that holds the history's write lock (SQLite:
``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock), so concurrent recorders
are serialised, run ids follow the order runs were recorded in, and a failure leaves nothing
half-written. Every database error leaves as one :class:`HistoryError`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine, make_url

from flaketui.history import guard, lifecycle, schema
from flaketui.history.lifecycle import Evidence
from flaketui.history.snapshot import (
    ENV,
    HEAD,
    HistoryData,
    QuarantineProgress,
    default_url,
    progress,
    quarantine_progress,
    read_data,
)
from flaketui.history.snapshot import aware as _aware
from flaketui.history.snapshot import matrix as _matrix
from flaketui.history.snapshot import when as _when
from flaketui.safefile import LinkRefused, refuse_link
from flaketui.sanitize import mask_text, visible

__all__ = ["HEAD", "HistoryData", "HistoryError", "QuarantineProgress", "RunRecord", "Store", "default_url",
           "open_store", "quarantine_progress"]


LOCK_KEY = 0x666C616B  # "flak": the PostgreSQL advisory lock every writer takes
DEFAULT_TIMEOUT = 10.0
"""Seconds to wait for a locked SQLite file or a PostgreSQL connection."""

MIGRATIONS = Path(__file__).with_name("migrations")
CHUNK = 500
"""Bound parameters per IN list (under SQLite's oldest limit of 999)."""


class HistoryError(Exception):
    """A history that cannot be used (unreachable, newer schema, locked, bad URL): one line."""


class BadRow(HistoryError):
    """A row whose value is not of its column's type (a history written by something else)."""


@dataclass(frozen=True)
class RunRecord:
    """One run to record: its name, the harness's metadata and its per-task counts."""

    name: str
    tasks: Sequence[str]
    n: np.ndarray
    passes: np.ndarray
    errored: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)
    suggested_source: Sequence[str | None] | None = None
    first_divergence: Sequence[int | None] | None = None
    groups: Sequence[str | None] | None = None
    """Each task's group in the run (None: none), kept as the task's group in the history."""

    def content_hash(self) -> str:
        """SHA-256 of the name and the (task, n, passes, errored) rows, in task order: the
        run's identity (the same run loaded again hashes the same; the groups are not part of
        it, so a run recorded before groups were kept is still the same run)."""
        h = hashlib.sha256(self.name.encode("utf-8", "surrogatepass") + b"\0")
        order = sorted(range(len(self.tasks)), key=self.tasks.__getitem__)
        n, p, e = (np.asarray(a, np.int64).tolist() for a in (self.n, self.passes, self.errored))
        for i in order:
            h.update(f"{self.tasks[i]}\0{n[i]}\0{p[i]}\0{e[i]}\n".encode("utf-8", "surrogatepass"))
        return h.hexdigest()


@dataclass(frozen=True)
class Recorded:
    """What recording one run did: its id, and whether it was new (False: already there)."""

    run_id: int
    name: str
    new: bool
    tasks: int


def shown(url: str | URL) -> str:
    """A URL fit to print: its secrets masked (:func:`flaketui.sanitize.mask_text`, the one rule)."""
    return mask_text(url.render_as_string(hide_password=False) if isinstance(url, URL) else url)


def open_store(url: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> Store:
    """Open (creating or migrating as needed) the history at ``url`` (default :func:`default_url`)."""
    store = Store(url or default_url(), timeout)
    store.migrate()
    return store


class Store:
    """A history database. Use :func:`open_store`; close with :meth:`close` (or ``with``)."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = url
        self.engine = _engine(url, timeout)
        self.timeout = timeout
        self.sqlite = self.engine.dialect.name == "sqlite"
        self.trusted = False
        """True only for the fresh database :func:`expected_schema` makes (nothing to check it against)."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connections."""
        self.engine.dispose()

    # -- transactions -----------------------------------------------------------------
    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """Turn the database's errors into one-line :class:`HistoryError` s."""
        try:
            yield
        except BadRow as exc:
            raise HistoryError(f"history {shown(self.url)}: {exc}") from None
        except HistoryError:
            raise
        except sa.exc.DBAPIError as exc:
            if "interrupted" in str(exc.orig) or "statement timeout" in str(exc.orig):
                raise HistoryError(f"history {shown(self.url)}: a statement ran over {guard.STATEMENT_SECONDS:g} s "
                                   "and was stopped (a history made by something else?)") from None
            raise HistoryError(f"history {shown(self.url)}: {_one_line(exc, self.timeout)}") from exc
        except sa.exc.SQLAlchemyError as exc:
            raise HistoryError(f"history {shown(self.url)}: {exc}".splitlines()[0]) from exc

    @contextlib.contextmanager
    def writing(self) -> Iterator[Connection]:
        """One transaction holding the history's write lock (committed on success)."""
        with self.errors(), self.engine.connect() as conn:
            if self.sqlite:
                conn = conn.execution_options(sqlite_begin="IMMEDIATE")
            with conn.begin():
                if not self.sqlite:
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK_KEY})
                yield conn

    @contextlib.contextmanager
    def refusing_bad_rows(self) -> Iterator[None]:
        """A row holding what its column cannot (SQLite lets a row be of another type: a date
        that is not one, text for a number), met while reading, as a one-line error instead of
        the driver's or SQLAlchemy's ValueError (:class:`BadRow`; :meth:`errors` names the history)."""
        try:
            yield
        except (ValueError, TypeError, OverflowError) as exc:
            raise BadRow(f"a row holds a value its column cannot "
                         f"({str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}); refused") from None

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """One read transaction: a consistent snapshot (a row of the wrong type refused in one
        line, :meth:`refusing_bad_rows`)."""
        with self.errors(), self.refusing_bad_rows(), self.engine.connect() as conn:
            if not self.sqlite:
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    # -- schema -------------------------------------------------------------------------
    def revision(self) -> str | None:
        """The database's schema revision (None: empty)."""
        from alembic.runtime.migration import MigrationContext

        with self.reading() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    def migrate(self, to: str = "head") -> None:
        """Bring the schema to revision ``to`` (default the newest); a database at a revision
        this flaketui does not know (a newer one) is refused, untouched."""
        if to in ("head", HEAD):
            with self.reading() as conn:
                at_head = _version(conn) == HEAD
                self.check_schema(conn, full=at_head)
                if at_head:
                    return
        from alembic import command
        from alembic.config import Config
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        script = ScriptDirectory.from_config(cfg)
        target = script.get_current_head() if to == "head" else to
        known = {s.revision for s in script.walk_revisions()}

        def current(conn: Connection) -> str | None:
            rev = MigrationContext.configure(conn).get_current_revision()
            if rev is not None and rev not in known:
                raise HistoryError(f"history {shown(self.url)}: its schema (revision {rev}) is newer than "
                                   f"this flaketui knows (up to {script.get_current_head()}); upgrade flaketui")
            return rev

        with self.reading() as conn:
            self.check_schema(conn, full=False)  # nothing planted runs inside the upgrade
            if current(conn) == target:
                return
        with self.writing() as conn:  # under the lock: two first uses do not both create the tables
            if current(conn) == target:
                return
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, target)
            self.check_schema(conn)

    def check_schema(self, conn: Connection, full: bool = True) -> None:
        """Refuse a database whose schema is not the one flaketui's migrations make: a trigger,
        a view, or (SQLite) a table or index they did not create, or a table of the wrong kind.

        A history is input (a file someone sent, a server someone else administers): a planted
        trigger runs inside every recording (one with a recursive query never ends; another
        lifts every quarantine). What is expected is derived, not written down: the objects
        that running the migrations on a fresh database makes (:func:`guard.expected_schema
        <flaketui.history.guard.expected_schema>`).

        Not ``full`` (a history at an older revision, before its upgrade): only what no migration
        makes at all (a trigger, a view, a rule) is refused; its tables and columns are compared
        once the upgrade has brought them to the newest revision."""
        if self.trusted:
            return
        with contextlib.closing(conn.connection.cursor()) as cur:
            strange = guard.unexpected(cur, self.sqlite, guard.expected_schema(derive_schema), full)
        if strange:
            kind, name, table = strange[0]
            more = f" (and {len(strange) - 1} more)" if len(strange) > 1 else ""
            on = f" on {table}" if table and table != name else ""
            raise HistoryError(f"history {shown(self.url)}: not a schema flaketui made: {kind} "
                               f"{visible(name)!s}{visible(on)}{more} is not one of its own; refused")

    # -- recording ------------------------------------------------------------------------
    def record(self, records: Iterable[RunRecord], now: dt.datetime | None = None,
               flaky_cap: float = lifecycle.DEFAULT_FLAKY_CAP) -> list[Recorded]:
        """Record runs, in order, in one transaction: a run already recorded (same content
        hash) is left as it is; either every new run is recorded or none."""
        out = []
        now = now or dt.datetime.now(dt.timezone.utc)
        with self.writing() as conn:
            for rec in records:
                out.append(_record_one(conn, rec, now, flaky_cap))
            _end_due(conn, now)
        return out

    def end_due(self, now: dt.datetime | None = None) -> list[str]:
        """End the quarantines that are due (their date came, or their clean runs were
        recorded), each with its evidence and a transition; the tasks ended. Recording does it
        too; ``history notify`` calls it so a date that came is said without a new run."""
        with self.writing() as conn:
            return _end_due(conn, now or dt.datetime.now(dt.timezone.utc))

    def latest_bad(self, task: str) -> dict[str, Any] | None:
        """``task`` 's latest flaky or failing run (None: none): ``run``, ``recorded_at``,
        ``meta``, ``trials``, ``passes``, ``errored``, ``suggested_source``, ``first_divergence``."""
        r, t, tr = schema.runs, schema.tasks, schema.task_results
        with self.reading() as conn:
            row = conn.execute(
                sa.select(r.c.name, r.c.recorded_at, r.c.meta, tr.c.trials, tr.c.passes, tr.c.errored,
                          tr.c.suggested_source, tr.c.first_divergence)
                .join(tr, tr.c.run_id == r.c.id).join(t, t.c.id == tr.c.task_id)
                .where(t.c.name == task, tr.c.trials > 0, tr.c.passes < tr.c.trials)
                .order_by(r.c.id.desc()).limit(1)).first()
        if row is None:
            return None
        return {"run": row.name, "recorded_at": _when(row.recorded_at), "meta": row.meta or {},
                "trials": row.trials, "passes": row.passes, "errored": row.errored,
                "suggested_source": row.suggested_source, "first_divergence": row.first_divergence}

    # -- transitions ------------------------------------------------------------------------
    def transitions(self, pending: bool = False) -> list[dict[str, Any]]:
        """The recorded transitions, oldest first (``pending``: only those no notification
        went out for), each with its run's name and the task's owner-matching group."""
        tr, r, t = schema.transitions, schema.runs, schema.tasks
        stmt = (sa.select(tr, r.c.name.label("run"), t.c.group_name)
                .select_from(tr.outerjoin(r, r.c.id == tr.c.run_id).outerjoin(t, t.c.name == tr.c.task))
                .order_by(tr.c.id))
        if pending:
            stmt = stmt.where(tr.c.notified_at.is_(None))
        with self.reading() as conn:
            return [{**row._mapping, "at": _when(row.at),
                     "notified_at": None if row.notified_at is None else _when(row.notified_at)}
                    for row in conn.execute(stmt)]

    def deliver(self, transition_id: int, send: Any, lease: float = 120.0,
                now: dt.datetime | None = None) -> bool | None:
        """Post transition ``transition_id`` once: claim it for ``lease`` seconds (one short
        write: nothing else waits while ``send`` runs), call ``send()``, then mark it notified
        when that returned True, or release the claim. What ``send`` returned; None when it was
        not called (already notified, or claimed by another notifier that is posting it). A
        notifier that died while posting leaves a claim that lapses after ``lease``: the
        transition is then posted again (at least once, never lost)."""
        tr = schema.transitions
        start = now or dt.datetime.now(dt.timezone.utc)
        with self.writing() as conn:
            row = conn.execute(sa.select(tr.c.claimed_until).where(tr.c.id == transition_id,
                                                                   tr.c.notified_at.is_(None))).first()
            if row is None:
                return None
            claimed = _aware(row.claimed_until)
            if claimed is not None and claimed > start:
                return None
            conn.execute(tr.update().where(tr.c.id == transition_id)
                         .values(claimed_until=start + dt.timedelta(seconds=lease)))
        ok = False
        try:
            ok = bool(send())
        finally:
            with self.writing() as conn:
                done = {"notified_at": dt.datetime.now(dt.timezone.utc)} if ok else {}
                conn.execute(tr.update().where(tr.c.id == transition_id).values(claimed_until=None, **done))
        return ok

    # -- quarantine ------------------------------------------------------------------------
    def quarantine(self, task: str, who: str, why: str, ticket: str | None = None,
                   now: dt.datetime | None = None, until: dt.datetime | None = None,
                   until_clean: int | None = None) -> None:
        """Quarantine ``task`` (a :class:`HistoryError` if it already is); with ``until`` it ends
        by itself at that time, with ``until_clean`` once that many runs recorded after now
        are clean in a row (whichever comes first)."""
        q, r = schema.quarantines, schema.runs
        now = now or dt.datetime.now(dt.timezone.utc)
        with self.writing() as conn:
            _end_due(conn, now)  # one whose date came is no longer active: this write records its end
            active = conn.execute(sa.select(q.c.who, q.c.at).where(q.c.task == task, q.c.lifted_at.is_(None))).first()
            if active is not None:
                raise HistoryError(f"{task} is already quarantined (by {active.who}, {_when(active.at)})")
            since = conn.execute(sa.select(sa.func.max(r.c.id))).scalar() or 0
            conn.execute(q.insert().values(task=task, who=who, why=why, ticket=ticket,
                                           at=now, until_at=until,
                                           until_clean=until_clean, since_run=since))

    def unquarantine(self, task: str, who: str, now: dt.datetime | None = None) -> None:
        """Lift ``task`` 's quarantine (a :class:`HistoryError` if it has none)."""
        q = schema.quarantines
        with self.writing() as conn:
            done = conn.execute(q.update().where(q.c.task == task, q.c.lifted_at.is_(None))
                                .values(lifted_at=now or dt.datetime.now(dt.timezone.utc), lifted_by=who))
            if done.rowcount == 0:
                raise HistoryError(f"{task} is not quarantined")

    # -- reading ----------------------------------------------------------------------------
    def data(self, recent: int = 10) -> HistoryData:
        """Everything ``history status`` shows, from one snapshot
        (:func:`flaketui.history.snapshot.read_data`, on this connection's driver cursor)."""
        with self.reading() as conn:
            cur = conn.connection.cursor()
            try:
                return read_data(cur, "?" if conn.dialect.paramstyle == "qmark" else "%s", recent)
            finally:
                cur.close()


def _rows(conn: Connection, stmt: sa.Select[Any]) -> list[tuple[Any, ...]]:
    """The rows of ``stmt`` as the driver's tuples. Only for columns the driver already returns
    as Python values (integers, floats, text: no SQLAlchemy result processing), where a
    SQLAlchemy row object per row would cost more than the query."""
    result = conn.execute(stmt)
    try:
        return list(result.cursor.fetchall()) if result.cursor is not None else []
    finally:
        result.close()


def _version(conn: Connection) -> str | None:
    """The revision in ``alembic_version`` (None: no such table, or no row)."""
    if not sa.inspect(conn).has_table("alembic_version"):
        return None
    return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()


def _record_one(conn: Connection, rec: RunRecord, now: dt.datetime,
                flaky_cap: float = lifecycle.DEFAULT_FLAKY_CAP) -> Recorded:
    r, tr, s = schema.runs, schema.task_results, schema.task_summary
    digest = rec.content_hash()
    n = np.asarray(rec.n, np.int64)
    passes = np.asarray(rec.passes, np.int64)
    errored = np.asarray(rec.errored, np.int64)
    if len({len(rec.tasks), n.shape[0], passes.shape[0], errored.shape[0]}) != 1:
        raise ValueError(f"run {rec.name!r}: its task columns differ in length")
    if len(set(rec.tasks)) != len(rec.tasks):
        raise ValueError(f"run {rec.name!r}: a task appears twice")
    ins = _insert(conn, r).values(name=rec.name, content_hash=digest, meta=rec.meta, recorded_at=now)
    got = conn.execute(ins.on_conflict_do_nothing(index_elements=["content_hash"]).returning(r.c.id)).first()
    if got is None:  # recorded before: nothing changes
        run_id = conn.execute(sa.select(r.c.id).where(r.c.content_hash == digest)).scalar_one()
        return Recorded(run_id, rec.name, False, len(rec.tasks))
    run_id = int(got[0])
    ids = _task_ids(conn, list(rec.tasks), None if rec.groups is None else list(rec.groups))
    from flaketui.stats.estimators import flakiness, p_hat

    ph, fl = p_hat(n, passes), flakiness(n, passes)
    src = list(rec.suggested_source) if rec.suggested_source is not None else [None] * len(ids)
    div = list(rec.first_divergence) if rec.first_divergence is not None else [None] * len(ids)
    rows = [(run_id, i, a, b, c, None if x != x else x, None if y != y else y, u, v)
            for i, a, b, c, x, y, u, v in zip(ids.tolist(), n.tolist(), passes.tolist(), errored.tolist(),
                                              ph.tolist(), fl.tolist(), src, div, strict=True)]
    _insert_many(conn, tr, ["run_id", "task_id", "trials", "passes", "errored", "p_hat", "flakiness",
                           "suggested_source", "first_divergence"], rows)
    before = _summary(conn, ids)
    after = lifecycle.fold(before, run_id, n, passes)
    update = ", ".join(f"{f} = excluded.{f}" for f in lifecycle.FIELDS)
    _insert_many(conn, s, ["task_id", *lifecycle.FIELDS],
                 list(zip(ids.tolist(), *(c.tolist() for c in after.columns()), strict=True)),
                 f"ON CONFLICT (task_id) DO UPDATE SET {update}")
    _note_transitions(conn, list(rec.tasks), before, after, run_id, now, flaky_cap)
    return Recorded(run_id, rec.name, True, len(rec.tasks))


def _note_transitions(conn: Connection, tasks: list[str], before: Evidence, after: Evidence, run_id: int,
                      now: dt.datetime, flaky_cap: float = lifecycle.DEFAULT_FLAKY_CAP) -> None:
    """Add a ``transitions`` row for each task whose computed state (at the default cap, the
    class against ``flaky_cap``) this run changed into flaky, regressed or fixed, with its
    evidence line."""
    cap = lifecycle.DEFAULT_CAP
    now_states = lifecycle.states(after, cap, flaky_cap)
    was = lifecycle.states(before, cap, flaky_cap)
    moved = lifecycle.changed(was, now_states)
    if not moved.size:
        return
    need = lifecycle.trials_needed(cap)
    bad_ids = sorted({int(after.last_bad[i]) for i in moved.tolist() if after.last_bad[i] >= 0})
    r = schema.runs
    names = dict(_rows(conn, sa.select(r.c.id, r.c.name).where(r.c.id.in_(bad_ids)))) if bad_ids else {}
    rows = []
    for i in moved.tolist():
        bad = int(after.last_bad[i])
        line = lifecycle.evidence_line(int(after.runs_seen[i]), int(after.clean_since[i]),
                                       names.get(bad) if bad >= 0 else None, str(now_states[i]), cap, need)
        rows.append({"task": tasks[i], "kind": lifecycle.NOTIFIED[str(now_states[i])], "from_state": str(was[i]),
                     "to_state": str(now_states[i]), "run_id": run_id, "evidence": line, "at": now})
    conn.execute(schema.transitions.insert(), rows)


def _end_due(conn: Connection, now: dt.datetime) -> list[str]:
    """End every active quarantine whose date has come or whose task has had its clean runs,
    with the evidence, a ``quarantine_ended`` transition each; the tasks ended."""
    q = schema.quarantines
    rows = conn.execute(sa.select(q.c.id, q.c.task, q.c.until_at, q.c.until_clean, q.c.since_run)
                        .where(q.c.lifted_at.is_(None),
                               sa.or_(q.c.until_at.is_not(None), q.c.until_clean.is_not(None)))).all()
    if not rows:
        return []
    cur = conn.connection.cursor()
    try:
        got = progress(cur, "?" if conn.dialect.paramstyle == "qmark" else "%s",
                       [(row.task, row.since_run) for row in rows])
    finally:
        cur.close()
    ended = []
    for row in rows:
        pr = got[row.task]
        until = _aware(row.until_at)
        if row.until_clean is not None and pr.clean_runs >= row.until_clean:
            why = f"{pr.line()} ({row.until_clean} clean run{'' if row.until_clean == 1 else 's'} asked)"
        elif until is not None and until <= now:
            why = f"its date {_when(until)} came; {pr.line()}"
        else:
            continue
        conn.execute(q.update().where(q.c.id == row.id)
                     .values(lifted_at=now, lifted_by="flaketui (quarantine ended by itself)", ended_evidence=why))
        conn.execute(schema.transitions.insert().values(
            task=row.task, kind=lifecycle.QUARANTINE_ENDED, from_state=lifecycle.QUARANTINED, to_state="",
            run_id=None, evidence=why, at=now))
        ended.append(row.task)
    return ended


def _insert_many(conn: Connection, table: sa.Table, columns: Sequence[str], rows: list[tuple[Any, ...]],
                 on_conflict: str = "") -> None:
    """INSERT ``rows`` (tuples of plain Python values, in ``columns`` order) into ``table`` as one
    executemany on the driver. The same SQL on both databases (SQLite ≥ 3.24 and PostgreSQL share
    ``ON CONFLICT … DO UPDATE SET c = excluded.c``), only the placeholder differs: this skips
    SQLAlchemy's per-row parameter processing, which cost more than the insert on 10,000 rows."""
    if not rows:
        return
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    sql = (f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"
           f" {on_conflict}").rstrip()
    conn.exec_driver_sql(sql, rows)


def _task_ids(conn: Connection, names: list[str], groups: list[str | None] | None = None) -> np.ndarray:
    """The ids of ``names`` (in their order), adding the tasks the history has not seen; with
    ``groups``, each task's group becomes the one given (where one is)."""
    t = schema.tasks
    stored = _rows(conn, sa.select(t.c.name, t.c.id, t.c.group_name))
    known = {name: i for name, i, _ in stored}
    group_of = dict(zip(names, groups, strict=True)) if groups is not None else {}
    missing = [name for name in dict.fromkeys(names) if name not in known]
    if groups is not None:
        was = {name: g for name, _, g in stored}
        changed = [(g, known[name]) for name, g in group_of.items()
                   if g is not None and name in known and was[name] != g]
        if changed:
            mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
            conn.exec_driver_sql(f"UPDATE {t.name} SET group_name = {mark} WHERE id = {mark}", changed)
    if missing:
        conn.execute(_insert(conn, t).on_conflict_do_nothing(index_elements=["name"]),
                     [{"name": name, "group_name": group_of.get(name)} for name in missing])
        for i in range(0, len(missing), CHUNK):
            known.update(conn.execute(sa.select(t.c.name, t.c.id).where(t.c.name.in_(missing[i:i + CHUNK]))).all())
    return np.array([known[name] for name in names], dtype=np.int64)


def _summary(conn: Connection, ids: np.ndarray) -> Evidence:
    """The evidence of tasks ``ids`` so far (an empty one for a task no run has seen)."""
    s = schema.task_summary
    ev = Evidence.empty(len(ids))
    rows = _rows(conn, sa.select(s.c.task_id, *(s.c[f] for f in lifecycle.FIELDS)))
    if rows:
        arr = _matrix(rows, 1 + len(lifecycle.FIELDS), np.int64)
        order = np.argsort(arr[:, 0])
        arr = arr[order]
        at = np.searchsorted(arr[:, 0], ids)
        at_ok = np.minimum(at, len(arr) - 1)
        found = arr[at_ok, 0] == ids
        for j, f in enumerate(lifecycle.FIELDS):
            getattr(ev, f)[found] = arr[at_ok[found], j + 1]
    return ev


def rebuild_summary(conn: Connection, fields: Sequence[str] = lifecycle.FIELDS) -> None:
    """Fold every recorded run, in recorded order, into ``task_summary`` again (the migrations
    that add the table or its columns backfill it so), writing the columns ``fields`` (a
    migration names those its revision has)."""
    r, tr, s = schema.runs, schema.task_results, schema.task_summary
    conn.execute(s.delete())
    tasks_n = conn.execute(sa.select(sa.func.max(schema.tasks.c.id))).scalar() or 0
    ev = Evidence.empty(tasks_n + 1)  # indexed by task id
    seen = np.zeros(tasks_n + 1, dtype=bool)
    for (run_id,) in conn.execute(sa.select(r.c.id).order_by(r.c.id)).all():
        got = conn.execute(sa.select(tr.c.task_id, tr.c.trials, tr.c.passes).where(tr.c.run_id == run_id)).all()
        if not got:
            continue
        arr = np.array(got, dtype=np.int64)
        idx = arr[:, 0]
        sub = Evidence(*(c[idx] for c in ev.columns()))
        new = lifecycle.fold(sub, run_id, arr[:, 1], arr[:, 2])
        for f in lifecycle.FIELDS:
            getattr(ev, f)[idx] = getattr(new, f)
        seen[idx] = True
    ids = np.flatnonzero(seen)
    if ids.size:
        cols = [getattr(ev, f)[ids].tolist() for f in fields]
        conn.execute(s.insert(), [{"task_id": i, **dict(zip(fields, vals, strict=True))}
                                  for i, *vals in zip(ids.tolist(), *cols, strict=True)])


def _insert(conn: Connection, table: sa.Table) -> Any:
    """The dialect's INSERT (for ON CONFLICT): SQLite's or PostgreSQL's."""
    if conn.dialect.name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        from sqlalchemy.dialects.postgresql import insert
    return insert(table)


def _engine(url: str, timeout: float) -> Engine:
    """An engine for ``url``: ``postgresql://`` through psycopg 3; SQLite with WAL, a busy
    timeout and the BEGIN each transaction asks for."""
    u = _parse_url(url)
    backend = u.get_backend_name()
    if backend in ("postgresql", "postgres"):
        if u.get_driver_name() not in ("", "psycopg", "psycopg2"):
            raise HistoryError(f"history {shown(url)}: postgresql:// goes through psycopg (give postgresql://…)")
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise HistoryError(f"history {shown(url)}: PostgreSQL needs its driver (psycopg): "
                               "pip install 'flaketui[postgres]'") from None
        u = u.set(drivername="postgresql+psycopg")
        ms = int(guard.STATEMENT_SECONDS * 1000)
        try:
            return sa.create_engine(u, connect_args={"connect_timeout": max(1, int(timeout)),
                                                     "options": f"-c statement_timeout={ms}"},
                                    pool_pre_ping=False)
        except ImportError as exc:  # the driver is an extra: say how to get it, in one line
            raise HistoryError(f"history {shown(url)}: PostgreSQL needs its driver (psycopg): "
                               "pip install 'flaketui[postgres]'") from exc
        except (sa.exc.ArgumentError, ValueError, TypeError) as exc:
            raise HistoryError(f"history {shown(url)}: {str(exc).splitlines()[0]}") from None
    if backend != "sqlite":
        raise HistoryError(f"history {shown(url)}: only sqlite:/// and postgresql:// are supported")
    if u.get_driver_name() not in ("", "pysqlite") or u.query:
        raise HistoryError(f"history {shown(url)}: give a plain sqlite:///PATH (no driver, no ?options)")
    db = u.database or ""
    if db in ("", ":memory:") or db.startswith("file:"):
        raise HistoryError(f"history {shown(url)}: give a file (sqlite:///PATH)")
    if "\0" in db:
        raise HistoryError(f"history {shown(url)}: the path holds a NUL character")
    path = Path(db).expanduser()
    try:
        refuse_link(path, "history database")
    except LinkRefused as exc:
        raise HistoryError(f"history {shown(url)}: {exc}") from None
    if _is_default(path):
        path.parent.mkdir(parents=True, exist_ok=True)  # the default folder is made on first use
    elif not path.parent.is_dir():
        raise HistoryError(f"history {shown(url)}: folder {path.parent} does not exist")
    engine = sa.create_engine(u.set(database=str(path)), connect_args={"timeout": timeout})
    busy_ms = int(timeout * 1000)

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # the driver begins nothing itself: _begin does
        guard.bound_statements(dbapi_conn)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {busy_ms}")
        _wal(cur, timeout)
        cur.execute("PRAGMA foreign_keys = ON")
        cur.execute("PRAGMA synchronous = NORMAL")  # with WAL: durable at each checkpoint, never corrupt
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql(f"BEGIN {conn.get_execution_options().get('sqlite_begin', 'DEFERRED')}")

    return engine


def _parse_url(url: str) -> URL:
    """``url`` parsed (SQLAlchemy's :func:`make_url`), anything it cannot read a one-line
    :class:`HistoryError`."""
    try:
        return make_url(url)
    except (sa.exc.ArgumentError, ValueError, TypeError) as exc:
        raise HistoryError(f"history {shown(url)} is not a database URL (sqlite:///PATH or "
                           f"postgresql://USER@HOST/DB): {str(exc).splitlines()[0] if str(exc) else exc}") from None


def _wal(cur: Any, timeout: float) -> None:
    """Put the database in WAL mode (once: it stays). Changing the journal mode needs the
    database to itself, and SQLite does not wait for that through the busy timeout: a second
    recorder connecting while the first creates the history got "database is locked" at once.
    So it is asked first, and the change retried, backing off, until ``timeout``."""
    import sqlite3
    import time

    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            if str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                cur.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(2 * delay, 0.25)


def _is_default(path: Path) -> bool:
    if os.environ.get(ENV):
        return False
    try:
        import platformdirs

        return path.parent == platformdirs.user_data_path("flaketui")
    except ImportError:
        return False


def _one_line(exc: sa.exc.DBAPIError, timeout: float) -> str:
    """The database's complaint in one line (a locked SQLite file says how long it waited)."""
    text = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc).splitlines()[0]
    if "database is locked" in text:
        return f"database is locked (another writer held it for over {timeout:g} s)"
    if "unable to open database file" in text:
        return "cannot open the database file"
    if isinstance(exc, sa.exc.OperationalError) and "connection" in text.lower():
        return f"cannot connect: {text}"
    return text


def derive_schema() -> set[tuple[str, str, str]]:
    """The objects (kind, name, table) the migrations make, found by running them on a fresh
    SQLite database in a temporary folder (:func:`flaketui.history.guard.expected_schema`)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="flaketui-schema-") as folder:
        fresh = Store(f"sqlite:///{Path(folder) / 'fresh.sqlite'}")
        fresh.trusted = True
        try:
            fresh.migrate()  # its own check finds an empty database: nothing to compare yet
            with fresh.reading() as conn, contextlib.closing(conn.connection.cursor()) as cur:
                return guard.objects(cur, sqlite=True)
        finally:
            fresh.close()
