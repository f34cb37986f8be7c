"""The suggested source of flakiness in the triage file: kept apart from the label, exported apart."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.triage import TriageKey, TriageStore, load_entries
from tests.conftest import BASELINE

KEY = TriageKey("oncall-baseline", "searchRunbook")


def test_round_trip_keeps_suggestion_apart_from_label(tmp_path: Path) -> None:
    """A suggestion round-trips apart from the label."""
    path = tmp_path / "notes.json"
    store = TriageStore.open(path)
    store.suggest("oncall-baseline", {"searchRunbook": "tool-nondeterminism", "listAlerts": "sampling"})
    assert not path.exists()  # a suggestion alone never creates the file
    store.update(KEY, note="looked")
    entry = load_entries(path)[TriageKey("oncall-baseline", "listAlerts")]
    assert (entry.suggested, entry.label, entry.reviewed, entry.updated) == ("sampling", None, False, "")
    store.update(KEY, label="real-fix", reviewed=True)
    assert load_entries(path)[KEY].suggested == "tool-nondeterminism"
    # A later suggestion never overwrites the person's label.
    store.suggest("oncall-baseline", {"searchRunbook": "sampling"})
    again = TriageStore.open(path)
    entry = again.get(KEY)
    assert (entry.label, entry.suggested, entry.reviewed) == ("real-fix", "sampling", True)
    assert again.suggested("oncall-baseline") == {"searchRunbook": "sampling", "listAlerts": "sampling"}
    # Clearing the label keeps the suggestion.
    again.update(KEY, label=None, reviewed=False)
    assert load_entries(path)[KEY].suggested == "sampling"
    assert load_entries(path)[KEY].label is None


def test_an_old_file_without_suggested_still_loads(tmp_path: Path) -> None:
    """An old file without suggestions still loads."""
    path = tmp_path / "old.json"
    path.write_text('{"format": "flaketui-triage", "version": 1, "entries": [\n'
                    '{"run":"oncall-baseline","task":"searchRunbook","label":"sampling","note":"x",'
                    '"reviewed":true,"updated":"2026-01-05T10:12:03Z"}\n]}\n')
    before = path.read_bytes()
    entry = TriageStore.open(path).get(KEY)
    assert (entry.label, entry.suggested) == ("sampling", None)
    store = TriageStore.open(path)
    store.update(KEY, note="x")  # no change: the file stays as it was
    assert path.read_bytes() == before


def test_a_suggestion_alone_is_no_review(tmp_path: Path) -> None:
    """A suggestion alone is no review."""
    store = TriageStore.open(tmp_path / "notes.json")
    store.suggest("r", {"t": "environment"})
    entry = store.get(TriageKey("r", "t"))
    assert not entry.empty and not entry.reviewed_or_noted


def test_export_gives_label_and_suggested_cause_apart(tmp_path: Path) -> None:
    """The export gives the label and the suggested cause apart."""
    path = tmp_path / "notes.json"
    store = TriageStore.open(path)
    store.update(KEY, label="ordering-concurrency", reviewed=True)
    store.suggest("oncall-baseline", {"searchRunbook": "tool-nondeterminism", "listAlerts": "sampling"})
    result = CliRunner().invoke(main, ["triage", "export", str(BASELINE), "--triage", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout)
    (flaky,) = doc["flaky_tasks"]
    assert (flaky["task"], flaky["label"], flaky["suggested_cause"]) == (
        "searchRunbook", "ordering-concurrency", "tool-nondeterminism")
    # A stable task with only a (stale) suggestion is not a note.
    assert doc["other_notes"] == []
    result = CliRunner().invoke(main, ["triage", "export", str(BASELINE), "--triage", str(path)])
    assert result.exit_code == 0
    assert "| flakiness | suggested cause | label | note | reviewed |" in result.stdout
    assert "| tool-nondeterminism | ordering-concurrency |  | yes |" in result.stdout
