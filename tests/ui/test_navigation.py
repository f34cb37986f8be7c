"""Screens open screens by name: each name in flaketui.app.navigation.SCREENS opens its screen
through the one Open message the app handles, and what a screen is dismissed with comes back."""

from __future__ import annotations

import ast
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from flaketui.app import navigation
from flaketui.app.app import FlakeApp, make_app
from flaketui.app.messages import Open
from flaketui.loading import read_trial
from flaketui.output.review import BROKEN, FlipRow
from flaketui.traces.causes import flaky_rows
from flaketui.traces.task_view import task_across_runs
from tests.conftest import SIZE, settle

ROOT = Path(__file__).resolve().parents[2]


def _trace_task(app: FlakeApp) -> str:
    """A task with traces in both runs of the bundled logs."""
    log = app.trial_log
    assert log is not None
    tasks = app.tasks_screen.stats.tasks  # type: ignore[union-attr]
    return next(t for t in tasks if log.has_trace[log.run_outcomes(log.runs[0]).task_rows(tasks.index(t))].any())


def _across_traces(app: FlakeApp) -> dict[str, Any]:
    log = app.trial_log
    assert log is not None
    model = task_across_runs(log, _trace_task(app), partial(read_trial, log), None, app.normaliser)
    assert model.reference is not None
    ref = model.reference[0]
    other = next(run for j, run in enumerate(model.runs) if j != ref and run.representative_trial is not None)
    return {"model": model, "ref_run": model.runs[ref], "run": other}


def _arguments(app: FlakeApp) -> dict[str, Callable[[], tuple[dict[str, Any], str]]]:
    """Each registered name → (the arguments its screen is opened with, the class it opens)."""
    log, tasks = app.trial_log, app.tasks_screen
    assert log is not None and tasks.stats is not None and tasks.outcomes is not None
    run_a, run_b = log.runs[0], log.runs[1]
    task = _trace_task(app)
    flip = FlipRow(task, BROKEN, 1.0, 0.0, 3, 3, 0.0, 0.0)
    return {
        "traces": lambda: ({"outcomes": tasks.outcomes, "row": tasks.stats.tasks.index(task),
                            "stats": tasks.stats}, "TaskTraceScreen"),
        "inspector": lambda: ({"trial": read_trial(log, 0), "row": 0}, "InspectorScreen"),
        "compare": lambda: ({}, "CompareScreen"),
        "compare-traces": lambda: ({"run_a": run_a, "run_b": run_b,
                                    "outcomes": (log.run_outcomes(run_a), log.run_outcomes(run_b)),
                                    "rows": [flip], "position": 0}, "CompareTracesScreen"),
        "across-runs": lambda: ({"task": task}, "AcrossRunsScreen"),
        "across-traces": lambda: (_across_traces(app), "AcrossTracesScreen"),
        "matrix": lambda: ({}, "MatrixScreen"),
        "plan": lambda: ({"run": run_a, "task": task}, "PlanScreen"),
        "history": lambda: ({"task": task}, "HistoryScreen"),
        "failure-modes": lambda: ({"run": run_a, "rows_by_task": flaky_rows(log.run_outcomes(run_a)),
                                   "read": partial(read_trial, log), "normaliser": app.normaliser},
                                  "FailureModesScreen"),
        "problems": lambda: ({"problems": [], "warnings": ["a warning"]}, "ProblemsScreen"),
        "run-picker": lambda: ({"runs": [(run_a, 1, 1), (run_b, 1, 1)], "current": 0}, "RunPicker"),
        "export": lambda: ({"default": "tasks.csv", "rows": 3}, "ExportPrompt"),
    }


@pytest.mark.slow
async def test_every_registered_name_opens_its_screen(baseline: Path, candidate: Path) -> None:
    """Each name of the navigation table, posted as Open from the task table, pushes its screen
    (and every name has a case here, so a screen registered later is opened by this test too)."""
    app = make_app([str(baseline), str(candidate)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        cases = _arguments(app)
        assert sorted(cases) == sorted(navigation.SCREENS)
        for name, case in cases.items():
            arguments, expected = case()
            app.tasks_screen.post_message(Open(name, **arguments))
            await settle(pilot)
            assert type(app.screen).__name__ == expected, name
            assert len(app.screen_stack) == 2, name
            app.pop_screen()
            await settle(pilot)
            assert app.screen is app.tasks_screen


@pytest.mark.slow
async def test_a_picked_run_comes_back_to_the_callback(baseline: Path, candidate: Path) -> None:
    """The run picker opened by name hands the run picked to the Open's callback."""
    app = make_app([str(baseline), str(candidate)])
    got: list[Any] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        runs = [(run, 1, 1) for run in app.trial_log.runs]  # type: ignore[union-attr]
        app.tasks_screen.post_message(Open("run-picker", got.append, runs=runs, current=0))
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
    assert got == [1]


@pytest.mark.slow
async def test_an_export_name_comes_back_to_the_callback(baseline: Path) -> None:
    """The export prompt opened by name hands the file name typed to the Open's callback, and
    None when closed with escape."""
    app = make_app([str(baseline)])
    got: list[Any] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in ("enter", "escape"):
            app.tasks_screen.post_message(Open("export", got.append, default="tasks.md", rows=3))
            await settle(pilot)
            await pilot.press(key)
            await settle(pilot)
    assert got == ["tasks.md", None]


@pytest.mark.slow
async def test_an_opener_that_opens_nothing_says_why(baseline: Path) -> None:
    """An opener with nothing to open (the matrix of one run) pushes no screen and says why."""
    app = make_app([str(baseline)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.tasks_screen.post_message(Open("matrix"))
        await settle(pilot)
        assert app.screen is app.tasks_screen
        assert any("only one run" in str(n.message) for n in app._notifications)


def test_every_name_names_a_screen_or_an_opener() -> None:
    """Every entry of the navigation table imports: a screen class or a function of the app."""
    from textual.screen import Screen

    for name in navigation.SCREENS:
        made = navigation.factory(name)
        assert (isinstance(made, type) and issubclass(made, Screen)) or callable(made), name


def test_every_name_opened_is_registered() -> None:
    """Every ``Open("name", …)`` written in the app names an entry of the navigation table (a
    misspelt name would fail only when its key is pressed)."""
    opened = set()
    for path in (ROOT / "flaketui" / "app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Open"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                opened.add(node.args[0].value)
    assert opened and opened <= set(navigation.SCREENS), sorted(opened - set(navigation.SCREENS))
