"""Snapshot of the task table's cause? column on the bundled fixtures.

Review new SVGs in snapshot_report.html before accepting them with ``pytest --snapshot-update``.
"""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from flaketui.app.app import make_app
from tests.conftest import FIXTURES, SIZE, settle


def test_sorted_by_cause(snap_compare) -> None:
    """Sorted by cause? ▲: searchRunbook's dim tool-nondeterminism on top, the breakdown line in the summary."""
    async def run(pilot: Pilot) -> None:
        await settle(pilot)
        pilot.app.tasks_screen.action_sort_by("suspected_cause")
        await settle(pilot)

    assert snap_compare(make_app([str(FIXTURES)], k=5), run_before=run, terminal_size=SIZE)


@pytest.mark.slow
def test_failure_modes(snap_compare) -> None:
    """M on the baseline: its mixed tasks' failures grouped by signature, most trials first, the sources line above."""
    async def run(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("M")
        await settle(pilot)

    assert snap_compare(make_app([str(FIXTURES)], k=5), run_before=run, terminal_size=SIZE)
