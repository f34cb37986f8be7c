"""Hostile task and run names through compare (table, Markdown, CSV), quarantine ids, the
comparison pane and the matrix view: shown spelled out, never acted on, never read as markup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flaketui.app.app import make_app
from flaketui.app.screens.compare import CompareScreen
from flaketui.app.screens.matrix import MatrixScreen
from flaketui.app.widgets.task_table import TaskTable
from tests.conftest import SIZE, settle
from tests.helpers.cli import run
from tests.helpers.hostile import markdown_read

TASK = "\x1b]52;c;ZXZpbA==\x07[/][link=https://evil.example]click[/link]"
RUN_A = "[bold]a[/]\x1b]0;title\x07"
RUN_B = "=cmd|' /C calc'!A0"
SHOWN_TASK = "\\x1b]52;c;ZXZpbA==\\x07[/][link=https://evil.example]click[/link]"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.jsonl"
    lines = []
    for run_name, passes in ((RUN_A, 4), (RUN_B, 0)):
        for task, c in ((TASK, passes), ("plain", 2)):
            lines += [json.dumps({"run": run_name, "task": task, "trial": i, "passed": i < c}) for i in range(4)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_compare_outputs(log: Path) -> None:
    """compare's table, Markdown and CSV show hostile names without control bytes."""
    for fmt in ("table", "markdown", "csv"):
        code, out, _ = run("compare", log, "--runs", RUN_A, RUN_B, "--format", fmt)
        assert code == 0, fmt
        assert "\x1b" not in out and "\x07" not in out, fmt
        read = markdown_read(out) if fmt == "markdown" else out  # what the rendered Markdown reads
        assert "\\x1b]52" in read and "[link=https://evil.example]" in read, fmt
    table = run("compare", log, "--runs", RUN_A, RUN_B)[1]
    assert SHOWN_TASK in table and "p̂ [bold]a[/]\\x1b]0;title\\x07" in table
    csv = run("compare", log, "--runs", RUN_A, RUN_B, "--format", "csv")[1]
    assert csv.splitlines()[1].startswith(SHOWN_TASK + ",broken,")
    base = run("compare", log, "--baseline", RUN_A, "--format", "csv")[1]
    assert "'=cmd" in base and "\x1b" not in base  # a formula-looking run name is defused


def test_quarantine_ids(tmp_path: Path) -> None:
    """quarantine's ids show hostile names without control bytes."""
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps({"run": "r", "task": TASK, "trial": i, "passed": i < 2})
                              for i in range(4)) + "\n")
    code, out, _ = run("quarantine", path, "--format", "ids")
    assert code == 0 and out == SHOWN_TASK + "\n"


def cells(table: TaskTable) -> str:
    return "\n".join(" ".join(table.row_text(i)) for i in range(len(table.order)))


@pytest.mark.slow
@pytest.mark.ui
async def test_pane_and_matrix(log: Path, tmp_path: Path) -> None:
    """The comparison pane and the matrix show hostile names as text."""
    app = make_app([str(log)], triage=str(tmp_path / "n.json"), compare=(RUN_A, RUN_B))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        summary = str(app.screen.query_one("#compare-summary").render())
        text = cells(app.screen.query_one(TaskTable))
        for shown in (summary, text, app.screen.sub_title):
            assert "\x1b" not in shown and "\x07" not in shown
        assert "[bold]a[/]\\x1b]0;title\\x07" in summary
        assert "\\x1b]52;c;ZXZpbA==\\x07[/][li" in text  # the task cell is cut to its width
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        await pilot.pause(0.2)
        await settle(pilot)
        assert isinstance(app.screen, MatrixScreen)
        summary = str(app.screen.query_one("#matrix-summary").render())
        table = app.screen.query_one(TaskTable)
        text = cells(table) + " ".join(c.label for c in table.columns)
        for shown in (summary, text):
            assert "\x1b" not in shown and "\x07" not in shown
        assert "[bold]a[/]\\x1b]0;title\\x07" in summary and "\\x1b]52" in text
