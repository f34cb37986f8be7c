"""The history speaks the report's classes: each task's trials pooled over the recorded runs,
classed against --flaky-cap, decide flaky / undetermined; pinned to scipy's exact interval on
constructed SQLite histories."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

from flaketui.history import open_store, schema  # noqa: E402
from flaketui.history.lifecycle import FIELDS  # noqa: E402
from flaketui.history.recording import task_states  # noqa: E402
from flaketui.history.status import status_doc  # noqa: E402
from flaketui.history.store import Store, rebuild_summary  # noqa: E402
from tests.helpers.history import by_task, cli, run_of, scipy_class, write_log  # noqa: E402


def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


def test_class_and_state_follow_the_class_rule_on_pooled_trials(tmp_path: Path) -> None:
    """On 60 random tasks × 4 runs, each task's class is scipy's of its pooled trials and flaky needs it."""
    rng = np.random.default_rng(7)
    tasks = [f"t{i:02d}" for i in range(60)]
    p = rng.choice([0.0, 0.03, 0.3, 0.5, 0.7, 0.97, 1.0], size=len(tasks))
    n = rng.integers(0, 16, size=(4, len(tasks)))
    c = rng.binomial(n, p)
    with open_store(url(tmp_path)) as store:
        for i in range(4):
            store.record([run_of(i, {t: (int(n[i, j]), int(c[i, j])) for j, t in enumerate(tasks)})])
        rows = by_task(status_doc(store.data()))
    seen_flaky = seen_und = 0
    for j, t in enumerate(tasks):
        row = rows[t]
        want = scipy_class(int(n[:, j].sum()), int(c[:, j].sum()))
        assert (row["trials"], row["passes"], row["class"]) == (int(n[:, j].sum()), int(c[:, j].sum()), want), t
        mixed_once = bool(((c[:, j] > 0) & (c[:, j] < n[:, j])).any())
        if row["state"] == "flaky":
            seen_flaky += 1
            assert want == "flaky" and mixed_once, t
        if row["state"] == "undetermined":
            seen_und += 1
            assert want in ("undetermined", "unrepeated") and mixed_once, t
            assert row["trials_to_decide"] is None or row["trials_to_decide"] > 0
        if mixed_once and row["state"] not in ("fixed", "regressed"):
            expected = {"flaky": "flaky", "stable-pass": "stable", "stable-fail": "failing"}.get(want, "undetermined")
            assert row["state"] == expected, t
    assert seen_flaky and seen_und  # both cases are exercised


def test_one_mixed_run_is_undetermined_until_the_trials_show_it(tmp_path: Path) -> None:
    """A stable task failing 1 of 20 is undetermined, not flaky; 10 of 20 is flaky at once."""
    with open_store(url(tmp_path)) as store:
        store.record([run_of(1, {"unlucky": (20, 19), "coin": (20, 10)})])
        rows = by_task(status_doc(store.data()))
        kinds = [(t["task"], t["kind"]) for t in store.transitions()]
    assert rows["unlucky"]["state"] == "undetermined" and rows["unlucky"]["class"] == scipy_class(20, 19)
    assert rows["unlucky"]["trials_to_decide"] > 0 and rows["unlucky"]["first_seen_flaky"] == "run-1"
    assert rows["coin"]["state"] == "flaky" and scipy_class(20, 10) == "flaky"
    assert kinds == [("coin", "flaky")]  # undetermined is no transition to message about


def test_a_task_with_no_usable_trial_is_undetermined_not_stable(tmp_path: Path) -> None:
    """A task whose every trial errored in every run is undetermined (it was called stable on no evidence)."""
    with open_store(url(tmp_path)) as store:
        store.record([run_of(1, {"errored": (0, 0), "clean": (3, 3)})])
        rows = by_task(status_doc(store.data()))
    assert rows["errored"]["state"] == "undetermined" and rows["clean"]["state"] == "stable"


@pytest.mark.slow
def test_flaky_cap_is_given_when_the_history_is_read(tmp_path: Path) -> None:
    """The same recorded trials read at --flaky-cap 0.99 (rates 0.45-0.55) are undetermined, in status and the app."""
    with open_store(url(tmp_path)) as store:
        store.record([run_of(1, {"coin": (20, 10)})])
        data = store.data()
    assert by_task(status_doc(data))["coin"]["state"] == "flaky"
    row = by_task(status_doc(data, flaky_cap=0.99))["coin"]
    # scipy: the 95% interval of 10 in 20 is [0.272, 0.728], not inside (0.45, 0.55)
    assert row["state"] == "undetermined" and row["class"] == "undetermined" and row["trials_to_decide"] > 0
    assert task_states(url(tmp_path)) == {"coin": "flaky"}
    assert task_states(url(tmp_path), 0.99) == {"coin": "undetermined"}
    done = cli("history", "status", "--history", url(tmp_path), "--flaky-cap", "0.99", "--format", "json",
               cwd=tmp_path)
    doc = json.loads(done.stdout)
    assert done.returncode == 0 and doc["flaky_cap"] == 0.99 and doc["tasks"][0]["state"] == "undetermined"
    table = cli("history", "status", "--history", url(tmp_path), "--flaky-cap", "0.99", cwd=tmp_path).stdout
    assert "trials to decide" in table and "flakiness cap 0.99" in table
    trend = json.loads(cli("history", "trend", "--history", url(tmp_path), "--flaky-cap", "0.99", "--format",
                           "json", cwd=tmp_path).stdout)
    assert trend["flaky_cap"] == 0.99 and trend["runs"][0]["counts"]["undetermined"] == 1
    assert trend["runs"][0]["counts"]["flaky"] == 0


def test_record_finds_transitions_at_its_flaky_cap(tmp_path: Path) -> None:
    """Recording at --flaky-cap 0.99 notes no newly flaky task where the default cap notes one."""
    with open_store(url(tmp_path)) as store:
        store.record([run_of(1, {"coin": (20, 10)})], flaky_cap=0.99)
        assert store.transitions() == []
    with open_store(f"sqlite:///{tmp_path / 'other.sqlite'}") as store:
        store.record([run_of(1, {"coin": (20, 10)})])
        assert [(t["task"], t["kind"]) for t in store.transitions()] == [("coin", "flaky")]
    log = write_log(tmp_path / "r.jsonl", "run-1", {"coin": (20, 10)})
    third = f"sqlite:///{tmp_path / 'third.sqlite'}"
    assert cli("history", "record", str(log), "--history", third, "--flaky-cap", "0.99", cwd=tmp_path).returncode == 0
    with open_store(third) as store:
        assert store.transitions() == []


def test_migration_backfills_pooled_trials(tmp_path: Path) -> None:
    """A history at revision 0004 gets each task's pooled trials and passes, and its class, on upgrade."""
    u = url(tmp_path)
    old = Store(u)
    old.migrate(to="0004")
    with old.writing() as conn:  # what flaketui at revision 0004 wrote
        t, r, tr = schema.tasks, schema.runs, schema.task_results
        conn.execute(t.insert(), [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
        now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
        for i, (a, b) in enumerate([((10, 9), (10, 5)), ((10, 10), (10, 6)), ((0, 0), (10, 4))], 1):
            conn.execute(r.insert().values(id=i, name=f"r{i}", content_hash=f"h{i}", meta={}, recorded_at=now))
            conn.execute(tr.insert(), [{"run_id": i, "task_id": 1, "trials": a[0], "passes": a[1], "errored": 0},
                                       {"run_id": i, "task_id": 2, "trials": b[0], "passes": b[1], "errored": 0}])
        rebuild_summary(conn, FIELDS[:7])  # the columns revision 0004 has
    old.close()
    with open_store(u) as store:
        assert store.revision() == "0005"
        rows = by_task(status_doc(store.data()))
    assert (rows["a"]["trials"], rows["a"]["passes"], rows["a"]["class"]) == (20, 19, scipy_class(20, 19))
    assert rows["a"]["state"] == "undetermined"
    assert (rows["b"]["trials"], rows["b"]["passes"]) == (30, 15) and rows["b"]["state"] == "flaky"
    assert scipy_class(30, 15) == "flaky"
