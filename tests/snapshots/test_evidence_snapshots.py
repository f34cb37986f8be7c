"""Snapshots of the trace screen's evidence line and the fork map's decisive fork on the bundled fixtures.

Review new SVGs in snapshot_report.html before accepting them with ``pytest --snapshot-update``.
"""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from flaketui.app.app import make_app
from tests.conftest import BASELINE, SIZE, settle


async def open_search_runbook(pilot: Pilot) -> None:
    from flaketui.app.widgets.task_table import TaskTable

    await settle(pilot)
    app = pilot.app
    app.screen.query_one(TaskTable).move_cursor_to_row(app.tasks_screen.outcomes.index("searchRunbook"))  # type: ignore[attr-defined]
    await pilot.press("enter")
    await settle(pilot)


@pytest.mark.slow
def test_trace_screen_evidence_line(snap_compare) -> None:
    """searchRunbook's trace screen: under the header, cause? tool-nondeterminism 20 of 20 pairs, step 3's two results
    cut, and the decisive fork at step 3 (0 of 2 vs 10 of 10, Fisher p = 0.015, Holm 0.045)."""
    assert snap_compare(make_app([str(BASELINE)], k=5), run_before=open_search_runbook, terminal_size=SIZE)


@pytest.mark.slow
def test_fork_map_decisive_mark(snap_compare) -> None:
    """searchRunbook's fork map in all mode: the split into step 3's three results marked ◆ decisive: p = 0.015
    (Holm 0.045), each branch with its passes/trials."""
    async def run(pilot: Pilot) -> None:
        await open_search_runbook(pilot)
        for key in ("v", "f"):
            await pilot.press(key)
            await settle(pilot)

    assert snap_compare(make_app([str(BASELINE)], k=5), run_before=run, terminal_size=SIZE)
