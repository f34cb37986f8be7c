"""``history status`` on SQLite reads through stdlib sqlite3, read-only, without SQLAlchemy or
Alembic, and reads exactly what the store reads; anything it cannot read falls back to the store."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

from flaketui.history import Store, open_store  # noqa: E402
from flaketui.history.snapshot import read_sqlite  # noqa: E402
from tests.helpers.cli import run  # noqa: E402
from tests.helpers.history import record_sequences, run_of  # noqa: E402


def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


def test_fast_read_equals_the_store_read(tmp_path: Path) -> None:
    """Same runs, tasks, evidence, recent p̂ and quarantines (one ending by clean runs) by both paths."""
    store = record_sequences(url(tmp_path))
    store.quarantine("regressed", "me", "why", ticket="T-1", until_clean=3)
    store.quarantine("failing", "me", "why", until=dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc))
    store.record([run_of(9, {"regressed": (4, 4), "new": (3, 1)})])
    slow = store.data(recent=4)
    store.close()
    fast = read_sqlite(url(tmp_path), 4)
    assert fast is not None
    assert (fast.runs, fast.run_names, fast.tasks, fast.groups, fast.recent_runs) == (
        slow.runs, slow.run_names, slow.tasks, slow.groups, slow.recent_runs)
    assert all(np.array_equal(a, b) for a, b in zip(fast.evidence.columns(), slow.evidence.columns(), strict=True))
    assert np.array_equal(fast.recent_p_hat, slow.recent_p_hat, equal_nan=True)
    assert fast.quarantines == slow.quarantines
    assert fast.quarantines["regressed"]["progress"] == "4 clean trials over 1 run since quarantined"


def test_what_the_fast_path_cannot_read_falls_back(tmp_path: Path) -> None:
    """No file, an older schema, or a URL with options: None, and the command still answers."""
    assert read_sqlite(url(tmp_path), 10) is None
    old = Store(url(tmp_path))
    old.migrate("0003")
    old.close()
    assert read_sqlite(url(tmp_path), 10) is None
    code, out, _ = run("history", "status", "--history", url(tmp_path), "--format", "json")
    assert code == 0 and json.loads(out)["runs"] == 0
    with open_store(url(tmp_path)) as store:
        assert store.revision() == "0005"
        store.record([run_of(0, {"t": (4, 2)})])
    assert read_sqlite(url(tmp_path) + "?timeout=3", 10) is None
    assert read_sqlite(url(tmp_path), 10) is not None


@pytest.mark.slow
def test_status_command_imports_no_sqlalchemy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole ``history status`` process on a SQLite history imports neither SQLAlchemy nor Alembic."""
    from flaketui.history import guard

    # The schema an earlier test derived is kept in this process, not in this test's cache folder
    # (conftest gives each test its own): forget it, so that recording writes the cache the
    # command reads, as a user's first recording does.
    monkeypatch.setattr(guard, "_EXPECTED", None)
    record_sequences(url(tmp_path)).close()
    got = subprocess.run([sys.executable, "-X", "importtime", "-m", "flaketui", "history", "status",
                          "--history", url(tmp_path)], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and "regressed" in got.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in got.stderr.splitlines() if "|" in line]
    assert "flaketui.history.snapshot" in imported
    assert not [m for m in imported if m.split(".")[0] in ("sqlalchemy", "alembic")]


def test_a_row_of_the_wrong_type_is_one_line_by_either_path(tmp_path: Path) -> None:
    """A task name stored as a blob: the sqlite3 path leaves it to the store, which refuses it in one line, exit 2."""
    import sqlite3

    with open_store(url(tmp_path)) as store:
        store.record([run_of(0, {"t": (4, 2)})])
    con = sqlite3.connect(tmp_path / "history.sqlite")
    con.execute("UPDATE tasks SET name = x'1b5d303b7069776e6564'")
    con.commit()
    con.close()
    assert read_sqlite(url(tmp_path), 10) is None
    code, out, err = run("history", "status", "--history", url(tmp_path))
    assert code == 2 and "not text" in err and len(err.strip().splitlines()) == 1
