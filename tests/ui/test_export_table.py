"""Exporting the task table: the filtered rows as CSV or Markdown to a path the user edits, and
text cells made safe for a spreadsheet."""

from __future__ import annotations

from pathlib import Path

import pytest

from flaketui.app.app import make_app
from tests.conftest import BASELINE, SIZE
from tests.helpers.app import ready, record_notifications, table
from tests.helpers.logs import write_log


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tasks.csv", "tasks.md"])
async def test_export_the_filtered_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         name: str) -> None:
    """The filtered table exports to each format."""
    import csv

    monkeypatch.chdir(tmp_path)
    app = make_app([str(BASELINE)], k=5)
    shown = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("slash", *"list", "enter", "ctrl+s")
        await pilot.pause()
        box = app.screen.query_one("#export-path")
        assert box.value == "flaketui-oncall-baseline.csv"  # the default, in the current folder
        box.value = name
        await pilot.press("enter")
        await pilot.pause()
        shown_names = [table(app).row_text(i)[0] for i in range(len(table(app).order))]
    out = tmp_path / name
    assert shown[-1] == f"{len(shown_names)} task(s) written to {out}"
    text = out.read_text(encoding="utf-8")
    if name.endswith(".csv"):
        rows = list(csv.DictReader(text.splitlines()))
        assert [r["task"] for r in rows] == shown_names == ["listAlerts", "listOncallSchedule",
                                                              "listRecentDeploys"]
        assert rows[0]["pass_hat_k"] == "1" and rows[0]["n"] == "12"
        assert set(rows[0]) >= {"p_hat_low", "p_hat_high", "flakiness", "class"}
    else:
        lines = text.splitlines()
        assert lines[0] == "# oncall-baseline (k = 5)"
        assert lines[2].startswith("| run | task | n | passes | p̂ |") and "pass^5" in lines[2]
        assert [line.split(" | ")[1] for line in lines[4:]] == shown_names


async def test_csv_export_sanitises_text_cells(tmp_path: Path) -> None:
    """The CSV export sanitises text cells."""
    import csv

    from flaketui.app.table_export import table_csv

    path = write_log(tmp_path / "f.jsonl", [{"run": "r", "task": name, "trial": t, "passed": t > 0}
                                            for name in ("=HYPERLINK(1)", "a\x1b[2Jb") for t in range(2)])
    app = make_app([str(path)], k=2)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        st = app.tasks_screen.stats
        assert st is not None
        rows = list(csv.DictReader(table_csv(st, range(len(st))).splitlines()))
    assert sorted(r["task"] for r in rows) == ["'=HYPERLINK(1)", "a\\x1b[2Jb"]
