"""Pilot tests of issue 14's leftovers: one meaning per key (``X`` swaps A/B, ``x`` expands),
a swap keeps the reviews, "decided outside the trace" only when the outcomes differ, and a
loading indicator while the A-vs-B traces are read.

Fixtures as in tests/ui/test_compare.py: baseline → candidate, summarizeIncident broken
(12/12 → 0/12, the flipped task), searchRunbook moved (10/12 → 12/12).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.compare import CompareScreen
from flaketui.app.screens.compare_traces import CompareTracesScreen
from flaketui.app.widgets.trace_view import TraceDiffView
from flaketui.model import FAIL, PASS, Trial
from flaketui.output import review
from flaketui.triage import TriageEntry, TriageKey, load_entries
from tests.conftest import BASELINE, CANDIDATE, SIZE, settle
from tests.ui.test_compare import BROKEN_KEY, A, B, open_pane, press, rows, summary


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

    async def test_lower_x_does_not_swap(self, app: FlakeApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "x")
            assert isinstance(app.screen, CompareScreen)
            assert (app.screen.run_a, app.screen.run_b) == (A, B)

    async def test_a_swap_keeps_the_reviews(self, app: FlakeApp) -> None:
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
    ab, ba = TriageKey.flip("a", "b", "t"), TriageKey.flip("b", "a", "t")
    assert review.flip_key({}, "a", "b", "t") == ab
    assert review.flip_key({ba: TriageEntry(reviewed=True)}, "a", "b", "t") == ba
    assert review.flip_key({ab: TriageEntry(), ba: TriageEntry()}, "a", "b", "t") == ab


def trial(outcome: int, trace: list[Any]) -> Trial:
    return Trial(run="r", task="t", trial=0, outcome=outcome, score=None, group=None, metrics={},
                 error=None, trace=trace, extra={}, location="r.jsonl:1")


TRACE = [{"role": "user", "content": "book it"},
         {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "book", "arguments": "{}"}}]}]


@pytest.mark.parametrize(("a", "b", "outside"), [
    (PASS, PASS, False), (FAIL, FAIL, False), (PASS, FAIL, True), (FAIL, PASS, True)])
def test_outside_the_trace_only_when_the_outcomes_differ(a: int, b: int, outside: bool) -> None:
    view = TraceDiffView(trial(a, TRACE), trial(b, list(TRACE)), "A", "B")
    text = view.divergence_text().plain
    assert view.first_divergence is None and "equal after normalisation" in text
    assert ("the outcome was decided outside the trace" in text) is outside


class TestLoadingIndicator:
    async def test_the_trace_pane_shows_loading_while_the_trials_are_read(
            self, app: FlakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
        import flaketui.loading

        release = threading.Event()
        release.set()
        read = flaketui.loading.read_trial

        def slow_read(*args: Any, **kwargs: Any) -> Trial:
            assert release.wait(30)
            return read(*args, **kwargs)

        monkeypatch.setattr(flaketui.loading, "read_trial", slow_read)
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            release.clear()
            await pilot.press("enter")
            await pilot.pause(0.2)
            screen = app.screen
            assert isinstance(screen, CompareTracesScreen) and not screen.loaded
            view = screen.query_one(TraceDiffView)
            assert view.loading
            assert screen.query_one("#compare-trace-status").display
            release.set()
            await settle(pilot)
            assert screen.loaded and not view.loading and view.display
            # The next flip: its traces are read while the old pair is on screen.
            release.clear()
            await pilot.press("n")
            await pilot.pause(0.2)
            assert view.loading and not screen.loaded
            release.set()
            await settle(pilot)
            assert screen.loaded and not view.loading
