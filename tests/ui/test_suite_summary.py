"""The suite summary above the task table: each figure once at k = 1, lines broken between
figures at 80×24 with the footer's keys in view, the tasks left out at k, the few-tasks warning's
count, and the suite curve stopping where tasks drop out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.widgets.loading import LoadingPane
from tests.conftest import BASELINE, CANDIDATE, SIZE
from tests.helpers.app import ready, table
from tests.helpers.logs import write_log


def summary(app: FlakeApp) -> str:
    return str(app.tasks_screen.query_one("#summary").render())


@pytest.mark.slow
async def test_k_1_shows_each_figure_once_in_the_app_and_report(tmp_path: Path) -> None:
    """At k = 1 each figure shows once, in the app and the report."""
    from flaketui.output.report import summary_lines

    app = make_app([str(BASELINE)], k=1)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        text = summary(app)
        assert text.count("pass@1") == 1 and "pass^1" not in text
        sm = app.tasks_screen.summary
        assert sm is not None
        line = summary_lines(sm)[2]  # after the run's line and the classes' line
        assert line.count("pass@1") == 1 and "pass^1" not in line
        await pilot.press("plus")
        await pilot.pause()
        assert "pass@2" in summary(app) and "pass^2" in summary(app) and "pass@1" in summary(app)


async def test_80x24_summary_breaks_between_figures_and_footer_keeps_compare() -> None:
    """At 80x24 the summary breaks between figures and the footer keeps compare."""
    from textual.widgets import Footer

    app = make_app([str(BASELINE), str(CANDIDATE)], k=5, min_pass_hat_k=0.7, max_flakiness=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        for line in summary(app).splitlines():
            assert not line.rstrip().endswith(","), line  # no "[0.64," / "0.91]" break
            assert line.count("[") == line.count("]"), line
        footer = app.screen.query_one(Footer)
        keys = {k.description: k for k in footer.query("FooterKey")}
        right = keys["palette"].region.x if "palette" in keys else 80  # "^p palette", on the right
        for needed in ("Filter", "Compare", "Plan", "Runs", "Quit", "Help"):
            assert needed in keys, sorted(keys)
            assert keys[needed].region.right <= right, (needed, keys[needed].region, right)
        assert table(app).size.height >= 8


def test_suite_curve_is_over_one_task_set() -> None:
    """The curve's points all average the same tasks: up to the trials every task has, or over the tasks
    with the chosen k trials (the others said left out), never a fall because a task left the mean."""
    import numpy as np

    from flaketui.app.widgets.curve import curve_block
    from flaketui.stats.curves import k_curve

    # One task of 2 trials (all pass), one of 8 (none): by default the curve stops at k = 2.
    curve = k_curve(np.array([8, 2]), np.array([0, 2]))
    assert curve.ks.tolist() == [1, 2] and curve.left_out == 0
    lines = [line.plain for line in curve_block("suite", curve, 2)]
    axis = lines[-1].strip()
    assert axis.startswith("k=1") and axis.endswith("2")
    # At the chosen k = 8 the 2-trial task is left out of every point, and the block says so.
    longer = k_curve(np.array([8, 2]), np.array([0, 2]), include=8)
    assert longer.ks[-1] == 8 and set(longer.tasks.tolist()) == {1} and longer.left_out == 1
    assert np.all(np.diff(longer.pass_at) == 0)  # the one task left never passes: a flat curve
    lines = [line.plain for line in curve_block("suite", longer, 8)]
    assert lines[-1] == "over the 1 tasks with n ≥ 8; 1 left out"


async def test_watch_keeps_k_when_a_task_with_one_trial_arrives(tmp_path: Path) -> None:
    """With --watch k stays when a task with one trial arrives."""
    log = tmp_path / "live.jsonl"
    write_log(log, [{"run": "r", "task": f"t{i}", "trial": t, "passed": t != i}
                    for i in range(10) for t in range(5)])
    app = make_app([str(log)], watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.k == 5
        with log.open("a", encoding="utf-8") as f:
            f.write('{"run": "r", "task": "late", "trial": 0, "passed": true}\n')
        app.tasks_screen.query_one(LoadingPane).poll()
        await ready(pilot)
        await ready(pilot)
        assert app.trial_log is not None and "late" in app.tasks_screen.stats.tasks
        assert app.k == 5
        assert "1 task(s) with n < k left out" in summary(app)


async def test_task_count_matches_the_few_tasks_warning(tmp_path: Path) -> None:
    """The task count matches the few-tasks warning."""
    records: list[dict[str, Any]] = [{"run": "r", "task": f"t{i}", "trial": t, "passed": t != i}
                                     for i in range(8) for t in range(3)]
    records += [{"run": "r", "task": "broken", "trial": t, "error": "sandbox did not start"}
                for t in range(3)]
    app = make_app([str(write_log(tmp_path / "nine.jsonl", records))], k=3)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        text = summary(app)
        # The warning counts the tasks with an outcome; the header says how many those are.
        assert "only 8 tasks" in text
        assert "9 tasks (8 with an outcome)" in text
