"""The history on the README's install: SQLite needs nothing beyond the core dependencies, and
a PostgreSQL history without its driver (the postgres extra) is one line saying how to get it."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import BASELINE, ROOT
from tests.helpers.cli import run


def test_sqlalchemy_and_alembic_are_core_dependencies() -> None:
    """SQLAlchemy and Alembic are in the core dependencies; PostgreSQL's driver only in an extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = " ".join(project["dependencies"])
    assert "sqlalchemy" in core and "alembic" in core and "psycopg" not in core
    assert any("psycopg" in d for d in project["optional-dependencies"]["postgres"])


def test_a_missing_postgres_driver_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without psycopg a postgresql:// history is one line naming the extra, exit 2, never a traceback."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now raises ImportError
    code, out, err = run("history", "status", "--history", "postgresql://ci@127.0.0.1:1/flaketui", "--wait", "1")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "flaketui: error: history postgresql://***@127.0.0.1:1/flaketui: PostgreSQL needs its driver (psycopg): "
        "pip install 'flaketui[postgres]'"]


def test_report_record_on_sqlite(tmp_path: Path) -> None:
    """report --record into a SQLite history works with the core dependencies alone."""
    code, _, err = run("report", BASELINE, "--record", "--history", f"sqlite:///{tmp_path / 'h.sqlite'}")
    assert code == 0, err
    assert (tmp_path / "h.sqlite").is_file()
