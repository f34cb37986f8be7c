"""The plan view: opened with p from the task table, a budget typed in, the allocation shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.plan import PlanScreen
from flaketui.app.screens.tasks import TasksScreen
from tests.conftest import BASELINE, FIXTURES, SIZE, settle


def text_of(screen: PlanScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


async def open_plan(app: FlakeApp, pilot: Pilot) -> PlanScreen:
    await settle(pilot)
    await pilot.press("p")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, PlanScreen)
    return screen


async def type_budget(pilot: Pilot, value: str) -> None:
    await pilot.press("b")
    box = pilot.app.screen.query_one("#budget", Input)
    box.value = ""
    await pilot.press(*value, "enter")
    await settle(pilot)


def planned(screen: PlanScreen) -> dict[str, int]:
    table = screen.query_one(DataTable)
    out = {}
    for key in table.rows:
        out[str(key.value)] = int(str(table.get_cell(key, "extra")).replace(",", ""))
    return out


@pytest.mark.slow
async def test_p_opens_the_plan_of_the_highlighted_task() -> None:
    """p opens the plan on the highlighted task."""
    app = make_app([str(FIXTURES)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tasks = app.screen
        assert isinstance(tasks, TasksScreen)
        highlighted = tasks.current_task
        assert highlighted == "searchRunbook"  # flakiest first
        screen = await open_plan(app, pilot)
        assert screen.run_name == "oncall-baseline" and screen.task_name == highlighted
        task_text = text_of(screen, "#plan-task")
        assert task_text.startswith("searchRunbook: 10/12 passed, p̂ 0.833 [0.55, 0.95]")
        assert "decision: undecided" in task_text
        # oncall-baseline is the first run loaded: no run came before it to have been flaky in
        assert "tier low (read-only, stable)" in task_text and "flaky before" not in task_text
        assert "Wilson width ≤ 0.1: 213 trials (201 more)" in task_text
        suite = text_of(screen, "#plan-suite")
        assert "independent 930" in suite and "paired" in suite
        assert "2,995,731" in suite
        assert "suite pass^5 = 0.773" in text_of(screen, "#plan-head")
        assert sum(planned(screen).values()) == 0  # no budget yet


@pytest.mark.slow
async def test_budget_allocates_exactly_and_explains() -> None:
    """A budget allocates exactly and explains."""
    app = make_app([str(FIXTURES)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_plan(app, pilot)
        await type_budget(pilot, "150")
        assert screen.budget == 150
        assert screen.plan is not None and screen.plan.spent == 150
        shares = planned(screen)
        assert sum(shares.values()) == 150
        rows = {t.task: t for t in screen.plan.runs[0].tasks}
        for task, extra in shares.items():
            assert extra == rows[task].extra
            if rows[task].decision not in ("undecided", "no-trials"):
                assert extra <= max(0, rows[task].minimum - rows[task].n)
        assert "150 of 150 trials planned" in text_of(screen, "#plan-status")
        assert screen.query_one(DataTable).has_focus


@pytest.mark.slow
async def test_moving_in_the_table_shows_that_task() -> None:
    """Moving in the plan's table shows that task."""
    app = make_app([str(FIXTURES)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_plan(app, pilot)
        await type_budget(pilot, "100")
        table = screen.query_one(DataTable)
        table.move_cursor(row=0)
        await pilot.pause()
        first = str(table.coordinate_to_cell_key((0, 0)).row_key.value)
        assert screen.task_name == first
        assert text_of(screen, "#plan-task").startswith(first + ":")


@pytest.mark.slow
async def test_bad_budget_is_refused_in_place() -> None:
    """A bad budget is refused in place."""
    app = make_app([str(FIXTURES)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_plan(app, pilot)
        for bad in ("-5", "lots"):
            await type_budget(pilot, bad)
            assert "budget must be a whole number" in text_of(screen, "#plan-status")
            assert screen.budget == 0 and isinstance(app.screen, PlanScreen)


@pytest.mark.slow
async def test_escape_goes_back() -> None:
    """escape goes back to the task table."""
    app = make_app([str(FIXTURES)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await open_plan(app, pilot)
        app.screen.query_one(DataTable).focus()
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, TasksScreen)


@pytest.mark.slow
async def test_one_run_has_no_paired_figure() -> None:
    """One run has no paired figure."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_plan(app, pilot)
        assert "load a second run" in text_of(screen, "#plan-suite")


@pytest.mark.slow
async def test_every_task_decided_says_why(tmp_path: Path) -> None:
    """With every task decided the plan says why."""
    path = tmp_path / "solid.jsonl"
    with path.open("w") as fh:
        for task, passes in (("solid", 69), ("broken", 0)):
            for i in range(69):
                fh.write(json.dumps({"task": task, "trial": i, "passed": i < passes}) + "\n")
    app = make_app([str(path)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_plan(app, pilot)
        await type_budget(pilot, "25")
        status = text_of(screen, "#plan-status")
        assert "0 of 25 trials planned" in status and "left unspent" in status
        assert sum(planned(screen).values()) == 0
