"""H on the task table: the highlighted task's history across the recorded runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.widgets import DataTable, Static

from flaketui.app.app import make_app
from flaketui.app.screens.history import NO_HISTORY, HistoryScreen
from flaketui.app.screens.tasks import TasksScreen
from flaketui.cli import main
from tests.conftest import BASELINE, CANDIDATE, FIXTURES, SIZE, settle


def record(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    result = CliRunner().invoke(main, ["history", "record", str(BASELINE), str(CANDIDATE), "--history", url])
    assert result.exit_code == 0, result.output
    return url


def head_of(screen: HistoryScreen) -> str:
    return str(screen.query_one("#history-head", Static).content)


@pytest.mark.slow
async def test_h_shows_the_timeline_of_the_highlighted_task(tmp_path: Path) -> None:
    """H shows the highlighted task's timeline."""
    url = record(tmp_path)
    app = make_app([str(FIXTURES)], k=5, history=url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, TasksScreen)
        assert app.screen.current_task == "searchRunbook"
        await pilot.press("H")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row(key)] for key in table.rows]
        assert [r[0] for r in rows] == ["oncall-baseline", "oncall-candidate"]
        assert [r[2:] for r in rows] == [["12", "10", "0", "0.83", "undetermined", ""],
                                         ["12", "12", "0", "1.00", "undetermined", ""]]
        head = head_of(screen)
        assert "searchRunbook  undetermined  in 2 of 2 recorded runs" in head
        assert "12 clean trials since run oncall-baseline: 17 more to call it fixed at cap 0.1" in head
        await pilot.press("escape")
        assert isinstance(app.screen, TasksScreen)


@pytest.mark.slow
async def test_quarantine_is_shown(tmp_path: Path) -> None:
    """A quarantine is shown, its reason as text."""
    url = record(tmp_path)
    result = CliRunner().invoke(main, ["history", "quarantine", "searchRunbook", "--why", "[b]flaky[/b] search",
                                       "--who", "ana", "--history", url])
    assert result.exit_code == 0, result.output
    app = make_app([str(FIXTURES)], k=5, history=url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        head = head_of(app.screen)
        assert "searchRunbook  quarantined (computed: undetermined)" in head
        assert "by ana at " in head and ": [b]flaky[/b] search" in head  # as text, never markup


@pytest.mark.slow
async def test_no_history_recorded_yet(tmp_path: Path, monkeypatch) -> None:
    """No file at the default (here $FLAKETUI_HISTORY): the screen says so, and creates nothing."""
    path = tmp_path / "none.sqlite"
    monkeypatch.setenv("FLAKETUI_HISTORY", f"sqlite:///{path}")
    app = make_app([str(FIXTURES)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        assert head_of(screen) == NO_HISTORY
        assert screen.query_one(DataTable).row_count == 0
    assert not path.exists()


@pytest.mark.slow
async def test_a_bad_history_url_is_shown(tmp_path: Path) -> None:
    """A bad history URL is shown."""
    app = make_app([str(FIXTURES)], k=5, history="mysql://nowhere/db")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        assert "Reading the history failed: HistoryError" in head_of(app.screen)


def test_open_carries_history_into_the_options(monkeypatch, tmp_path: Path) -> None:
    """open carries --history into the app's options."""
    from flaketui.app.app import FlakeApp

    seen: list[object] = []
    monkeypatch.setattr(FlakeApp, "run", lambda app: seen.append(app.options))
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for args in (["open", str(BASELINE), "--history", url], ["open", str(BASELINE)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
    assert [o.history for o in seen] == [url, None]  # None: the screen uses default_url()


@pytest.mark.slow
async def test_hostile_names_are_shown_as_visible_text(tmp_path: Path) -> None:
    """Hostile names are shown as visible text in the timeline."""
    from flaketui.sanitize import visible
    from tests.helpers.hostile import HOSTILE_NAMES, HOSTILE_RUNS, raw_controls, write_hostile_log

    log = write_hostile_log(tmp_path / "hostile.jsonl")
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    result = CliRunner().invoke(main, ["history", "record", str(log), "--history", url])
    assert result.exit_code == 0, result.output
    app = make_app([str(log)], k=2, history=url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        task = app.screen.current_task
        assert task in HOSTILE_NAMES
        await pilot.press("H")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        head = head_of(screen)
        assert head.startswith(visible(task)) and not raw_controls(head)
        table = screen.query_one(DataTable)
        names = [str(table.get_row(key)[0]) for key in table.rows]
        assert names and all(n in {visible(r) for r in HOSTILE_RUNS} for n in names)
