"""Snapshots of a task's history (H) on the bundled fixtures, recorded at fixed times."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from textual.pilot import Pilot

from flaketui.app.app import FlakeApp, make_app
from flaketui.history import RunRecord, open_store
from flaketui.loading import load_logs
from flaketui.model import FieldMap
from tests.conftest import BASELINE, CANDIDATE, FIXTURES, SIZE, settle


async def history_open(pilot: Pilot) -> None:
    """snap_compare runs this before ``press``; it never waits for workers itself."""
    await settle(pilot)
    await pilot.press("H")
    await settle(pilot)


@pytest.fixture
def app(tmp_path: Path) -> FlakeApp:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    with open_store(url) as store:
        for day, path in enumerate((BASELINE, CANDIDATE), start=1):
            log = load_logs([str(path)], FieldMap())
            for name in log.runs:
                o = log.run_outcomes(name)
                store.record([RunRecord(name, o.tasks, o.n, o.passes, o.errored)],
                             now=dt.datetime(2026, 3, day, 9, 30, tzinfo=dt.timezone.utc))
    return make_app([str(FIXTURES)], k=5, history=url)


class TestHistoryScreen:
    @pytest.mark.slow
    def test_timeline_of_search_runbook(self, snap_compare, app: FlakeApp) -> None:
        """searchRunbook flaky in 2 of 2 runs, "12 clean trials since run oncall-baseline: 17 more to call it
        fixed at cap 0.1"; a chart ticked 1.0 / 0.85 / 0.7 over runs 1 and 2 (the suite's pass@1 and pass^12 and
        the task's p̂: 0.83 then 1.0), F under run 1, the runs named and dated below; rows oncall-baseline
        (2026-03-01, 12 10 0 0.83 flaky) and oncall-candidate (2026-03-02, 12 12 0 1.00 flaky), an empty note
        column, the table focused."""
        assert snap_compare(app, run_before=history_open, terminal_size=SIZE)

    @pytest.mark.slow
    def test_suite_trend_view(self, snap_compare, app: FlakeApp) -> None:
        """s on the history screen: "2 of 2 recorded runs, oldest first; pass^12 at k = 12", a chart ticked from
        1.0 down over runs 1 and 2 (oncall-baseline 2026-03-01, oncall-candidate 2026-03-02), F under run 1
        (searchRunbook turned flaky),
        a line per run with pass@1 and pass^12 intervals and its flaky / undetermined / quarantined counts."""
        async def suite(pilot: Pilot) -> None:
            await history_open(pilot)
            await pilot.press("s")
            await settle(pilot)

        assert snap_compare(app, run_before=suite, terminal_size=SIZE)

    @pytest.mark.slow
    def test_task_table_state_column(self, snap_compare, app: FlakeApp) -> None:
        """The task table with a history: a state column after class (searchRunbook flaky in yellow, the
        always-passing tasks stable), the rest of the table as without one."""
        async def loaded(pilot: Pilot) -> None:
            await settle(pilot)
            await settle(pilot)

        assert snap_compare(app, run_before=loaded, terminal_size=SIZE)
