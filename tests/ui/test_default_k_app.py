"""The app's default k is the trials most tasks have (it follows that mode up with
--watch), and the suite k curve reaches the k chosen with +."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.pilot import Pilot

from flaketui.app.app import make_app
from flaketui.app.widgets.curve import Curves
from flaketui.app.widgets.loading import LoadingPane
from tests.conftest import SIZE


async def ready(pilot: Pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def trial_lines(tasks: list[str], trials: range, passed: bool = True) -> str:
    return "".join(json.dumps({"task": t, "trial": i, "passed": passed or i % 2 == 0}) + "\n"
                   for i in trials for t in tasks)


async def test_one_task_of_one_trial_does_not_make_the_default_k_1(tmp_path: Path) -> None:
    """One task with one trial does not make the default k 1."""
    log = tmp_path / "tb.jsonl"
    # Terminal-Bench style: 5 attempts a task, one task with a single (non-errored) trial.
    log.write_text(trial_lines([f"t{i}" for i in range(6)], range(5), passed=False)
                   + trial_lines(["lonely"], range(1)), encoding="utf-8")
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.k == 5
        summary = str(app.tasks_screen.query_one("#summary").render())
        assert "k = 5 (most tasks' trials)" in summary
        assert "1 task(s) with n < k left out" in summary


async def test_watch_moves_the_default_k_up_with_the_mode(tmp_path: Path) -> None:
    """With --watch the default k moves up with the mode of trial counts."""
    log = tmp_path / "live.jsonl"
    tasks = [f"t{i}" for i in range(5)]
    log.write_text(trial_lines(tasks, range(2)), encoding="utf-8")  # attempt-major: 2 each
    app = make_app([str(log)], watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.k == 2
        with log.open("a", encoding="utf-8") as f:
            f.write(trial_lines(tasks, range(2, 5)))
            f.write(trial_lines(["late"], range(1)))  # a new task with one trial: not k = 1
        app.tasks_screen.query_one(LoadingPane).poll()
        await ready(pilot)
        await ready(pilot)
        assert app.k == 5


@pytest.mark.slow
async def test_the_suite_curve_reaches_the_k_chosen_with_plus(tmp_path: Path) -> None:
    """The suite curve reaches the k chosen with +."""
    log = tmp_path / "tb.jsonl"
    log.write_text(trial_lines([f"t{i}" for i in range(6)], range(8), passed=False)
                   + trial_lines(["lonely"], range(1)), encoding="utf-8")
    app = make_app([str(log)], k=1)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*["plus"] * 4)
        await pilot.pause()
        assert app.k == 5
        suite = [line.plain for line in app.tasks_screen.query_one(Curves)._blocks[0]]
        axis = suite[3].strip()
        assert axis.startswith("k=1") and axis.endswith("5")  # it used to stop at k=1
        assert suite[-1] == "over the 6 tasks with n ≥ 5; 1 left out"  # one task set at every k
        header = str(app.tasks_screen.query_one("#summary").render())
        assert "k = 5" in header
