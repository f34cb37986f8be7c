"""The task table's history columns: each task's lifecycle state (with a history) and owner (with
--owners), and the ``state:NAME`` / ``owner:NAME`` filters."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("sqlalchemy")

from flaketui.app.app import AppOptions, FlakeApp  # noqa: E402
from flaketui.app.widgets.task_table import TaskTable  # noqa: E402
from flaketui.cli import main  # noqa: E402
from flaketui.history import open_store  # noqa: E402
from flaketui.history.owners import parse_owners  # noqa: E402
from flaketui.history.status import status_doc  # noqa: E402
from tests.conftest import BASELINE, CANDIDATE, FIXTURES, SIZE, settle  # noqa: E402


def recorded(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    result = CliRunner().invoke(main, ["history", "record", str(BASELINE), str(CANDIDATE), "--history", url])
    assert result.exit_code == 0, result.output
    return url


def shown_tasks(app: FlakeApp) -> list[str]:
    screen = app.tasks_screen
    return [screen.stats.tasks[r] for r in screen.query_one(TaskTable).order.tolist()]


@pytest.mark.slow
async def test_state_column_matches_history_status_and_filters(tmp_path: Path) -> None:
    """The state column matches history status and filters."""
    url = recorded(tmp_path)
    with open_store(url) as store:
        expected = {t["task"]: t["state"] for t in status_doc(store.data())["tasks"]}
    app = FlakeApp(AppOptions((str(FIXTURES),), k=5, history=url, triage=str(tmp_path / "t.json")))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await settle(pilot)
        screen = app.tasks_screen
        assert "history_state" in [c.key for c in screen.query_one(TaskTable).columns]
        for row, task in enumerate(screen.stats.tasks):
            assert screen.cell(row, "history_state").plain == expected[task]
        screen.filter_text = "state:undetermined"  # searchRunbook: one mixed run, its trials cannot tell yet
        await settle(pilot)
        undetermined = sorted(t for t, s in expected.items() if s == "undetermined")
        assert undetermined and sorted(shown_tasks(app)) == undetermined


async def test_no_history_no_state_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a history there is no state column."""
    monkeypatch.delenv("FLAKETUI_HISTORY", raising=False)
    app = FlakeApp(AppOptions((str(FIXTURES),), k=5, triage=str(tmp_path / "t.json")))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session.history_states is None
        assert "history_state" not in [c.key for c in app.tasks_screen.query_one(TaskTable).columns]


async def test_owner_column_and_filter(tmp_path: Path) -> None:
    """The owner column shows and filters by owner."""
    rules = parse_owners("* @everyone\nsearch* @search-team\n")
    app = FlakeApp(AppOptions((str(FIXTURES),), k=5, triage=str(tmp_path / "t.json"), owners=rules))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.tasks_screen
        owners = {t: screen.cell(r, "owner").plain for r, t in enumerate(screen.stats.tasks)}
        assert owners["searchRunbook"] == "@search-team"
        assert {o for t, o in owners.items() if not t.startswith("search")} == {"@everyone"}
        screen.filter_text = "owner:search-team"
        await settle(pilot)
        assert shown_tasks(app) and all(t.startswith("search") for t in shown_tasks(app))


@pytest.mark.slow
async def test_record_then_the_states_include_this_run(tmp_path: Path) -> None:
    """After --record the states include this run."""
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    app = FlakeApp(AppOptions((str(FIXTURES),), k=5, history=url, record=True, triage=str(tmp_path / "t.json")))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(3):
            await settle(pilot)
        assert app.recorded and app.recorded.startswith("recorded 2 runs")
        assert app.session.history_states is not None
        assert app.session.history_states["searchRunbook"] == "undetermined"
