"""Copying the highlighted task's id to the clipboard, and a screenshot saved to the current folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from flaketui.app.app import make_app
from tests.conftest import BASELINE, SIZE
from tests.helpers.app import ready, record_notifications


@pytest.mark.slow
async def test_copy_task_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """y copies the task id."""
    app = make_app([str(BASELINE)], k=5)
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    shown = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("down", "y")
        await pilot.pause()
        # The second row: the first stable-fail task (ties by p̂, as the report orders them).
        assert copied == [app.tasks_screen.current_task] == ["failoverDatabase"]
        assert shown[-1] == "copied failoverDatabase"


async def test_screenshot_goes_to_the_current_folder(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A screenshot goes to the current folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home-without-downloads"))
    app = make_app([str(BASELINE)], k=5)
    shown = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.deliver_screenshot()  # what the palette's Screenshot command calls
        await pilot.pause()
    written = list(tmp_path.glob("*.svg"))
    assert len(written) == 1
    assert shown[-1] == f"Saved screenshot to {written[0]}"
