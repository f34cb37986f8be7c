"""``history status`` grouped by owner (``by_owner`` in JSON, a line per owner in the table), and
reading an owners file without importing SQLAlchemy (the app's ``--owners``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from flaketui.cli.history import table_lines  # noqa: E402
from flaketui.history import open_store  # noqa: E402
from flaketui.history.owners import parse_owners  # noqa: E402
from flaketui.history.status import status_doc  # noqa: E402
from tests.helpers.history import cli, run_of, write_log  # noqa: E402

RULES = "* @all\npay/* @pay @ops\npay/legacy\n"
"""Everyone is @all's; pay/ is @pay's and @ops's; pay/legacy has no owner (the last match wins)."""


def test_by_owner_counts_every_task_under_each_of_its_owners(tmp_path: Path) -> None:
    """By owner counts every task under each of its owners."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    with open_store(url) as store:
        store.record([run_of(1, {"pay/card": (10, 5), "pay/legacy": (10, 0), "search": (10, 10),
                                 "pay/refund": (10, 10)})])
        data = store.data()
    doc = status_doc(data, rules=parse_owners(RULES), states=["flaky"])
    assert [t["task"] for t in doc["tasks"]] == ["pay/card"]  # the filter picks the tasks shown...
    assert doc["by_owner"] == [  # ...the groups, like counts, are over every task
        {"owner": "@pay", "tasks": 2, "counts": {"stable": 1, "flaky": 1}},
        {"owner": "@ops", "tasks": 2, "counts": {"stable": 1, "flaky": 1}},
        {"owner": "@all", "tasks": 1, "counts": {"stable": 1}},
        {"owner": None, "tasks": 1, "counts": {"failing": 1}},
    ]
    lines = table_lines(doc)
    assert "owner @pay: 2 tasks (1 stable, 1 flaky)" in lines
    assert "owner (no owner): 1 tasks (1 failing)" in lines
    assert "by_owner" not in status_doc(data)  # no owners file: no groups


@pytest.mark.slow
def test_cli_by_owner_and_hostile_owner_names(tmp_path: Path) -> None:
    """status by owner works and shows hostile owner names as text."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    log = write_log(tmp_path / "r1.jsonl", "r1", {"a": (20, 10), "b": (4, 4)})  # a: flaky by its 20 trials
    assert cli("history", "record", str(log), "--history", url, cwd=tmp_path).returncode == 0
    owners = tmp_path / "OWNERS"
    owners.write_text("a @x\x1b[31m\nb @y\n", encoding="utf-8")
    done = cli("history", "status", "--history", url, "--owners", str(owners), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [(g["owner"], g["counts"]) for g in doc["by_owner"]] == [("@x\x1b[31m", {"flaky": 1}),
                                                                    ("@y", {"stable": 1})]
    done = cli("history", "status", "--history", url, "--owners", str(owners), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "owner @y: 1 tasks (1 stable)" in done.stdout


def test_reading_owners_does_not_import_sqlalchemy() -> None:
    """Reading an owners file does not import SQLAlchemy."""
    code = ("import sys; from flaketui.history.owners import parse_owners; parse_owners('* @a');"
            "import flaketui.history; print('sqlalchemy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
