"""Each task's group in the history: recorded from the log, matched by the owners' patterns as
the task id is, carried through the migration from the schema without groups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from flaketui.history import Store, open_store  # noqa: E402
from flaketui.history.owners import owners_of, parse_owners  # noqa: E402
from flaketui.history.status import status_doc  # noqa: E402
from tests.helpers.history import cli  # noqa: E402
from tests.helpers.history_checks import check_groups, run  # noqa: E402


def test_owner_patterns_match_the_group_too() -> None:
    """Owner patterns match a task's group too."""
    rules = parse_owners("* @all\nbilling @billing\nt-3 @three\n")
    got = owners_of(["t-1", "t-2", "t-3", "billing"], rules, ["billing", None, "billing", None])
    assert got == [("@billing",), ("@all",), ("@three",), ("@billing",)]  # the last matching line wins
    assert owners_of(["t-1"], rules) == [("@all",)]  # no groups: ids only


def test_groups_on_sqlite(tmp_path: Path) -> None:
    """Groups are recorded and read on SQLite."""
    with open_store(f"sqlite:///{tmp_path / 'h.sqlite'}") as store:
        check_groups(store)


def test_migration_from_0002_keeps_everything_and_records_groups_after(tmp_path: Path) -> None:
    """Migrating from 0002 keeps everything and records groups after."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    old = Store(url)
    old.migrate(to="0002")
    with old.writing() as conn:  # what flaketui at revision 0002 wrote: tasks without a group
        import datetime as dt

        conn.exec_driver_sql("INSERT INTO tasks (id, name) VALUES (1, 't-a')")
        conn.exec_driver_sql("INSERT INTO runs (id, name, content_hash, meta, recorded_at) VALUES (?, ?, ?, ?, ?)",
                             (1, "r0", "h0", "{}", dt.datetime(2026, 1, 1).isoformat()))
        conn.exec_driver_sql("INSERT INTO task_results (run_id, task_id, trials, passes, errored, p_hat) "
                             "VALUES (1, 1, 4, 2, 0, 0.5)")
        from flaketui.history.lifecycle import FIELDS
        from flaketui.history.store import rebuild_summary

        rebuild_summary(conn, FIELDS[:7])  # the columns revision 0002 has
    old.close()
    with open_store(url) as store:
        assert store.revision() == "0005"
        doc = status_doc(store.data())
        assert doc["tasks"][0]["group"] is None and doc["tasks"][0]["state"] == "undetermined"
        store.record([run("r1", ["billing", None, None])])
        rows = {t["task"]: t for t in status_doc(store.data())["tasks"]}
        assert rows["t-a"]["group"] == "billing" and rows["t-a"]["runs_seen"] == 2


@pytest.mark.slow
def test_cli_records_the_logs_groups(tmp_path: Path) -> None:
    """history record records the log's groups."""
    log = tmp_path / "r.jsonl"
    log.write_text("".join(json.dumps({"run": "r", "task": t, "trial": i, "passed": i < p, "group": g}) + "\n"
                           for t, g, p in (("a", "pay", 1), ("b", "find", 2)) for i in range(2)))
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert cli("history", "record", str(log), "--history", url, cwd=tmp_path).returncode == 0
    owners = tmp_path / "OWNERS"
    owners.write_text("pay @pay-team\n", encoding="utf-8")
    done = cli("history", "status", "--history", url, "--owners", str(owners), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {t["task"]: t for t in json.loads(done.stdout)["tasks"]}
    assert (rows["a"]["group"], rows["a"]["owner"]) == ("pay", ["@pay-team"])
    assert (rows["b"]["group"], rows["b"]["owner"]) == ("find", [])
