"""Pilot tests of the consist. column: filled by the causes' worker, sorted least consistent first."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flaketui.app.app import make_app
from flaketui.app.widgets.task_table import TaskTable
from flaketui.triage import TriageKey, TriageStore
from tests.conftest import BASELINE, SIZE, settle

KEY = "trajectory_consistency"
DRIFT = (1 - math.sqrt(0.5) + 0.5) / 2


def line(task: str, trial: int, passed: bool, *tools: str) -> str:
    trace: list[dict[str, Any]] = [{"role": "user", "type": "message", "content": "please"}]
    for name in tools:
        trace += [{"role": "assistant", "type": "tool_call", "name": name, "args": {}},
                  {"role": "tool", "type": "tool_result", "name": name, "content": "ok"}]
    trace.append({"role": "assistant", "type": "message", "content": "done"})
    return json.dumps({"run": "r", "task": task, "trial": trial, "passed": passed, "trace": trace})


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join([
        # wander: action consistency 1, sequence consistency 5/9: shown as their mean, 0.78
        line("wander", 0, True, "search", "book"), line("wander", 1, True, "book", "search"),
        line("wander", 2, True, "search", "book"), line("wander", 3, False, "cancel"),
        # drift: two passes that share only the final answer: action 1 − √(1/2), sequence 1/2
        line("drift", 0, True, "search"), line("drift", 1, True, "book"), line("drift", 2, False, "cancel"),
        # once: a single pass, nothing to compare; steady: not flaky
        line("once", 0, True, "search"), line("once", 1, False, "cancel"),
        line("steady", 0, True, "search"), line("steady", 1, True, "search"),
    ]) + "\n")
    return path


async def test_column_fills_in_and_sorts(log: Path, tmp_path: Path) -> None:
    """The consistency column fills in and sorts."""
    app = make_app([str(log)], triage=str(tmp_path / "notes.json"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.tasks_screen
        table = screen.query_one(TaskTable)
        column = table.column(KEY)
        assert column is not None and column.label == "consist."
        cells = {t: screen.cell(screen.stats.tasks.index(t), KEY).plain for t in screen.stats.tasks}
        assert cells == {"wander": "0.78", "drift": f"{DRIFT:.2f}", "once": "", "steady": ""}
        screen.action_sort_by(KEY)
        await settle(pilot)
        shown = [screen.stats.tasks[r] for r in table.order]
        assert shown[:2] == ["drift", "wander"]  # least consistent first, tasks without one last
        values = screen.sort_values(KEY)[table.order]
        assert values[:2].tolist() == pytest.approx([DRIFT, (1 + 5 / 9) / 2]) and np.isnan(values[2:]).all()
        # While the worker has not reached a flaky task with traces, its cell says so.
        del app.session.run("r").consistency["wander"]
        app.session.run("r").causes_progress = "1 of 3"
        assert screen.cell(screen.stats.tasks.index("wander"), KEY).plain == "…"
        assert screen.cell(screen.stats.tasks.index("steady"), KEY).plain == ""


async def test_a_kept_cause_still_gets_its_consistency(log: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A task with a kept cause still gets its consistency."""
    notes = tmp_path / "notes.json"
    store = TriageStore.open(notes)
    store.update(TriageKey("r", "steady"), note="seen")  # a suggestion alone never creates the file
    store.suggest("r", {"wander": "sampling", "drift": "sampling", "once": "sampling"})
    import flaketui.traces.causes

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pairs were classified again")

    monkeypatch.setattr(flaketui.traces.causes, "suggest_causes", refuse)
    app = make_app([str(log)], triage=str(notes))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.tasks_screen
        assert screen.cell(screen.stats.tasks.index("wander"), KEY).plain == "0.78"
        assert screen.cell(screen.stats.tasks.index("wander"), "suspected_cause").plain == "sampling"


async def test_fixture_shows_the_column(tmp_path: Path) -> None:
    """The fixture's task table shows the consistency column."""
    app = make_app([str(BASELINE)], triage=str(tmp_path / "notes.json"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.tasks_screen
        assert screen.cell(screen.stats.tasks.index("listAlerts"), KEY).plain == ""
        assert screen.cell(screen.stats.tasks.index("searchRunbook"), KEY).plain != "…"
