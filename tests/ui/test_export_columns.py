"""``ctrl+s`` export writes the run, the passes and each task's triage label and note."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from flaketui.app.app import make_app
from flaketui.triage import TriageKey
from tests.conftest import BASELINE, SIZE, settle


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tasks.csv", "tasks.md"])
async def test_export_has_run_passes_label_and_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    name: str) -> None:
    """The table export has the run, passes, label and note."""
    monkeypatch.chdir(tmp_path)
    app = make_app([str(BASELINE)], k=5, triage=str(tmp_path / "notes.json"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.triage_store.update(TriageKey("oncall-baseline", "searchRunbook"), label="tool-nondeterminism",
                                note="=retries | twice")
        await pilot.press("ctrl+s")
        await pilot.pause()
        app.screen.query_one("#export-path").value = name  # type: ignore[attr-defined]
        await pilot.press("enter")
        await pilot.pause()
    text = (tmp_path / name).read_text(encoding="utf-8")
    if name.endswith(".csv"):
        rows = {r["task"]: r for r in csv.DictReader(text.splitlines())}
        row = rows["searchRunbook"]
        assert row["run"] == "oncall-baseline" and row["passes"] == "10" and row["n"] == "12"
        assert row["label"] == "tool-nondeterminism" and row["note"] == "'=retries | twice"  # no formula
        assert rows["listAlerts"]["label"] == rows["listAlerts"]["note"] == ""
    else:
        lines = text.splitlines()
        assert lines[2].startswith("| run | task | n | passes |") and lines[2].endswith("| label | note |")
        line = next(x for x in lines if "searchRunbook" in x)
        assert line.startswith("| oncall-baseline | searchRunbook | 12 | 10 |")
        assert line.endswith("| tool-nondeterminism | =retries \\| twice |")
