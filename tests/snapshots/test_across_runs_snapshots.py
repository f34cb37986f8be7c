"""Snapshots of one task across every loaded run (A), on the bundled fixtures at a fixed size."""

from __future__ import annotations

from pathlib import Path

import pytest

from flaketui.app.app import FlakeApp, make_app
from tests.conftest import BASELINE, CANDIDATE, SIZE
from tests.helpers.app import after


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FlakeApp:
    monkeypatch.chdir(tmp_path)
    return make_app([str(BASELINE), str(CANDIDATE)], k=5, triage="notes.triage.json")


class TestAcrossRuns:
    @pytest.mark.slow
    def test_broken_task_across_two_runs(self, snap_compare, app: FlakeApp) -> None:
        """summarizeIncident in 2 of 2 runs, reference ◆ oncall-baseline trial 0 pass; rows oncall-baseline
        (◆, 12 12 0 1.000, a passing trial, first divergence none) and oncall-candidate (12 0 0 0.000, a failing
        trial, first divergence step 4), the table focused, the footer showing Back, Traces, Reference."""
        assert snap_compare(app, run_before=after("c", "A"), terminal_size=SIZE)
