"""The history: lifecycle on scripted runs, idempotent and concurrent recording (SQLite),
owners, migrations, and the one-line errors of ``flaketui history``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

import sqlalchemy as sa  # noqa: E402

from flaketui.history import HistoryError, open_store, schema  # noqa: E402
from flaketui.history import lifecycle as lc  # noqa: E402
from flaketui.history.owners import owners_of, parse_owners  # noqa: E402
from flaketui.history.status import status_doc  # noqa: E402
from flaketui.history.store import rebuild_summary  # noqa: E402
from flaketui.stats.estimators import clopper_pearson, rule_of_three  # noqa: E402
from tests.helpers.history import RECORDER, SEQUENCES, by_task, cli, counts, run_of, same, write_log  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


def test_fixed_rule_is_the_one_sided_clopper_pearson_bound() -> None:
    """The fixed rule's bound is the one-sided Clopper-Pearson bound, 1 - 0.05^(1/n) at zero failures."""
    # Zero failures in n trials: the one-sided 95% upper bound is 1 - 0.05**(1/n), which is the
    # two-sided 90% Clopper-Pearson upper limit (computed here by the project's own beta quantile).
    n = np.arange(1, 60)
    assert np.allclose(rule_of_three(n), 1 - 0.05 ** (1 / n))
    assert np.allclose(clopper_pearson(n, n, confidence=0.90).low, 0.05 ** (1 / n))
    assert lc.trials_needed(0.1) == 29
    assert not lc.meets_rule(np.array([28]), 0.1)[0] and lc.meets_rule(np.array([29]), 0.1)[0]
    assert lc.trials_needed(0.05) == 59  # 1 - 0.05**(1/59) = 0.0495; 58 give 0.0503


def test_six_runs_give_each_state_after_each_run(tmp_path: Path) -> None:
    """Six recorded runs give each task the expected lifecycle state after each run."""
    with open_store(url(tmp_path)) as store:
        for i in range(6):
            store.record([run_of(i + 1, {task: seq[0][i] for task, seq in SEQUENCES.items()})])
            doc = status_doc(store.data())
            got = {t: row["state"] for t, row in by_task(doc).items()}
            assert got == {t: seq[1][i] for t, seq in SEQUENCES.items()}, f"after run {i + 1}"
        rows = by_task(doc)
    assert doc["runs"] == 6
    assert rows["flaky-in-run-6"]["first_seen_flaky"] == "run-6"
    assert rows["flaky-in-run-6"]["last_seen_flaky"] == "run-6"
    assert rows["boundary-28"]["clean_trials_since"] == 28
    assert rows["boundary-28"]["trials_to_fixed"] == 1
    assert rows["boundary-29"]["clean_trials_since"] == 29
    assert rows["boundary-29"]["trials_to_fixed"] == 0
    assert rows["20-clean-not-enough"]["trials_to_fixed"] == 9
    assert rows["fixed-again"]["last_seen_flaky"] == "run-3"
    assert rows["fixed-again"]["runs_seen"] == 6
    assert rows["flaky-in-run-6"]["p_hat"] == [1.0] * 5 + [0.6]
    assert rows["fixed-again"]["p_hat"][-1] is None  # no trial in run 6


def test_cap_changes_the_evidence_needed(tmp_path: Path) -> None:
    """A lower cap needs more clean trials before a task is fixed."""
    with open_store(url(tmp_path)) as store:
        store.record([run_of(1, {"t": (10, 5)}), run_of(2, {"t": (40, 40)})])
        data = store.data()
    assert by_task(status_doc(data, cap=0.1))["t"]["state"] == "fixed"
    # not fixed at 0.05; its 50 trials, 45 passes ([0.782, 0.967]) cannot tell flaky from stable
    assert by_task(status_doc(data, cap=0.05))["t"]["state"] == "undetermined"
    assert by_task(status_doc(data, cap=0.05))["t"]["trials_to_fixed"] == 19


def test_quarantine_overrides_and_says_when_ready_to_lift(tmp_path: Path) -> None:
    """A quarantine overrides the state and says when the task is ready to lift."""
    with open_store(url(tmp_path)) as store:
        store.record([run_of(1, {"a": (10, 5), "b": (10, 5)}), run_of(2, {"a": (30, 30), "b": (3, 3)})])
        store.quarantine("a", "ana", "fails on Mondays", "https://tracker/1")
        store.quarantine("b", "bo", "timeouts")
        with pytest.raises(HistoryError, match="already quarantined"):
            store.quarantine("b", "bo", "again")
        rows = by_task(status_doc(store.data()))
        assert rows["a"]["state"] == rows["b"]["state"] == "quarantined"
        assert rows["a"]["computed_state"] == "fixed" and rows["a"]["quarantine"]["ready_to_lift"]
        assert rows["b"]["computed_state"] == "flaky" and not rows["b"]["quarantine"]["ready_to_lift"]
        assert rows["a"]["quarantine"]["who"] == "ana" and rows["a"]["quarantine"]["ticket"] == "https://tracker/1"
        store.unquarantine("a", "ana")
        with pytest.raises(HistoryError, match="not quarantined"):
            store.unquarantine("a", "ana")
        assert by_task(status_doc(store.data()))["a"]["state"] == "fixed"
        store.quarantine("a", "ana", "once more")  # a lifted quarantine can be set again
        q = schema.quarantines
        with store.reading() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(q)).scalar() == 3


def test_recording_the_same_run_twice_changes_nothing(tmp_path: Path) -> None:
    """Recording the same run twice changes nothing."""
    run = run_of(1, {"a": (10, 5), "b": (4, 4)})
    with open_store(url(tmp_path)) as store:
        first = store.record([run])
        before, summary = counts(store), store.data().evidence.columns()
        again = store.record([run_of(1, {"b": (4, 4), "a": (10, 5)})])  # same run, tasks in another order
        assert first[0].new and not again[0].new and again[0].run_id == first[0].run_id
        assert counts(store) == before == (1, 2, 2, 2)
        assert same(summary, store.data().evidence)
        other = store.record([run_of(1, {"a": (10, 6), "b": (4, 4)})])  # one pass more: another run
        assert other[0].new and counts(store)[0] == 2


@pytest.mark.slow
def test_incremental_summary_equals_a_rebuild_and_a_reference(tmp_path: Path) -> None:
    """The summary kept run by run equals a rebuild and a reference computed by hand."""
    rng = np.random.default_rng(7)
    tasks = [f"t{i}" for i in range(40)]
    reference: dict[str, list[tuple[int, int]]] = {t: [] for t in tasks}
    with open_store(url(tmp_path)) as store:
        for i in range(30):
            chosen = [t for t in tasks if rng.random() < 0.8]
            per = {}
            for t in chosen:
                n = int(rng.integers(0, 12))
                p = int(rng.choice([n, n, n, 0, rng.integers(0, n + 1)]))
                per[t] = (n, p)
                reference[t].append((n, p))
            store.record([run_of(i, per)])
        data = store.data()
        with store.writing() as conn:
            rebuild_summary(conn)
        rebuilt = store.data()
    assert same(data.evidence, rebuilt.evidence)
    got = {t: s for t, s in zip(data.tasks, lc.states(data.evidence), strict=True)}
    for t, runs in reference.items():
        if runs:
            assert got[t] == reference_state(runs), (t, runs)


def reference_state(runs: list[tuple[int, int]], need: int = 29) -> str:
    """The issue's rules, one run at a time, written without the fold."""
    state, clean, flaky_seen = "stable", 0, False
    for n, p in runs:
        if n == 0:
            continue
        if p == n:
            clean += n
            if state in ("flaky", "failing", "regressed") and clean >= need:
                state = "fixed"
            continue
        flaky_seen |= p > 0
        state = "regressed" if state in ("fixed", "regressed") else ("flaky" if flaky_seen else "failing")
        clean = 0
    return state


def test_owners_last_match_wins() -> None:
    """In an owners file the last matching rule wins."""
    rules = parse_owners("""
# comment
*            @everyone
billing/*    @billing-team   @ana   # trailing comment
billing/tax* @tax
billing/tax-legacy
""")
    tasks = ["billing/invoice", "billing/tax-2024", "billing/tax-legacy", "search/q", "Billing/x"]
    assert owners_of(tasks, rules) == [("@billing-team", "@ana"), ("@tax",), (), ("@everyone",), ("@everyone",)]
    assert owners_of(tasks, []) == [()] * 5


def test_status_filters_by_state_and_owner(tmp_path: Path) -> None:
    """status filters tasks by state and by owner."""
    with open_store(url(tmp_path)) as store:
        store.record([run_of(1, {"a/1": (10, 5), "a/2": (10, 10), "b/1": (10, 5)})])
        data = store.data()
    rules = parse_owners("a/* @a\nb/* @b\n")
    assert [t["task"] for t in status_doc(data, rules=rules, states=["flaky"])["tasks"]] == ["a/1", "b/1"]
    assert [t["task"] for t in status_doc(data, rules=rules, owner="@a")["tasks"]] == ["a/1", "a/2"]
    assert status_doc(data, rules=rules, owner="@a")["counts"]["flaky"] == 2  # counts are of every task


def test_migration_from_revision_0001_backfills_the_summary(tmp_path: Path) -> None:
    """Migrating from revision 0001 backfills the summary table."""
    from flaketui.history.store import Store

    u = url(tmp_path)
    old = Store(u)
    old.migrate(to="0001")
    assert old.revision() == "0001"
    with old.writing() as conn:  # what flaketui at revision 0001 wrote: no summary table
        assert not sa.inspect(conn).has_table("task_summary")
        t, r, tr = schema.tasks, schema.runs, schema.task_results
        conn.execute(t.insert(), [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
        import datetime as dt

        now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
        for i, (a, b) in enumerate([((10, 5), (10, 10)), ((30, 30), (10, 10)), ((10, 9), (10, 0))], 1):
            conn.execute(r.insert().values(id=i, name=f"r{i}", content_hash=f"h{i}", meta={}, recorded_at=now))
            conn.execute(tr.insert(), [{"run_id": i, "task_id": 1, "trials": a[0], "passes": a[1], "errored": 0},
                                       {"run_id": i, "task_id": 2, "trials": b[0], "passes": b[1], "errored": 0}])
    old.close()
    with open_store(u) as store:
        assert store.revision() == "0005"
        rows = by_task(status_doc(store.data()))
    assert rows["a"]["state"] == "regressed" and rows["a"]["first_seen_flaky"] == "r1"
    assert rows["a"]["last_seen_flaky"] == "r3"
    assert rows["b"]["state"] == "failing" and rows["b"]["runs_seen"] == 3


@pytest.mark.slow
def test_cli_records_and_reports_end_to_end(tmp_path: Path) -> None:
    """history record and status work end to end from the command line."""
    u = url(tmp_path)
    logs = [write_log(tmp_path / f"r{i}.jsonl", f"r{i}", {"flaky": (10, 5 if i == 1 else 10), "ok": (10, 10)})
            for i in range(1, 5)]
    done = cli("history", "record", *map(str, logs[:2]), "--history", u, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["recorded: r1 (2 tasks, run #1)", "recorded: r2 (2 tasks, run #2)"]
    again = cli("history", "record", str(logs[0]), "--history", u, cwd=tmp_path)
    assert again.stdout.startswith("already recorded: r1")
    assert cli("history", "record", *map(str, logs[2:]), cwd=tmp_path, env={"FLAKETUI_HISTORY": u}).returncode == 0
    (tmp_path / "OWNERS").write_text("* @all\nflaky @ana\n")
    st = cli("history", "status", "--history", u, "--owners", str(tmp_path / "OWNERS"), "--format", "json",
             cwd=tmp_path)
    assert st.returncode == 0, st.stderr
    doc = json.loads(st.stdout)
    rows = by_task(doc)
    assert doc["runs"] == 4
    assert rows["flaky"]["state"] == "fixed" and rows["flaky"]["owner"] == ["@ana"]
    assert rows["ok"]["state"] == "stable" and rows["ok"]["owner"] == ["@all"]
    assert cli("history", "quarantine", "ok", "--why", "noisy", "--who", "bo", "--history", u,
               cwd=tmp_path).returncode == 0
    table = cli("history", "status", "--history", u, cwd=tmp_path)
    assert table.returncode == 0 and "quarantined: ok by bo" in table.stdout
    assert "4 runs recorded" in table.stdout.splitlines()[0]
    assert cli("history", "unquarantine", "ok", "--history", u, cwd=tmp_path).returncode == 0
    again = cli("history", "unquarantine", "ok", "--history", u, cwd=tmp_path)
    assert again.returncode == 2 and again.stderr.strip() == "flaketui: error: ok is not quarantined"


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flaketui: error: "), proc.stderr
    return lines[0]


@pytest.mark.slow
def test_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    """A history of a newer schema is refused and left untouched."""
    u = url(tmp_path)
    open_store(u).close()
    with sqlite3.connect(tmp_path / "history.sqlite") as db:
        db.execute("UPDATE alembic_version SET version_num = '0099'")
    line = one_line_error(cli("history", "status", "--history", u, cwd=tmp_path))
    assert "revision 0099" in line and "newer" in line
    with sqlite3.connect(tmp_path / "history.sqlite") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [("0099",)]


@pytest.mark.slow
def test_a_locked_file_is_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    """A locked history is one line and nothing is written."""
    u = url(tmp_path)
    open_store(u).close()
    log = write_log(tmp_path / "r.jsonl", "r", {"a": (3, 1)})
    holder = sqlite3.connect(tmp_path / "history.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        line = one_line_error(cli("history", "record", str(log), "--history", u, "--wait", "0.2", cwd=tmp_path))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "database is locked" in line
    with open_store(u) as store:
        assert counts(store) == (0, 0, 0, 0)


@pytest.mark.slow
@pytest.mark.parametrize("bad, says", [
    ("postgresql://nobody@127.0.0.1:1/none", "cannot connect"),
    ("sqlite:////no/such/folder/h.db", "does not exist"),
    ("mysql://x@y/z", "only sqlite"),
    ("not a url", "not a database URL"),
])
def test_bad_history_urls_are_one_line(tmp_path: Path, bad: str, says: str) -> None:
    """Each bad history URL is one line saying what is wrong."""
    assert says in one_line_error(cli("history", "status", "--history", bad, "--wait", "2", cwd=tmp_path))


@pytest.mark.slow
def test_concurrent_recorders_lose_nothing(tmp_path: Path) -> None:
    """Two recorders creating and writing one history at once lose nothing."""
    u = url(tmp_path)  # both start on a history that does not exist yet: its creation races too
    procs = [subprocess.Popen([sys.executable, "-c", RECORDER, u, who, "15"], stderr=subprocess.PIPE, text=True)
             for who in ("ci-a", "ci-b")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with open_store(u) as store:
        assert counts(store) == (31, 200, 31 * 200, 200)
        data = store.data()
        with store.writing() as conn:
            rebuild_summary(conn)
        assert same(data.evidence, store.data().evidence)
    assert set(data.evidence.runs_seen.tolist()) == {31}


def test_wal_mode_and_default_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default history is in the user data folder, in WAL mode."""
    from flaketui.history import default_url

    monkeypatch.delenv("FLAKETUI_HISTORY", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_url() == f"sqlite:///{tmp_path / 'data' / 'flaketui' / 'history.sqlite'}"
    with open_store() as store:
        with store.reading() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    assert (tmp_path / "data" / "flaketui" / "history.sqlite").exists()
    monkeypatch.setenv("FLAKETUI_HISTORY", "sqlite:///elsewhere.db")
    assert default_url() == "sqlite:///elsewhere.db"


def test_head_constant_is_alembics_head() -> None:
    """The HEAD constant is Alembic's head revision."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from flaketui.history.store import HEAD, MIGRATIONS

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(cfg).get_current_head() == HEAD


def test_the_migration_template_makes_a_revision_alembic_reads(tmp_path: Path) -> None:
    """A revision made from the project's template (in a copy of the migrations) carries its
    branch label and follows the head: the template passes Alembic's fields through."""
    import shutil

    from alembic import command
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from flaketui.history.store import HEAD, MIGRATIONS

    copy = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    cfg = Config()
    cfg.set_main_option("script_location", str(copy))
    made = command.revision(cfg, message="next", rev_id="9999", branch_label="trial")
    script = ScriptDirectory.from_config(cfg).get_revision("9999")
    assert made is not None and script.down_revision == HEAD and script.branch_labels == {"trial"}


@pytest.mark.slow
def test_history_is_core_no_textual_rich_and_only_lower_layers() -> None:
    """Until pyproject's import-linter layers list flaketui.history: it imports neither Textual nor
    Rich, and of flaketui only the layers below it (stats, model, sanitize, safefile; loading is allowed)."""
    code = ("import sys, importlib, pkgutil, flaketui.history as h\n"
            "for info in pkgutil.walk_packages(h.__path__, 'flaketui.history.'):\n"
            "    if '.migrations.' not in info.name:\n"
            "        importlib.import_module(info.name)\n"
            "bad = sorted(k for k in sys.modules if k.split('.')[0] in ('textual', 'rich'))\n"
            "assert not bad, bad\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    import grimp

    graph = grimp.build_graph("flaketui", exclude_type_checking_imports=True)
    ours = {m for m in graph.modules if m.startswith("flaketui.history")}
    used = set().union(*(graph.find_modules_directly_imported_by(m) for m in ours)) & graph.modules
    allowed = ("flaketui.history", "flaketui.stats", "flaketui.model", "flaketui.sanitize", "flaketui.safefile",
               "flaketui.loading")
    assert {m for m in used if not m.startswith(allowed)} == set()


@pytest.mark.slow
def test_record_causes_stores_the_suggested_source_and_first_divergence(tmp_path: Path) -> None:
    """record --causes stores each flaky task's suggested source and first divergence."""
    u = url(tmp_path)
    done = cli("history", "record", "--causes", str(ROOT / "fixtures" / "oncall-baseline.jsonl"), "--history", u,
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "history.sqlite") as db:
        rows = db.execute("SELECT t.name, r.suggested_source, r.first_divergence FROM task_results r "
                          "JOIN tasks t ON t.id = r.task_id WHERE r.suggested_source IS NOT NULL").fetchall()
        flaky = db.execute("SELECT COUNT(*) FROM task_results WHERE passes > 0 AND passes < trials").fetchone()[0]
    assert len(rows) == flaky == 1
    name, source, step = rows[0]
    assert name == "searchRunbook" and source == "tool-nondeterminism" and step == 3
