"""The history screen's trend chart (the suite's pass@1 and pass^k, the task's p̂ over the recorded
runs) and its suite view (``s``: history trend's text)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.widgets import DataTable

from flaketui.app.app import make_app
from flaketui.app.screens.history import HistoryScreen
from flaketui.app.widgets.trend_chart import TrendChart
from flaketui.cli import main
from tests.conftest import BASELINE, CANDIDATE, FIXTURES, SIZE, settle


def record(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    result = CliRunner().invoke(main, ["history", "record", str(BASELINE), str(CANDIDATE), "--history", url])
    assert result.exit_code == 0, result.output
    return url


def text_of(chart: TrendChart) -> str:
    return str(chart.content)


@pytest.mark.slow
async def test_chart_and_suite_view(tmp_path: Path) -> None:
    """The chart has y ticks, both runs named and dated, no F mark (one mixed run is undetermined); s: the suite."""
    app = make_app([str(FIXTURES)], k=5, history=record(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        chart = text_of(screen.query_one("#history-chart", TrendChart))
        assert " 1.0 ┤" in chart and "┤ ✕" in chart
        assert "1  oncall-baseline" in chart and "2  oncall-candidate" in chart and "2026-" in chart
        assert "p̂ of searchRunbook" in chart and "\n       F" not in chart
        suite = screen.query_one("#history-suite", TrendChart)
        assert not suite.display
        await pilot.press("s")
        await settle(pilot)
        assert suite.display and not screen.query_one(DataTable).display
        assert "2 of 2 recorded runs, oldest first" in text_of(suite)
        assert "PASS@1 [95% CI]" in text_of(suite)
        await pilot.press("s")
        await settle(pilot)
        assert not suite.display and screen.query_one(DataTable).display
