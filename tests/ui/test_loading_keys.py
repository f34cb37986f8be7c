"""Keys while the logs load: none of them opens a screen or types into a hidden filter,
and quitting does not wait for the load."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import flaketui.loading
from flaketui.app.app import make_app
from flaketui.app.screens.help import HelpScreen
from flaketui.app.screens.tasks import TasksScreen
from tests.conftest import BASELINE, SIZE


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
    """Keys pressed while loading do nothing but quit."""
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
