"""A on the task table, the matrix and the comparison pane: the highlighted task across every loaded run.

The fixtures' summarizeIncident passes 12 of 12 baseline trials and fails 12 of 12 candidate ones;
its candidate trials part from baseline trial 0 at step 4 (the summary written after the same
post-mortem search), counted by hand on the fixture lines.
"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Static

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.across_runs import AcrossRunsScreen
from flaketui.app.screens.compare_traces import AcrossTracesScreen
from flaketui.app.screens.compare import CompareScreen
from flaketui.app.screens.matrix import MatrixScreen
from flaketui.app.screens.tasks import TasksScreen
from flaketui.app.widgets.task_table import TaskTable
from flaketui.app.widgets.trace_view import TraceDiffView
from tests.conftest import BASELINE, CANDIDATE, SIZE, settle
from tests.helpers.app import press, record_notifications

TASK = "summarizeIncident"


@pytest.fixture
def app() -> FlakeApp:
    return make_app([str(BASELINE), str(CANDIDATE)], k=5)


def table_rows(screen: AcrossRunsScreen) -> list[list[str]]:
    table = screen.query_one(DataTable)
    return [[str(c) for c in table.get_row(key)] for key in table.rows]


def head(screen: AcrossRunsScreen) -> str:
    return str(screen.query_one("#across-head", Static).content)


def cursor_on(screen: TasksScreen, task: str) -> None:
    assert screen.stats is not None
    screen.refresh_order(keep=screen.stats.tasks.index(task))


async def check_across(app: FlakeApp) -> AcrossRunsScreen:
    screen = app.screen
    assert isinstance(screen, AcrossRunsScreen) and screen.task_name == TASK
    rows = table_rows(screen)
    assert [r[:7] for r in rows] == [["◆", "oncall-baseline", "12", "12", "0", "1.000", rows[0][6]],
                                     ["", "oncall-candidate", "12", "0", "0", "0.000", rows[1][6]]]
    assert rows[0][6].endswith("pass") and rows[1][6].endswith("fail")
    assert rows[0][7] == "none" and rows[1][7] == "step 4"
    assert "reference: ◆ oncall-baseline trial 0 pass" in head(screen)
    return screen


@pytest.mark.slow
async def test_from_the_task_table(app: FlakeApp) -> None:
    """The task across runs opens from the task table."""
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        cursor_on(app.tasks_screen, TASK)
        await press(pilot, "A")
        screen = await check_across(app)
        await press(pilot, "escape")
        assert app.screen is app.tasks_screen
        assert screen.model is not None


@pytest.mark.slow
async def test_from_the_matrix(app: FlakeApp) -> None:
    """The task across runs opens from the matrix."""
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "m")
        await pilot.pause(0.2)
        await settle(pilot)
        matrix = app.screen
        assert isinstance(matrix, MatrixScreen) and matrix.matrix is not None
        table = matrix.query_one(TaskTable)
        table.move_cursor_to_row(matrix.matrix.tasks.index(TASK))
        await settle(pilot)
        await press(pilot, "A")
        await check_across(app)
        await press(pilot, "escape")
        assert app.screen is matrix


@pytest.mark.slow
async def test_from_the_comparison_pane(app: FlakeApp) -> None:
    """The task across runs opens from the comparison pane."""
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        pane = app.screen
        assert isinstance(pane, CompareScreen)
        assert pane.current_row is not None and pane.rows[pane.current_row].task == TASK  # broken first
        await press(pilot, "A")
        await check_across(app)
        await press(pilot, "escape")
        assert app.screen is pane


@pytest.mark.slow
async def test_enter_opens_the_reference_beside_the_run_and_r_moves_the_reference(app: FlakeApp) -> None:
    """enter opens the reference run's traces beside the run, and r moves the reference."""
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        cursor_on(app.tasks_screen, TASK)
        await press(pilot, "A")
        screen = await check_across(app)
        await press(pilot, "down", "enter")
        traces = app.screen
        assert isinstance(traces, AcrossTracesScreen)
        assert (traces.run_a, traces.run_b) == ("oncall-baseline", "oncall-candidate")
        a, b = traces.side_a[traces.pos_a], traces.side_b[traces.pos_b]
        assert (a.run, a.trial, a.passed) == ("oncall-baseline", 0, True)
        assert b.run == "oncall-candidate" and not b.passed
        assert traces.query_one(TraceDiffView).display
        await press(pilot, "escape")
        assert app.screen is screen
        await press(pilot, "r")  # the candidate's failing trial becomes the reference
        ref = screen.model.reference_trial if screen.model else None
        assert ref is not None and (ref.run, ref.passed) == ("oncall-candidate", False)
        rows = table_rows(screen)
        assert rows[1][0] == "◆" and rows[0][0] == ""
        assert rows[0][6].endswith("pass") and rows[0][7] == "step 4"


async def test_one_run_only_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one run the view says so."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = record_notifications(app, monkeypatch)
        await press(pilot, "A")
        assert isinstance(app.screen, TasksScreen)
        assert shown == ["only one run is loaded: a task across runs needs two or more"]


@pytest.mark.slow
async def test_a_wide_comparison_pane_shows_each_flips_divergence_and_source() -> None:
    """From 140 columns the flip list has div and source: both flips part at step 4 (actions mode),
    the tool's nondeterminism (see tests/unit/test_flip_divergence.py)."""
    from flaketui.app.screens.compare import WIDE

    app = make_app([str(BASELINE), str(CANDIDATE)], k=5)
    async with app.run_test(size=(WIDE + 10, SIZE[1])) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        await settle(pilot)
        pane = app.screen
        assert isinstance(pane, CompareScreen) and pane.divergences is not None
        table = pane.query_one(TaskTable)
        keys = [c.key for c in table.columns]
        got = {table.row_text(r)[keys.index("task")]: (table.row_text(r)[keys.index("divergence")],
                                                         table.row_text(r)[keys.index("source")])
               for r in range(len(table.order))}
        assert got == {"summarizeIncident": ("4", "tool-nondeterminism"),
                       "searchRunbook": ("4", "tool-nondeterminism")}


@pytest.mark.slow
async def test_the_comparison_pane_at_120_columns_keeps_its_columns(app: FlakeApp) -> None:
    """At 120 columns the comparison pane keeps its columns."""
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        pane = app.screen
        assert isinstance(pane, CompareScreen)
        assert "divergence" not in [c.key for c in pane.query_one(TaskTable).columns]


@pytest.mark.slow
async def test_a_failed_read_says_so_in_the_status_line(app: FlakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed read says so in the status line."""
    from flaketui.traces import task_view

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("the log went away")

    monkeypatch.setattr(task_view, "task_across_runs", broken)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        cursor_on(app.tasks_screen, TASK)
        await press(pilot, "A")
        screen = app.screen
        assert isinstance(screen, AcrossRunsScreen) and screen.model is None
        assert head(screen) == "Reading the task in every run failed: OSError: the log went away"
