"""A load that crashes (not an input error) is told, and its error replaces "Loading logs…"."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from textual.worker import WorkerFailed

import flaketui.loading
from flaketui.app.app import make_app
from tests.conftest import BASELINE, SIZE


async def test_a_crashed_load_is_told_on_the_loading_pane(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loading pane's worker raising shows the error in place of the progress and in a notification."""
    def load_logs(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(flaketui.loading, "load_logs", load_logs)
    app = make_app([str(BASELINE)])
    async with app.run_test(size=SIZE) as pilot:
        with contextlib.suppress(WorkerFailed):
            await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.pause()
        screen = app.tasks_screen
        label = str(screen.query_one("#loading-label").render())
        assert label.startswith("flaketui: error: disk on fire")
        assert screen.sub_title == "error"
        assert any("disk on fire" in n.message for n in app._notifications)
