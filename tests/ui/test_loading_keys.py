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


@pytest.mark.slow
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


@pytest.mark.slow
async def test_keys_pressed_while_traces_are_read_run_once_they_are_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """x and d pressed right after enter, while the trials are still read, are answered at once and run after."""
    from flaketui.app.screens import traces
    from flaketui.app.screens.traces import TaskTraceScreen
    from flaketui.app.widgets.trace_view import TraceDiffView
    from tests.conftest import settle
    from tests.helpers.app import record_notifications

    read = traces.read_task
    release = threading.Event()

    def slow_read(*args: Any) -> Any:
        release.wait(20)  # until the keys were pressed
        return read(*args)

    monkeypatch.setattr(traces, "read_task", slow_read)
    app = make_app([str(BASELINE)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        told = record_notifications(app, monkeypatch)
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TaskTraceScreen) and not screen.loaded
        await pilot.press("x")
        await pilot.pause()
        assert any("still reading the traces" in m for m in told)
        release.set()
        await settle(pilot)
        await pilot.pause(0.2)
        assert screen.loaded and screen.query_one(TraceDiffView).expanded


async def test_a_key_pressed_while_the_logs_load_is_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    """enter pressed while the logs load opens nothing and is answered: still loading the logs."""
    from tests.helpers.app import record_notifications

    stopped = slow_load(monkeypatch)
    app = make_app([str(BASELINE)])
    told = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, TasksScreen)
        assert any("still loading the logs" in m for m in told)
        await pilot.press("q")
        await pilot.pause()
    assert stopped.wait(5)
