"""The history on a real PostgreSQL server the tests start and stop (:mod:`tests.helpers.postgres`:
Debian's ``postgresql`` package). Without a server binary these tests skip.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")
psycopg = pytest.importorskip("psycopg")

pytestmark = pytest.mark.slow  # each module run starts a PostgreSQL server

from flaketui.history import open_store  # noqa: E402
from flaketui.history.status import status_doc  # noqa: E402
from flaketui.history.store import Store, rebuild_summary  # noqa: E402
from tests.helpers.history import (  # noqa: E402
    RECORDER,
    SEQUENCES,
    by_task,
    cli,
    counts,
    expected_transitions,
    run_of,
    same,
    write_log,
)
from tests.helpers.postgres import pg_server, pg_url  # noqa: E402, F401  (fixtures)


def test_six_runs_give_each_state_after_each_run(pg_url: str) -> None:
    """On PostgreSQL six runs give each state after each run."""
    with open_store(pg_url) as store:
        for i in range(6):
            store.record([run_of(i + 1, {task: seq[0][i] for task, seq in SEQUENCES.items()})])
            got = {t: row["state"] for t, row in by_task(status_doc(store.data())).items()}
            assert got == {t: seq[1][i] for t, seq in SEQUENCES.items()}, f"after run {i + 1}"
        rows = by_task(status_doc(store.data()))
    assert rows["flaky-in-run-6"]["first_seen_flaky"] == "run-6"
    assert rows["boundary-28"]["clean_trials_since"] == 28 and rows["boundary-28"]["state"] == "undetermined"
    assert rows["boundary-29"]["state"] == "fixed"


def test_recording_twice_changes_nothing_and_quarantine(pg_url: str) -> None:
    """On PostgreSQL recording twice changes nothing, and quarantine works."""
    run = run_of(1, {"a": (10, 5), "b": (4, 4)})
    with open_store(pg_url) as store:
        assert store.record([run])[0].new
        before = counts(store)
        assert not store.record([run])[0].new
        assert counts(store) == before == (1, 2, 2, 2)
        store.quarantine("a", "ana", "why", "https://t/1")
        row = by_task(status_doc(store.data()))["a"]
        assert row["state"] == "quarantined" and row["quarantine"]["why"] == "why"


def test_concurrent_recorders_lose_nothing(pg_url: str) -> None:
    """On PostgreSQL concurrent recorders lose nothing."""
    procs = [subprocess.Popen([sys.executable, "-c", RECORDER, pg_url, who, "10"], stderr=subprocess.PIPE, text=True)
             for who in ("ci-a", "ci-b", "ci-c")]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    with open_store(pg_url) as store:
        assert counts(store) == (31, 200, 31 * 200, 200)
        data = store.data()
        with store.writing() as conn:
            rebuild_summary(conn)
        assert same(data.evidence, store.data().evidence)


def test_migration_from_0001(pg_url: str) -> None:
    """On PostgreSQL the migration from 0001 works."""
    old = Store(pg_url)
    old.migrate(to="0001")
    assert old.revision() == "0001"
    old.close()
    with open_store(pg_url) as store:
        assert store.revision() == "0005"


def test_cli_on_postgres(pg_url: str, tmp_path: Path) -> None:
    """The history CLI works on PostgreSQL."""
    log = write_log(tmp_path / "r1.jsonl", "r1", {"a": (10, 5), "b": (10, 10)})
    done = cli("history", "record", str(log), "--history", pg_url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    st = cli("history", "status", "--format", "json", cwd=tmp_path, env={"FLAKETUI_HISTORY": pg_url})
    assert st.returncode == 0, st.stderr
    import json

    rows = by_task(json.loads(st.stdout))
    assert rows["a"]["state"] == "flaky" and rows["b"]["state"] == "stable"


def test_recent_p_hat_equals_a_plain_read(pg_url: str) -> None:
    """On PostgreSQL recent p̂ equals a plain read."""
    from tests.helpers.history_checks import check_recent_p_hat as check

    with open_store(pg_url) as store:
        check(store)


def test_by_owner_and_app_record_on_postgres(pg_url: str) -> None:
    """On PostgreSQL by-owner status and the app's recording work."""
    from flaketui.history.owners import parse_owners
    from flaketui.history.recording import record_said
    from flaketui.loading import load_logs
    from flaketui.model import FieldMap
    from tests.conftest import BASELINE, CANDIDATE

    log = load_logs([str(BASELINE), str(CANDIDATE)], FieldMap())
    assert record_said(log, pg_url) == ("recorded 2 runs (oncall-baseline, oncall-candidate)", True)
    assert record_said(log, pg_url) == ("recorded 0 runs; 2 already recorded", True)
    with open_store(pg_url) as store:
        doc = status_doc(store.data(), rules=parse_owners("* @all\n"))
    assert doc["runs"] == 2 and [g["owner"] for g in doc["by_owner"]] == ["@all"]
    assert doc["by_owner"][0]["tasks"] == len(doc["tasks"])


def test_groups_on_postgres(pg_url: str) -> None:
    """Groups are recorded and read on PostgreSQL."""
    from tests.helpers.history_checks import check_groups

    with open_store(pg_url) as store:
        check_groups(store)


def test_transitions_quarantine_ends_and_trend_on_postgres(pg_url: str) -> None:
    """On PostgreSQL too: the scripted runs' 15 transitions, each delivered once; a quarantine that
    ends after clean runs with its evidence; the trend's changes equal the transitions."""
    from flaketui.history.trend import trend, trend_doc

    with open_store(pg_url) as store:
        store.record([run_of(0, {t: seq[0][0] for t, seq in SEQUENCES.items()})])
        store.quarantine("stable", "me", "why", until_clean=2)
        for i in range(1, 6):
            store.record([run_of(i, {t: seq[0][i] for t, seq in SEQUENCES.items()})])
        got = store.transitions(pending=True)
        assert len([t for t in got if t["kind"] != "quarantine_ended"]) == expected_transitions() == 15
        (ended,) = [t for t in got if t["kind"] == "quarantine_ended"]
        assert ended["evidence"] == "20 clean trials over 2 runs since quarantined (2 clean runs asked)"
        assert store.deliver(got[0]["id"], lambda: True) is True
        assert store.deliver(got[0]["id"], lambda: True) is None
        assert len(store.transitions(pending=True)) == len(got) - 1
        assert "stable" not in store.data().quarantines
        doc = trend_doc(trend(store))
    changes = [(r["run"], c["task"], c["kind"]) for r in doc["runs"] for c in r["changes"]]
    assert changes == [(t["run"], t["task"], t["kind"]) for t in got if t["kind"] != "quarantine_ended"]
