"""Snapshots of the comparison pane, the review dialogs and the A-vs-B trace screen.

On the bundled fixtures (baseline vs candidate) at a fixed terminal size. The
triage notes go to ``notes.triage.json`` in a tmp folder made the working
directory, so that the path shown is the same on every machine and nothing is
written beside the fixtures. Review new SVGs in snapshot_report.html before
accepting them with ``pytest --snapshot-update``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flaketui.app.app import FlakeApp, make_app
from tests.conftest import BASELINE, CANDIDATE, SHARED, SIZE
from tests.helpers.app import after


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FlakeApp:
    monkeypatch.chdir(tmp_path)
    return make_app([str(BASELINE), str(CANDIDATE)], k=5, triage="notes.triage.json")


class TestComparePane:
    @pytest.mark.slow
    def test_summary_and_flips(self, snap_compare, app: FlakeApp) -> None:
        """Comparison pane: flipped 1 / moved 1 line, verdict, 0 of 1 flips; summarizeIncident flipped first, then
        searchRunbook dim as ~fixed moved."""
        assert snap_compare(app, run_before=after("c"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_all_common_tasks(self, snap_compare, app: FlakeApp) -> None:
        """f: every common task (25) listed, the flipped task first and bold, the moved one marked, unchanged dim."""
        assert snap_compare(app, run_before=after("c", "f"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_reviewed_labelled_and_noted(self, snap_compare, app: FlakeApp) -> None:
        """Flipped task labelled real-regression (✓), the moved one noted; 1 of 1 flips reviewed."""
        keys = ("c", "l", "6", "n", "w", *"retriever sorts tied chunks", "enter")
        assert snap_compare(app, run_before=after(*keys), terminal_size=SIZE)


    @pytest.mark.slow
    def test_unreviewed_only(self, snap_compare, app: FlakeApp) -> None:
        """Reviewed flipped task hidden by u: only searchRunbook (moved) is listed; 1 of 1 flips reviewed."""
        assert snap_compare(app, run_before=after("c", "space", "u"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_filter_without_match(self, snap_compare, app: FlakeApp) -> None:
        """/ nosuchtask: the filter box reads “nosuchtask” and the empty list says no task matches "nosuchtask"."""
        assert snap_compare(app, run_before=after("c", "slash", *"nosuchtask"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_compact_summary_at_80x24(self, snap_compare, app: FlakeApp) -> None:
        """80×24: the compact summary in four lines (fixed 1 · broken 1 · unchanged 23…, flipped 1…, verdict…,
        0 of 1 flips reviewed   h: the whole summary), the flip list on rows 5–22."""
        assert snap_compare(app, run_before=after("c"), terminal_size=(80, 24))

    @pytest.mark.slow
    def test_filtered_by_name(self, snap_compare, app: FlakeApp) -> None:
        """/ search: the filter box reads “search” and only searchRunbook is listed."""
        assert snap_compare(app, run_before=after("c", "slash", *"search", "enter"), terminal_size=SIZE)


GEN = SHARED / "bench" / "gen_trials.py"


@pytest.fixture
def eleven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FlakeApp:
    if not GEN.exists():
        pytest.skip("the shared generator is not on this machine")
    monkeypatch.chdir(tmp_path)
    runs = ",".join(f"r{i}" for i in range(1, 12))
    subprocess.run([sys.executable, str(GEN), "--tasks", "40", "--trials", "6", "--steps", "1", "--runs", runs,
                    "--seed", "3", "--out", "eleven.jsonl"], check=True, capture_output=True)
    return make_app(["eleven.jsonl"], triage="notes.triage.json")


class TestMatrix:
    @pytest.mark.slow
    def test_eleven_runs(self, snap_compare, eleven: FlakeApp) -> None:
        """m: 11 runs × 40 tasks, p̂ shaded red to green, * flaky, trend sparklines, sorted by var (largest first)."""
        assert snap_compare(eleven, run_before=after("m"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_newly_flaky_since_r1(self, snap_compare, eleven: FlakeApp) -> None:
        """v: only the tasks stable in r1 and flaky in r11, the summary naming the filter and its count."""
        assert snap_compare(eleven, run_before=after("m", "v"), terminal_size=SIZE)


class TestDialogs:
    @pytest.mark.slow
    def test_label_picker(self, snap_compare, app: FlakeApp) -> None:
        """The cause-label picker over the pane: eight numbered labels with meanings, 0 for none."""
        assert snap_compare(app, run_before=after("c", "l"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_note_editor(self, snap_compare, app: FlakeApp) -> None:
        """The note editor over the pane with “reads PM-1740 first” typed, not yet saved."""
        assert snap_compare(app, run_before=after("c", "w", *"reads PM-1740 first"),
                            terminal_size=SIZE)


class TestCompareTraces:
    @pytest.mark.slow
    def test_broken_task_pass_beside_fail(self, snap_compare, app: FlakeApp) -> None:
        """Broken summarizeIncident: a passing trial of A beside a failing one of B, not reviewed."""
        assert snap_compare(app, run_before=after("c", "enter"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_fixed_task_fail_beside_pass(self, snap_compare, app: FlakeApp) -> None:
        """n, then l 7: fixed searchRunbook labelled real-fix, a failing A beside a passing B."""
        assert snap_compare(app, run_before=after("c", "enter", "n", "l", "7"),
                            terminal_size=SIZE)

    @pytest.mark.slow
    def test_compact_at_80x24(self, snap_compare, app: FlakeApp) -> None:
        """80×24 summarizeIncident: the one-line head (… broken   p̂ 1.000 → 0.000 … 1 of 2 …), one-line divergence and
        labels, the steps on rows 4–22."""
        assert snap_compare(app, run_before=after("c", "enter"), terminal_size=(80, 24))


class TestTaskTableReview:
    @pytest.mark.slow
    def test_flaky_task_labelled(self, snap_compare, app: FlakeApp) -> None:
        """The task table's review column: searchRunbook ✓ ordering-concurrency, with a note."""
        keys = ("l", "3", "w", *"tied chunks", "enter")
        assert snap_compare(app, run_before=after(*keys), terminal_size=SIZE)
