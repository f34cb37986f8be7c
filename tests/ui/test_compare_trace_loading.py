"""The A-vs-B trace screen shows that it is loading while the two trials are read, for the
first flip and for each next one, with the old pair on screen meanwhile."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.compare_traces import CompareTracesScreen
from flaketui.app.widgets.trace_view import TraceDiffView
from flaketui.model import Trial
from tests.conftest import BASELINE, CANDIDATE, SIZE, settle
from tests.helpers.compare import open_pane


@pytest.fixture
def app(tmp_path: Path) -> FlakeApp:
    """Both fixture runs, the notes in a tmp file."""
    return make_app([str(BASELINE), str(CANDIDATE)], triage=str(tmp_path / "notes.triage.json"))


class TestLoadingIndicator:
    @pytest.mark.slow
    async def test_the_trace_pane_shows_loading_while_the_trials_are_read(
            self, app: FlakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
        """The trace pane shows loading while the trials are read."""
        import flaketui.loading

        release = threading.Event()
        release.set()
        read = flaketui.loading.read_trial

        def slow_read(*args: Any, **kwargs: Any) -> Trial:
            assert release.wait(30)
            return read(*args, **kwargs)

        monkeypatch.setattr(flaketui.loading, "read_trial", slow_read)
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            release.clear()
            await pilot.press("enter")
            await pilot.pause(0.2)
            screen = app.screen
            assert isinstance(screen, CompareTracesScreen) and not screen.loaded
            view = screen.query_one(TraceDiffView)
            assert view.loading
            assert screen.query_one("#compare-trace-status").display
            release.set()
            await settle(pilot)
            assert screen.loaded and not view.loading and view.display
            # The next flip: its traces are read while the old pair is on screen.
            release.clear()
            await pilot.press("n")
            await pilot.pause(0.2)
            assert view.loading and not screen.loaded
            release.set()
            await settle(pilot)
            assert screen.loaded and not view.loading
