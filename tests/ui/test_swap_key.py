"""Swapping A and B in the comparison pane: ``X`` swaps (``x`` is "expand" on the A-vs-B trace
screen), and a swap keeps the reviews, which find a flip's entry in either direction.

Fixtures as in tests/ui/test_compare.py: baseline → candidate, summarizeIncident broken
(12/12 → 0/12, the flipped task), searchRunbook moved (10/12 → 12/12).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.compare import CompareScreen
from flaketui.app.screens.compare_traces import CompareTracesScreen
from flaketui.output import review
from flaketui.triage import TriageEntry, TriageKey, load_entries
from tests.conftest import BASELINE, CANDIDATE, SIZE
from tests.helpers.app import press
from tests.helpers.compare import BROKEN_KEY, A, B, open_pane, rows, summary


@pytest.fixture
def app(tmp_path: Path) -> FlakeApp:
    """Both fixture runs, the notes in a tmp file."""
    return make_app([str(BASELINE), str(CANDIDATE)], triage=str(tmp_path / "notes.triage.json"))


def reviewed_marks(app: FlakeApp) -> dict[str, str]:
    return {r["task"]: r["reviewed"] for r in rows(app)}


class TestSwapKey:
    def test_x_has_one_meaning_across_the_pane_and_its_trace_screen(self) -> None:
        """``x`` is "expand" on the A-vs-B trace screen, so the pane swaps with ``X``."""
        pane = {b.key: b.action for b in CompareScreen.BINDINGS}
        traces = {b.key: b.action for b in CompareTracesScreen.BINDINGS}
        assert traces["x"] == "toggle_expand"
        assert "x" not in pane and pane["X"] == "swap_runs"

    @pytest.mark.slow
    async def test_lower_x_does_not_swap(self, app: FlakeApp) -> None:
        """Lower-case x does not swap the runs."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "x")
            assert isinstance(app.screen, CompareScreen)
            assert (app.screen.run_a, app.screen.run_b) == (A, B)

    @pytest.mark.slow
    async def test_a_swap_keeps_the_reviews(self, app: FlakeApp) -> None:
        """Swapping A and B keeps the reviews."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            total = len(app.screen.flips)
            assert total >= 1
            await press(pilot, "space")  # the cursor starts on the flipped (broken) task
            before = review.progress_line(1, total)
            assert before in summary(app)
            assert reviewed_marks(app)["summarizeIncident"] == "✓"
            await press(pilot, "X")
            assert isinstance(app.screen, CompareScreen)
            assert (app.screen.run_a, app.screen.run_b) == (B, A)
            assert before in summary(app) and before in app.screen.sub_title
            assert reviewed_marks(app)["summarizeIncident"] == "✓"
            # A label given after the swap lands on the same entry, not a second one.
            await press(pilot, "l", "6")
            assert app.triage_store.path is not None
            entries = load_entries(app.triage_store.path)
            assert entries[BROKEN_KEY].label == "real-regression" and entries[BROKEN_KEY].reviewed
            assert TriageKey.flip(B, A, "summarizeIncident") not in entries
            # The A-vs-B trace screen of the swapped pane shows the same review.
            await press(pilot, "enter")
            assert isinstance(app.screen, CompareTracesScreen)
            head = str(app.screen.query_one("#compare-trace-head").render())
            assert "reviewed real-regression" in head and "not reviewed" not in head


def test_flip_key_finds_either_direction() -> None:
    """flip_key finds a flip's note stored in either direction."""
    ab, ba = TriageKey.flip("a", "b", "t"), TriageKey.flip("b", "a", "t")
    assert review.flip_key({}, "a", "b", "t") == ab
    assert review.flip_key({ba: TriageEntry(reviewed=True)}, "a", "b", "t") == ba
    assert review.flip_key({ab: TriageEntry(), ba: TriageEntry()}, "a", "b", "t") == ab
