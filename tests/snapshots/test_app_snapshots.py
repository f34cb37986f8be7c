"""Snapshots of the task table, the trace screen and help on the bundled fixtures.

Fixed terminal size and fixed fixtures; review new SVGs in snapshot_report.html
before accepting them with ``pytest --snapshot-update``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from textual.pilot import Pilot

from flaketui.app.app import FlakeApp, make_app
from tests.conftest import FIXTURES, SIZE, settle
from tests.helpers.app import after


def open_task(task: str, *keys: str) -> Callable[[Pilot], Awaitable[None]]:
    """Filter the table to ``task``, open it, then press ``keys``."""
    return after("slash", *task, "enter", "enter", *keys)


@pytest.fixture
def app() -> FlakeApp:
    return make_app([str(FIXTURES)], k=5)


class TestTaskTable:
    def test_default(self, snap_compare, app: FlakeApp) -> None:
        """Task table at k = 5: flaky searchRunbook (amber) on top by flakiness ↓, the summary, the k curves."""
        assert snap_compare(app, run_before=after(), terminal_size=SIZE)

    @pytest.mark.slow
    def test_sorted_by_p_hat_ascending(self, snap_compare, app: FlakeApp) -> None:
        """Sorted by p̂ ascending (▲ on p̂): the always-failing tasks, p̂ 0.000 in red, on top."""
        # Sort by p̂ (descending first), then S reverses it to ascending.
        async def run(pilot: Pilot) -> None:
            await settle(pilot)
            pilot.app.tasks_screen.action_sort_by("p_hat")
            await pilot.press("S")
            await settle(pilot)

        assert snap_compare(app, run_before=run, terminal_size=SIZE)

    @pytest.mark.slow
    def test_filtered(self, snap_compare, app: FlakeApp) -> None:
        """The name filter with “alert” typed: only tasks whose names contain it, counted in the title."""
        assert snap_compare(app, run_before=after("slash", *"alert"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_k_changed(self, snap_compare, app: FlakeApp) -> None:
        """k raised to 7 (+ +): pass@7 / pass^7 headers, summary and curves recomputed; cursor on row 2."""
        assert snap_compare(app, run_before=after("plus", "plus", "down"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_second_run(self, snap_compare, app: FlakeApp) -> None:
        """r, down, enter: the second run (oncall-candidate) with its own summary, table and curves."""
        assert snap_compare(app, run_before=after("r", "down", "enter"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_run_picker(self, snap_compare, app: FlakeApp) -> None:
        """r: the run picker over the table, both runs with tasks and trials, oncall-baseline (shown) highlighted."""
        assert snap_compare(app, run_before=after("r"), terminal_size=SIZE)


class TestTraceScreen:
    @pytest.mark.slow
    def test_divergence_highlighted(self, snap_compare, app: FlakeApp) -> None:
        """searchRunbook: a passing trace (A) beside a failing one (B), first divergence at step 3."""
        assert snap_compare(app, run_before=after("enter"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_fork_map(self, snap_compare, app: FlakeApp) -> None:
        """searchRunbook's fork map: every trial as a tree of shared steps, ◆ where the outcomes part."""
        assert snap_compare(app, run_before=after("enter", "f"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_one_sided_task(self, snap_compare, app: FlakeApp) -> None:
        """listAlerts (all pass): one passing trace, the note that none failed, its rule of three."""
        assert snap_compare(app, run_before=open_task("listAlerts"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_no_traces(self, snap_compare, app: FlakeApp) -> None:
        """pingHealthcheck (no traces): the yellow message that there is nothing to compare, and why."""
        assert snap_compare(app, run_before=open_task("pingHealthcheck"), terminal_size=SIZE)


class TestHelp:
    @pytest.mark.slow
    def test_help(self, snap_compare, app: FlakeApp) -> None:
        """Help over the task table: every key of every screen, with what it does."""
        assert snap_compare(app, run_before=after("question_mark"), terminal_size=SIZE)


def themed(theme: str) -> Callable[[Pilot], Awaitable[None]]:
    """Load, then switch the app to ``theme``."""

    async def run(pilot: Pilot) -> None:
        await settle(pilot)
        pilot.app.theme = theme
        await settle(pilot)

    return run


class TestThemes:
    def test_textual_dark(self, snap_compare, app: FlakeApp) -> None:
        """textual-dark: the task table on the dark surface, rates and classes in the theme's colours."""
        assert snap_compare(app, run_before=themed("textual-dark"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_textual_light(self, snap_compare, app: FlakeApp) -> None:
        """textual-light: every table row on the light surface (none left dark), colours from the theme."""
        assert snap_compare(app, run_before=themed("textual-light"), terminal_size=SIZE)


class TestGradedScores:
    def test_mean_score_column(self, snap_compare, tmp_path) -> None:
        """A graded run: the labelled `mean score`, `score CI` and `score SD` columns after p̂'s interval, no
        median reward column; fix-perms fails every trial yet its score moves (0.55, 0.91, 0.098)."""
        from tests.helpers.logs import write_log

        scores = {"fix-perms": [0.55, 0.91, 0.098], "hello": [1.0, 1.0, 0.0], "setup": [0.4, 0.5, 0.6],
                  "solved": [1.0, 1.0, 1.0]}
        log = write_log(tmp_path / "graded.jsonl", [{"task": t, "trial": i, "reward": x, "metrics": {"reward": x}}
                                                    for t, xs in scores.items() for i, x in enumerate(xs)])
        assert snap_compare(make_app([str(log)], k=3), run_before=after(), terminal_size=SIZE)
