"""M on the task table: the run's mixed tasks' failures grouped by signature, as the report groups them."""

from __future__ import annotations

from functools import partial

import pytest
from textual.widgets import DataTable, Static

from flaketui.app.app import make_app
from flaketui.app.screens.failure_modes import NO_MIXED, FailureModesScreen
from flaketui.app.screens.tasks import TasksScreen
from flaketui.loading import load_logs, read_trial
from flaketui.model import FieldMap
from flaketui.traces.causes import flaky_rows, suggest_causes, suite_failure_modes
from tests.conftest import BASELINE, FIXTURES, SIZE, settle


def head_of(screen: FailureModesScreen) -> str:
    return str(screen.query_one("#modes-head", Static).content)


@pytest.mark.slow
async def test_m_groups_the_failures_as_the_report_does() -> None:
    """M groups the failures as the report does."""
    log = load_logs([str(BASELINE)], FieldMap())
    run = log.runs[0]
    found = suggest_causes(partial(read_trial, log), flaky_rows(log.run_outcomes(run)), fork=False)
    expected = suite_failure_modes(found.values())
    assert expected  # the fixture has failing trials to group

    app = make_app([str(FIXTURES)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, TasksScreen)
        await pilot.press("M")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FailureModesScreen)
        table = screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row(key)] for key in table.rows]
        assert [(int(r[0]), int(r[1]), r[3]) for r in rows] == [(m.trials, m.tasks, m.signature) for m in expected]
        head = head_of(screen)
        assert f"{sum(m.trials for m in expected)} failing or errored trials" in head
        assert "mixed tasks by suspected source:" in head

        table.move_cursor(row=len(rows) - 1)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TasksScreen)
        assert app.screen.current_task == expected[-1].example[0]


@pytest.mark.slow
async def test_a_run_without_flaky_tasks_says_so() -> None:
    """A run without mixed tasks (passed and failed) says so."""
    app = make_app([str(FIXTURES)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = FailureModesScreen("r", {}, lambda row: None, None)  # type: ignore[arg-type, return-value]
        await app.push_screen(screen)
        await settle(pilot)
        assert head_of(screen) == NO_MIXED
        await pilot.press("escape")
        assert isinstance(app.screen, TasksScreen)


@pytest.mark.slow
async def test_a_failed_read_is_shown() -> None:
    """A reader that raises: the error replaces the progress text, never a silent screen."""

    def broken(row: int) -> None:
        raise OSError("the log went away")

    log = load_logs([str(BASELINE)], FieldMap())
    todo = flaky_rows(log.run_outcomes(log.runs[0]))
    app = make_app([str(FIXTURES)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = FailureModesScreen("r", todo, broken, None)  # type: ignore[arg-type]
        await app.push_screen(screen)
        for _ in range(50):  # settle() would raise the worker's error here; the screen must show it
            await pilot.pause(0.05)
            if "failed" in head_of(screen):
                break
        assert "Grouping the failures failed: OSError: the log went away" in head_of(screen)
