"""A history is input: the checks on a database flaketui did not necessarily make.

A history may be a file someone sent or a server someone else runs. :func:`unexpected` lists
what in its schema flaketui's own migrations do not make (a trigger, a view, a rule, a column
default, or in a SQLite file any table or index), compared with :func:`expected_schema`, which is
derived by running the migrations on a fresh database, not written down (a migration added later
is expected without a list to keep in step). :func:`bound_statements` stops any SQLite statement
that runs over :data:`STATEMENT_SECONDS`. Everything here works on a DB-API connection or cursor,
so the store (through SQLAlchemy) and a direct ``sqlite3`` reader share it. No Textual, no Rich.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from flaketui.safefile import atomic_write, refuse_link

STATEMENT_SECONDS = 300.0
"""The longest one statement may run (SQLite: a progress handler interrupts it; PostgreSQL:
``statement_timeout``). A history is input: a planted trigger or view must not make a command
run until killed. Far above what recording or reading 100,000 tasks takes."""

Objects = set[tuple[str, str, str]]
"""Schema objects as (kind, name, table)."""

_PG_OBJECTS = (
    "SELECT 'table', tablename, tablename FROM pg_tables WHERE schemaname = current_schema() "
    "UNION ALL SELECT 'view', viewname, viewname FROM pg_views WHERE schemaname = current_schema() "
    "UNION ALL SELECT 'view', matviewname, matviewname FROM pg_matviews WHERE schemaname = current_schema() "
    "UNION ALL SELECT 'rule', rulename, tablename FROM pg_rules WHERE schemaname = current_schema() "
    "UNION ALL SELECT 'trigger', t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE NOT t.tgisinternal AND s.nspname = current_schema() "
    "UNION ALL SELECT 'column default', table_name || '.' || column_name || ' = ' || column_default, table_name "
    "FROM information_schema.columns WHERE table_schema = current_schema() AND column_default IS NOT NULL "
    "AND left(column_default, 8) <> 'nextval('"
)


def objects(cur: Any, sqlite: bool) -> Objects:
    """The schema objects of the database of DB-API cursor ``cur``: SQLite's ``sqlite_master``
    (its automatic indexes aside) and each table's columns (a column default can change what
    is written: ``lifted_at`` defaulting to now lifts every quarantine as it is set); PostgreSQL's
    tables, views, rules, user triggers and column defaults in the current schema."""
    if not sqlite:
        cur.execute(_PG_OBJECTS)
        return {(str(k), str(n), str(t)) for k, n, t in cur.fetchall()}
    cur.execute("SELECT type, name, tbl_name FROM sqlite_master")
    out = {(str(k), str(n), str(t)) for k, n, t in cur.fetchall() if not str(n).startswith("sqlite_autoindex_")}
    for kind, name, _ in list(out):
        if kind == "table":
            cur.execute("SELECT * FROM pragma_table_info(?)", (name,))
            for _cid, col, typ, notnull, default, pk in cur.fetchall():
                out.add(("column", f"{name}.{col} {str(typ).upper()} not null={notnull} default={default} key={pk}",
                         name))
    return out


def unexpected(cur: Any, sqlite: bool, want: Objects, full: bool = True) -> list[tuple[str, str, str]]:
    """What in the schema of ``cur`` 's database is not in ``want`` (:func:`expected_schema`: what
    flaketui's migrations make), sorted (empty:
    the schema is flaketui's, or the database is empty). SQLite: the file is the history's alone,
    so everything counts; PostgreSQL: only what touches flaketui's tables (other applications'
    tables may share the schema). Not ``full`` (a history at an older revision, before its
    upgrade): only what no migration makes at all (a trigger, a view, a rule, a default); tables
    and columns are compared once the upgrade has brought them to the newest revision."""
    found = objects(cur, sqlite)
    if not found:
        return []
    tables = {name for kind, name, _ in want if kind == "table"}
    return sorted(o for o in found - want if (sqlite or o[1] in tables or o[2] in tables)
                  and (full or o[0] not in ("table", "index", "column")))


_EXPECTED: Objects | None = None


def kept_schema() -> Objects | None:
    """The schema :func:`expected_schema` derived, kept in this process or in the cache folder
    (None: not derived yet; a reader without SQLAlchemy then leaves the history to the store)."""
    global _EXPECTED
    if _EXPECTED is None:
        _EXPECTED = _read_schema_cache(schema_cache_path())
    return _EXPECTED


def expected_schema(derive: Callable[[], Objects]) -> Objects:
    """The objects that flaketui's migrations make on a fresh SQLite database: ``derive()``
    (:func:`flaketui.history.store.derive_schema`), or what an earlier call kept.

    Running them costs about half a second, so the answer is kept once per process and in the
    user's cache folder (``schema/KEY.json``: platformdirs' user cache path, which honours
    ``$XDG_CACHE_HOME``), under a key that changes with any migration file, SQLAlchemy's version
    or SQLite's: a new migration is derived anew."""
    global _EXPECTED
    kept = kept_schema()
    if kept is not None:
        return kept
    _EXPECTED = derived = derive()
    path = schema_cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, orjson.dumps(sorted(derived)))
    except OSError:
        pass  # kept for this process only
    return derived


def schema_cache_path() -> Path:
    """``schema/KEY.json`` in flaketui's user cache folder; KEY hashes every migration file and the
    SQLAlchemy and SQLite versions (what the derived schema depends on)."""
    import sqlite3
    from importlib.metadata import version

    import platformdirs

    # the version from the package's metadata: the fast status path must not import SQLAlchemy
    migrations = Path(__file__).with_name("migrations")
    h = hashlib.sha256(f"{version('sqlalchemy')}\0{sqlite3.sqlite_version}\0".encode())
    for path in sorted(migrations.rglob("*.py")):
        h.update(path.relative_to(migrations).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return platformdirs.user_cache_path("flaketui") / "schema" / f"{h.hexdigest()[:32]}.json"


def _read_schema_cache(path: Path) -> Objects | None:
    """The schema kept at ``path`` (None: none, a link, too big, or not a list of 3 texts)."""
    try:
        refuse_link(path)
        if path.stat().st_size > 1 << 20:
            return None
        rows = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(rows, list) or not all(
            isinstance(r, list) and len(r) == 3 and all(isinstance(x, str) for x in r) for r in rows):
        return None
    return {(r[0], r[1], r[2]) for r in rows}


def bound_statements(dbapi_conn: Any) -> None:
    """Stop any statement of SQLite connection ``dbapi_conn`` that runs over
    :data:`STATEMENT_SECONDS`: SQLite's progress handler, called every 10,000 virtual-machine
    steps, returns non-zero to interrupt the statement (a planted trigger's or view's endless
    recursive query ends with "interrupted"). The clock starts anew at each statement SQLite
    begins (its trace callback)."""
    state = {"since": time.monotonic()}

    def handler() -> int:
        return 1 if time.monotonic() - state["since"] > STATEMENT_SECONDS else 0

    def trace(_statement: str) -> None:
        state["since"] = time.monotonic()

    dbapi_conn.set_trace_callback(trace)
    dbapi_conn.set_progress_handler(handler, 10_000)
