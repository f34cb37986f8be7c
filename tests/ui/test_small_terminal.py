"""At 80×24 on the bundled fixtures no screen leaves the trace or the flip list fewer than half
the rows: the header starts compact at small sizes, ``h`` collapses or expands it and ``Z``
maximises the main pane (as k9s and lazygit do)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Header

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.compare import CompareScreen
from flaketui.app.screens.compare_traces import CompareTracesScreen
from flaketui.app.screens.help import SECTIONS, bindings_of, load
from flaketui.app.screens.traces import TaskTraceScreen
from tests.conftest import BASELINE, CANDIDATE, SIZE, settle

SMALL = (80, 24)
HALF = SMALL[1] // 2


@pytest.fixture
def app(tmp_path: Path) -> FlakeApp:
    return make_app([str(BASELINE), str(CANDIDATE)], k=5, triage=str(tmp_path / "notes.json"))


async def press(pilot: Pilot, *keys: str) -> None:
    await settle(pilot)
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def rows_of(app: FlakeApp, selector: str) -> int:
    return app.screen.query_one(selector).region.height


@pytest.mark.slow
@pytest.mark.parametrize(("keys", "screen", "pane"), [
    (("enter",), TaskTraceScreen, "#trace-diff #diff-rows"),
    (("c",), CompareScreen, "#flip-table"),
    (("c", "enter"), CompareTracesScreen, "#compare-trace-diff #diff-rows"),
])
async def test_the_main_pane_gets_half_the_rows(app: FlakeApp, keys: tuple[str, ...], screen: type,
                                                pane: str) -> None:
    """On a small terminal the main pane gets half the rows."""
    async with app.run_test(size=SMALL) as pilot:
        await press(pilot, *keys)
        assert isinstance(app.screen, screen)
        assert app.screen.has_class("-compact-head")
        assert rows_of(app, pane) >= HALF


@pytest.mark.slow
@pytest.mark.parametrize(("keys", "head", "pane"), [
    (("enter",), "#trace-head", "#trace-diff #diff-rows"),
    (("c",), "#compare-summary", "#flip-table"),
    (("c", "enter"), "#compare-trace-head", "#compare-trace-diff #diff-rows"),
])
async def test_h_shows_the_whole_header_and_z_maximises(app: FlakeApp, keys: tuple[str, ...], head: str,
                                                        pane: str) -> None:
    """h shows the whole header and z maximises the pane."""
    async with app.run_test(size=SMALL) as pilot:
        await press(pilot, *keys)
        compact_head, compact_pane = rows_of(app, head), rows_of(app, pane)
        await press(pilot, "h")
        assert not app.screen.has_class("-compact-head")
        assert rows_of(app, head) > compact_head and rows_of(app, pane) < compact_pane
        await press(pilot, "h")
        assert rows_of(app, head) == compact_head and rows_of(app, pane) == compact_pane
        await press(pilot, "Z")
        assert not app.screen.query_one(Header).display or app.screen.query_one(Header).region.height == 0
        assert rows_of(app, pane) > compact_pane
        await press(pilot, "Z")
        assert rows_of(app, pane) == compact_pane


@pytest.mark.slow
async def test_a_big_terminal_shows_the_whole_header(app: FlakeApp) -> None:
    """A big terminal shows the whole header."""
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "c")
        assert not app.screen.has_class("-compact-head")
        full = rows_of(app, "#compare-summary")
        assert full >= 8  # every line of the paired summary
        await press(pilot, "h")
        assert app.screen.has_class("-compact-head") and rows_of(app, "#compare-summary") < full


def test_h_and_shift_z_are_free_on_every_screen() -> None:
    """No screen binds ``h`` or ``Z`` to anything but the header and the maximised pane."""
    for _, path in SECTIONS:
        for binding in bindings_of(load(path)):
            keys = {k.strip() for k in binding.key.split(",")}
            if "h" in keys:
                assert binding.action == "toggle_head", path
            if "Z" in keys:
                assert binding.action == "toggle_maximised", path


@pytest.mark.slow
async def test_the_header_follows_the_terminal_size(app: FlakeApp) -> None:
    """Made small, a screen's header turns compact; made big again, whole (``h`` not pressed)."""
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "c")
        assert not app.screen.has_class("-compact-head")
        await pilot.resize_terminal(*SMALL)
        await settle(pilot)
        assert app.screen.has_class("-compact-head") and rows_of(app, "#flip-table") >= HALF
        await pilot.resize_terminal(*SIZE)
        await settle(pilot)
        assert not app.screen.has_class("-compact-head")


async def test_the_task_table_keeps_ten_rows_and_its_class_whole(app: FlakeApp) -> None:
    """At 80×24 the task table shows at least ten task rows (the curves give way), the class column beside the name."""
    from flaketui.app.widgets.task_table import TaskTable

    async with app.run_test(size=SMALL) as pilot:
        await press(pilot)
        table = app.screen.query_one(TaskTable)
        assert table.region.height - 1 >= 10  # less its header line
        keys = [c.key for c in table.columns]
        assert keys[:2] == ["task", "class"]
        assert sum(c.width + 1 for c in table.columns[:2]) < SMALL[0]
        assert not app.screen.query_one("#curves").display or app.screen.query_one("#curves").region.height == 0


@pytest.mark.slow
async def test_the_plan_keeps_its_table(app: FlakeApp) -> None:
    """At 80×24 the plan's head and panels are cut so that its table keeps ten rows."""
    async with app.run_test(size=SMALL) as pilot:
        await press(pilot, "p")
        assert rows_of(app, "#plan-table") - 1 >= 10
