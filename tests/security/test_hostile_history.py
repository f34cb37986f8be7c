"""A history database is input: a link, a planted trigger, view or column default, rows of the
wrong type and bad URLs each end in one line (exit 2), never a traceback or a command that
runs until killed."""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

from flaketui.history import HistoryError, guard, open_store, store  # noqa: E402
from tests.helpers.cli import run  # noqa: E402
from tests.helpers.history import run_of  # noqa: E402
from tests.helpers.postgres import pg_server, pg_url  # noqa: E402, F401  (fixtures)


def made(tmp_path: Path) -> Path:
    """A history flaketui made, with one run recorded and one quarantine."""
    db = tmp_path / "h.sqlite"
    with open_store(f"sqlite:///{db}") as s:
        s.record([run_of(1, {"a": (4, 2), "b": (4, 4)})])
        s.quarantine("a", "me", "flaky")
    return db


def test_dangling_link_is_refused(tmp_path):
    """A dangling link at the history's name is refused; nothing is created where it points."""
    target = tmp_path / "elsewhere.sqlite"
    (tmp_path / "h.sqlite").symlink_to(target)
    code, _, err = run("history", "status", "--history", f"sqlite:///{tmp_path / 'h.sqlite'}")
    assert code == 2 and "symbolic link" in err and not target.exists()


def test_link_to_empty_file_is_refused(tmp_path):
    """A link to an existing empty file is refused: the file stays empty."""
    target = tmp_path / "victim"
    target.write_bytes(b"")
    (tmp_path / "h.sqlite").symlink_to(target)
    with pytest.raises(HistoryError, match="symbolic link"):
        open_store(f"sqlite:///{tmp_path / 'h.sqlite'}")
    assert target.read_bytes() == b""


PLANTS = {
    "endless trigger": "CREATE TRIGGER spin AFTER INSERT ON runs BEGIN "
                       "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                       "SELECT x FROM c); END",
    "lifting trigger": "CREATE TRIGGER lift AFTER INSERT ON quarantines BEGIN "
                       "UPDATE quarantines SET lifted_at = '2020-01-01' WHERE id = new.id; END",
    "view": "CREATE VIEW everything AS SELECT * FROM tasks",
    "table": "CREATE TABLE stolen (x)",
    "index": "CREATE INDEX ix_extra ON tasks (group_name)",
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_planted_schema_is_refused(tmp_path, plant):
    """A trigger, view, table or index flaketui's migrations did not make is refused in one line,
    before any statement of flaketui's runs."""
    db = made(tmp_path)
    with sqlite3.connect(db) as c:
        c.execute(PLANTS[plant])
    code, _, err = run("history", "status", "--history", f"sqlite:///{db}")
    assert code == 2 and "not a schema flaketui made" in err, err
    assert len(err.strip().splitlines()) == 1


def test_trigger_in_an_older_history_is_refused_before_its_upgrade(tmp_path):
    """A history at an older revision with a planted trigger is refused before the upgrade runs
    (its migrations' statements would fire the trigger): it stays at its revision."""
    db = tmp_path / "old.sqlite"
    s = store.Store(f"sqlite:///{db}")
    s.migrate("0001")
    s.close()
    with sqlite3.connect(db) as c:
        c.execute(PLANTS["lifting trigger"])
    with pytest.raises(HistoryError, match="not a schema flaketui made"):
        open_store(f"sqlite:///{db}")
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT version_num FROM alembic_version").fetchall() == [("0001",)]


def test_column_default_that_lifts_quarantines_is_refused(tmp_path):
    """A quarantines table remade so that lifted_at defaults to now (every quarantine lifted as
    it is set) is refused."""
    db = made(tmp_path)
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA writable_schema = ON")
        sql = c.execute("SELECT sql FROM sqlite_master WHERE name = 'quarantines'").fetchone()[0]
        forged = sql.replace("lifted_at DATETIME", "lifted_at DATETIME DEFAULT CURRENT_TIMESTAMP")
        assert forged != sql
        c.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'quarantines'", (forged,))
    code, _, err = run("history", "quarantine", "b", "--why", "x", "--history", f"sqlite:///{db}")
    assert code == 2 and "not a schema flaketui made" in err, err


def test_expected_schema_is_derived_from_the_migrations():
    """The schema compared against is the one the migrations make: every table in schema.py and
    its index, no trigger or view."""
    from flaketui.history import schema

    want = guard.expected_schema(store.derive_schema)
    assert {n for k, n, _ in want if k == "table"} >= set(schema.metadata.tables)
    assert not {k for k, _, _ in want} - {"table", "index", "column"}


def test_kept_schema_is_the_derived_one(tmp_path, monkeypatch):
    """The schema kept in the cache folder is the one running the migrations gives; a kept file
    that is not a list of (kind, name, table) is derived again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(guard, "_EXPECTED", None)
    path = guard.schema_cache_path()
    assert str(path).startswith(str(tmp_path / "cache"))
    assert guard.expected_schema(store.derive_schema) == store.derive_schema() and path.is_file()
    path.write_bytes(b'[["trigger"]]')
    monkeypatch.setattr(guard, "_EXPECTED", None)
    assert guard.expected_schema(store.derive_schema) == store.derive_schema()


def test_endless_statement_is_stopped(tmp_path, monkeypatch):
    """A statement that runs over the bound is interrupted and said in one line (here an endless
    recursive query, with the bound lowered)."""
    monkeypatch.setattr(guard, "STATEMENT_SECONDS", 0.5)
    s = open_store(f"sqlite:///{made(tmp_path)}")
    t0 = time.monotonic()
    with pytest.raises(HistoryError, match="ran over"), s.reading() as conn:
        conn.exec_driver_sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                             "SELECT count(*) FROM c").all()
    assert time.monotonic() - t0 < 5
    s.close()


BAD_ROWS = {
    "text count": "UPDATE task_summary SET runs_seen = 'lots'",
    "huge count": "UPDATE task_summary SET last_run = 1e300",
    "bad date": "UPDATE quarantines SET at = 'yesterday-ish'",
    "blob task name": "UPDATE tasks SET name = x'ff00fe' WHERE name = 'b'",
    "text p_hat": "UPDATE task_results SET p_hat = 'half'",
}


@pytest.mark.parametrize("bad", sorted(BAD_ROWS))
def test_rows_of_the_wrong_type(tmp_path, bad):
    """A row whose value is not of its column's type ends history status in one line (exit 2)
    or is shown as text, never a traceback, in every format."""
    db = made(tmp_path)
    with sqlite3.connect(db) as c:
        c.execute(BAD_ROWS[bad])
    for fmt in ("table", "json"):
        code, _, err = run("history", "status", "--format", fmt, "--history", f"sqlite:///{db}")
        assert code in (0, 2), err
        assert code == 0 or len(err.strip().splitlines()) == 1


BAD_URLS = ["sqlite+aiosqlite:///x.sqlite", "sqlite+pysqlcipher:///x.sqlite", "sqlite:///x.sqlite?timeout=abc",
            "postgresql://u@[::1/x", "sqlite:///%00", "sqlite:///a\x00b", "mysql://u@h/d", "::::", "sqlite://",
            "postgresql+asyncpg://u@h/d", "sqlite:///file:x?mode=memory&uri=true"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_bad_history_urls(tmp_path, url, monkeypatch):
    """A --history URL flaketui cannot use is one line, exit 2."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run("history", "status", "--history", url)
    assert code == 2 and err.startswith("flaketui: error:") and len(err.strip().splitlines()) == 1, err


def test_missing_driver_is_a_hint(tmp_path, monkeypatch):
    """postgresql:// without psycopg installed: a one-line hint to install it, exit 2."""
    monkeypatch.setitem(sys.modules, "psycopg", None)
    code, _, err = run("history", "status", "--history", "postgresql://ci:pw@db.invalid/h")
    assert code == 2 and "psycopg" in err and "pw" not in err, err


def test_password_never_shown(tmp_path):
    """A history error names the URL with its password masked."""
    code, _, err = run("history", "status", "--history", "postgresql://ci:s3cr3t@127.0.0.1:1/h", "--wait", "1")
    assert code == 2 and "s3cr3t" not in err, err


def test_made_history_still_opens(tmp_path):
    """A history flaketui made opens and reads as before (the checks refuse nothing of its own)."""
    db = made(tmp_path)
    code, out, err = run("history", "status", "--format", "json", "--history", f"sqlite:///{db}")
    assert code == 0, err
    assert os.path.getsize(db) > 0 and '"a"' in out


@pytest.mark.parametrize("module", ["sqlalchemy", "alembic"])
def test_missing_sqlalchemy_is_a_hint(tmp_path, monkeypatch, module):
    """History commands where SQLAlchemy or Alembic is not installed: a one-line install hint,
    exit 2 (not 1, the failed gate's code), no traceback."""
    import flaketui.history

    monkeypatch.setitem(sys.modules, module, None)  # import sqlalchemy / alembic: ModuleNotFoundError
    monkeypatch.delitem(sys.modules, "flaketui.history.store")  # imported again, as on a fresh start
    monkeypatch.delattr(flaketui.history, "store")
    code, _, err = run("history", "status", "--history", f"sqlite:///{tmp_path / 'h.sqlite'}")
    assert code == 2 and "pip install" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_postgresql_planted_trigger_and_view_are_refused(request):
    """PostgreSQL: a trigger on a flaketui table, a view in its place or a column default that
    lifts quarantines is refused in one line; another application's table beside them is not."""
    pytest.importorskip("psycopg")
    import psycopg

    url = request.getfixturevalue("pg_url")
    with open_store(url) as s:
        s.record([run_of(1, {"a": (4, 2)})])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE other_app (x int)")  # someone else's table in the same schema
    with open_store(url) as s:
        s.quarantine("a", "me", "why")
    plants = ["CREATE FUNCTION f() RETURNS trigger AS $$ BEGIN RETURN NEW; END $$ LANGUAGE plpgsql; "
              "CREATE TRIGGER t BEFORE INSERT ON runs FOR EACH ROW EXECUTE FUNCTION f()",
              "ALTER TABLE quarantines ALTER COLUMN lifted_at SET DEFAULT now()",
              "CREATE RULE r AS ON INSERT TO quarantines DO ALSO NOTIFY x"]
    for plant, undo in zip(plants, ["DROP TRIGGER t ON runs", "ALTER TABLE quarantines ALTER COLUMN lifted_at "
                                    "DROP DEFAULT", "DROP RULE r ON quarantines"], strict=True):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(plant)
        code, _, err = run("history", "status", "--history", url)
        assert code == 2 and "not a schema flaketui made" in err, (plant, err)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(undo)
    code, _, err = run("history", "status", "--history", url)
    assert code == 0, err


def test_guard_on_a_plain_sqlite3_connection(tmp_path, monkeypatch):
    """The checks work on a stdlib sqlite3 connection too (a reader that skips SQLAlchemy): a
    planted view is found, an endless query over it is stopped."""
    db = made(tmp_path)
    with sqlite3.connect(db) as c:
        assert guard.unexpected(c.cursor(), True, guard.expected_schema(store.derive_schema)) == []
        c.execute("CREATE VIEW spin AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                  "SELECT x FROM c")
    monkeypatch.setattr(guard, "STATEMENT_SECONDS", 0.5)
    con = sqlite3.connect(db)
    try:
        assert guard.unexpected(con.cursor(), True, guard.kept_schema()) == [("view", "spin", "spin")]
        guard.bound_statements(con)
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):
            con.execute("SELECT count(*) FROM spin").fetchall()
    finally:
        con.close()
