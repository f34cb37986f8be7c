"""Pilot tests of the cause? column: filled by a worker, kept in the triage file, pre-selected by ``l``."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from textual.widgets import OptionList, Static
from textual.worker import WorkerFailed

from flaketui.app.app import make_app
from flaketui.app.screens.tasks import TasksScreen
from flaketui.app.screens.triage_dialogs import LabelPicker
from flaketui.app.widgets.task_table import TaskTable
from flaketui.triage import LABELS, TriageKey, TriageStore
from tests.conftest import BASELINE, SIZE, settle

KEY = TriageKey("oncall-baseline", "searchRunbook")


def summary_text(screen: TasksScreen) -> str:
    return str(screen.query_one("#summary", Static).render())


@pytest.mark.slow
async def test_column_fills_in_and_l_preselects(tmp_path: Path) -> None:
    """The cause column fills in and l preselects the suggested label."""
    notes = tmp_path / "notes.json"
    app = make_app([str(BASELINE)], triage=str(notes))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.tasks_screen
        table = screen.query_one(TaskTable)
        assert "suspected_cause" in [c.key for c in table.columns]
        row = screen.stats.tasks.index("searchRunbook")
        cell = screen.cell(row, "suspected_cause")
        assert cell.plain == "tool-nondeterminism" and "dim" in str(cell.style)
        assert screen.cell(screen.stats.tasks.index("listAlerts"), "suspected_cause").plain == ""
        assert "mixed tasks by suspected source: tool-nondeterminism 1" in summary_text(screen)
        # Kept in the store apart from any label; a suggestion alone never creates the file.
        entry = app.triage_store.get(KEY)
        assert (entry.suggested, entry.label, entry.reviewed) == ("tool-nondeterminism", None, False)
        assert not notes.exists()
        # The cursor is on searchRunbook (flakiest first); l pre-selects the suggestion.
        assert screen.current_task == "searchRunbook"
        await pilot.press("l")
        await settle(pilot)
        assert isinstance(app.screen, LabelPicker)
        highlighted = app.screen.query_one(OptionList).highlighted
        assert highlighted == list(LABELS).index("tool-nondeterminism")
        await pilot.press("enter")
        await settle(pilot)
        entry = TriageStore.open(notes).get(KEY)
        assert (entry.label, entry.suggested, entry.reviewed) == ("tool-nondeterminism", "tool-nondeterminism", True)
        # Confirmed: no longer dim.
        assert "dim" not in str(screen.cell(row, "suspected_cause").style)


@pytest.mark.slow
async def test_stored_suggestion_is_not_recomputed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored suggestion is not recomputed."""
    notes = tmp_path / "notes.json"
    store = TriageStore.open(notes)
    store.update(KEY, label="sampling", reviewed=True)
    store.suggest("oncall-baseline", {"searchRunbook": "environment"})  # the file exists: saved at once
    import flaketui.traces.causes

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("computed again")

    monkeypatch.setattr(flaketui.traces.causes, "suggest_causes", refuse)
    app = make_app([str(BASELINE)], triage=str(notes))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.tasks_screen
        row = screen.stats.tasks.index("searchRunbook")
        assert screen.cell(row, "suspected_cause").plain == "environment"
        assert "environment 1" in summary_text(screen)
        # A label is there: l shows the label, not the suggestion.
        await pilot.press("l")
        await settle(pilot)
        assert app.screen.query_one(OptionList).highlighted == list(LABELS).index("sampling")


async def test_suggestions_reach_an_existing_file(tmp_path: Path) -> None:
    """Suggestions are saved into an existing triage file."""
    notes = tmp_path / "notes.json"
    TriageStore.open(notes).update(TriageKey("oncall-baseline", "listAlerts"), note="seen")
    app = make_app([str(BASELINE)], triage=str(notes))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
    entry = TriageStore.open(notes).get(KEY)
    assert (entry.suggested, entry.label, entry.reviewed) == ("tool-nondeterminism", None, False)


async def test_worker_failure_is_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing cause worker's error is shown."""
    import flaketui.traces.causes

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(flaketui.traces.causes, "suggest_causes", boom)
    app = make_app([str(BASELINE)], triage=str(tmp_path / "notes.json"))
    async with app.run_test(size=SIZE) as pilot:
        with contextlib.suppress(WorkerFailed):  # raised here when the worker is still listed
            await settle(pilot)
        await settle(pilot)
        screen = app.tasks_screen
        assert "failed" in summary_text(screen)
        assert any("disk on fire" in n.message for n in app._notifications)
        row = screen.stats.tasks.index("searchRunbook")
        assert screen.cell(row, "suspected_cause").plain == ""


async def test_an_unknown_suggestion_in_the_file_is_found_again(tmp_path: Path) -> None:
    """An unknown suggestion in the file is found again."""
    notes = tmp_path / "notes.json"
    store = TriageStore.open(notes)
    store.update(KEY, note="seen")
    store.suggest("oncall-baseline", {"searchRunbook": "\x1b[31mbogus"})  # someone else's file
    app = make_app([str(BASELINE)], triage=str(notes))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        row = app.tasks_screen.stats.tasks.index("searchRunbook")
        assert app.tasks_screen.cell(row, "suspected_cause").plain == "tool-nondeterminism"
    assert TriageStore.open(notes).get(KEY).suggested == "tool-nondeterminism"


@pytest.mark.slow
async def test_every_label_has_a_key(tmp_path: Path) -> None:
    """Past the ninth label the picker's keys are letters: ``b`` picks the eleventh (an outage)."""
    notes = tmp_path / "notes.json"
    app = make_app([str(BASELINE)], triage=str(notes))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        assert isinstance(app.screen, LabelPicker)
        await pilot.press("b")
        await settle(pilot)
        assert TriageStore.open(notes).get(TriageKey("oncall-baseline", app.tasks_screen.current_task)).label \
            == list(LABELS)[10] == "burst"
