"""k and the divergence mode are the app's reactives: whoever sets them, the task table follows."""

from __future__ import annotations

from flaketui.app.app import make_app
from flaketui.app.widgets.run_summary import RunSummary
from tests.conftest import BASELINE, SIZE, settle


async def test_setting_k_on_the_app_redraws_the_table() -> None:
    """k set on the app (not by the table's keys) recomputes the table's statistics and its summary."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.k = 2
        await pilot.pause()
        screen = app.tasks_screen
        assert screen.stats is not None and screen.stats.k == 2
        assert app.session.k == 2
        assert "k = 2" in str(screen.query_one(RunSummary).render())


async def test_setting_the_divergence_mode_finds_the_divergences_again() -> None:
    """A divergence mode set on the app drops every run's steps and finds the shown run's in that mode."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        state = app.session.run(app.tasks_screen.run)
        assert state.divergences and state.divergence_mode is None
        app.divergence_mode = "all"
        await settle(pilot)
        assert state.divergence_mode == "all" and state.divergences
        assert app.session.divergence == "all"
