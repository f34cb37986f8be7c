"""The plan view opens with its table focused, so the documented ``b`` moves to the budget box
(it used to open in the box, where ``b`` typed a ``b``)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input

from flaketui.app.app import make_app
from flaketui.app.screens.plan import PlanScreen
from tests.conftest import BASELINE, SIZE, settle


@pytest.mark.slow
async def test_opens_on_the_table_and_b_focuses_the_budget() -> None:
    """The plan opens on the table and b focuses the budget."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, PlanScreen)
        assert isinstance(screen.focused, DataTable)
        await pilot.press("b")
        await pilot.pause()
        box = screen.query_one("#budget", Input)
        assert screen.focused is box and box.value == ""  # focused, no "b" typed into it
        await pilot.press(*"40", "enter")
        await settle(pilot)
        assert screen.budget == 40 and isinstance(screen.focused, DataTable)
