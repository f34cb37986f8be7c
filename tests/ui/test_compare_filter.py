"""The comparison pane's filter that matches no task says so (``no task matches "TEXT"``),
not that no task flipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from flaketui.app.app import make_app
from flaketui.app.screens.compare import CompareScreen
from flaketui.app.widgets.task_table import TaskTable
from tests.conftest import BASELINE, CANDIDATE, SIZE, settle


@pytest.mark.slow
async def test_a_filter_without_match_names_its_text(tmp_path: Path) -> None:
    """A comparison filter without a match names its text."""
    app = make_app([str(BASELINE), str(CANDIDATE)], k=5, triage=str(tmp_path / "notes.json"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await pilot.press("slash", *"nosuchtask")
        await settle(pilot)
        table = screen.query_one(TaskTable)
        assert len(table.order) == 0
        assert table.empty_text == 'no task matches "nosuchtask"'
        await pilot.press("escape")  # the filter cleared: the flips again
        await settle(pilot)
        assert len(table.order) > 0 and "matches" not in table.empty_text
