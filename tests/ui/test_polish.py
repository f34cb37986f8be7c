"""Pilot tests of issue 14 on the task table and the app shell: keys while loading, sort
arrows, task names, 80×24, k = 1, the run picker, copy / export / editor, hostile names."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

import flaketui.loading
from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.help import HelpScreen
from flaketui.app.screens.tasks import TasksScreen
from flaketui.app.widgets.task_table import TaskTable
from tests.conftest import BASELINE, CANDIDATE, SIZE


async def ready(pilot: Pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def table(app: FlakeApp) -> TaskTable:
    return app.tasks_screen.query_one(TaskTable)


def slow_load(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Make loading report progress forever until cancelled; the event is set when it stops."""
    stopped = threading.Event()

    def load_logs(paths: Any, fields: Any = None, progress: Any = None, **kw: Any) -> Any:
        try:
            for i in range(2000):  # at most 20 s
                progress(i, 10_000)
                threading.Event().wait(0.01)
        finally:
            stopped.set()
        raise AssertionError("the load was not cancelled")

    monkeypatch.setattr(flaketui.loading, "load_logs", load_logs)
    return stopped


@pytest.mark.parametrize("quit_key", ["q", "ctrl+c"])
async def test_keys_while_loading_do_nothing_but_quit(monkeypatch: pytest.MonkeyPatch,
                                                      quit_key: str) -> None:
    stopped = slow_load(monkeypatch)
    app = make_app([str(BASELINE)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.tasks_screen
        assert screen.has_class("-loading")
        await pilot.press("x", "slash", "a", "s", "question_mark", "enter", "r", "p")
        await pilot.pause()
        # No hidden filter took the keys, no help or other screen opened.
        assert screen.filter_text == ""
        assert screen.query_one("#filter").value == ""
        assert not isinstance(app.screen, HelpScreen) and isinstance(app.screen, TasksScreen)
        assert app.return_code is None
        await pilot.press(quit_key)
        await pilot.pause()
        assert app.return_code is not None  # exiting at once, not after the load
    assert stopped.wait(5)
