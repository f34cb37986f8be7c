"""Snapshots of the plan view on the bundled fixtures, at a fixed terminal size."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from flaketui.app.app import FlakeApp, make_app
from tests.conftest import BASELINE, FIXTURES, SIZE, settle


async def plan_open(pilot: Pilot) -> None:
    """snap_compare runs this before ``press``; it never waits for workers itself."""
    await settle(pilot)
    await pilot.press("p")
    await settle(pilot)


async def plan_with_budget(pilot: Pilot) -> None:
    """Open the plan view, b, type a budget of 200 and press enter."""
    await plan_open(pilot)
    await pilot.press("b", *"200", "enter")
    await settle(pilot)


@pytest.fixture
def app() -> FlakeApp:
    return make_app([str(FIXTURES)], k=5)


class TestPlanView:
    @pytest.mark.slow
    def test_opens_on_the_highlighted_task(self, snap_compare, app: FlakeApp) -> None:
        """Plan of oncall-baseline without budget: searchRunbook's figures, paired sizes, "b: type a budget", the
        table focused (its cursor row highlighted), the budget box empty."""
        assert snap_compare(app, run_before=plan_open, terminal_size=SIZE)

    @pytest.mark.slow
    def test_budget_of_200(self, snap_compare, app: FlakeApp) -> None:
        """200 trials planned on 20 tasks: SE now and after, +trials and why per task, paired sizes."""
        assert snap_compare(app, run_before=plan_with_budget, terminal_size=SIZE)

    @pytest.mark.slow
    def test_one_run(self, snap_compare) -> None:
        """One run loaded: independent size only, "load a second run of the same tasks" for paired."""
        assert snap_compare(make_app([str(BASELINE)], k=5), run_before=plan_with_budget,
                            terminal_size=SIZE)
