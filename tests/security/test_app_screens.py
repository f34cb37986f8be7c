"""Every screen of the app on a log whose names and trace contents are hostile: no crash
(no name read as markup) and no raw control character on screen."""

from __future__ import annotations

from pathlib import Path

import pytest

from flaketui.app.app import make_app
from tests.conftest import SIZE
from tests.helpers.hostile import raw_controls, write_hostile_log

WALK = [
    ("PlanScreen", ["p"]), ("TasksScreen", ["escape"]),
    ("CompareScreen", ["c"]), ("TasksScreen", ["escape"]),
    ("MatrixScreen", ["m"]), ("TasksScreen", ["escape"]),
    ("TaskTraceScreen", ["down", "enter"]), ("InspectorScreen", ["i"]),
    ("TaskTraceScreen", ["escape"]), ("TasksScreen", ["escape"]),
    ("ProblemsScreen", ["e"]), ("TasksScreen", ["escape"]),
    ("RunPicker", ["r"]), ("TasksScreen", ["escape"]),
    ("HelpScreen", ["question_mark"]), ("TasksScreen", ["escape"]),
    ("LabelPicker", ["l"]), ("TasksScreen", ["escape"]),
]


@pytest.mark.slow
@pytest.mark.ui
async def test_every_screen_shows_hostile_names_as_text(tmp_path: Path) -> None:
    """Every screen shows hostile names as plain text."""
    log = write_hostile_log(tmp_path / "hostile.jsonl")
    app = make_app([str(log)], triage=str(tmp_path / "notes.triage.json"))
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for screen, keys in WALK:
            for key in keys:
                await pilot.press(key)
                await app.workers.wait_for_complete()
                await pilot.pause()
            assert type(app.screen).__name__ == screen
            assert raw_controls(app.export_screenshot()) == [], screen
