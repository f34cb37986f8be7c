"""The matrix view of N runs (m on the task table), and its numpy part (flaketui.output.matrix).

Expected values are worked out from the log written here (per-run passes/trials), or
from ``report --format json`` of the same log, never from the matrix code itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import orjson
import pytest
from textual.pilot import Pilot

from flaketui.app.app import make_app
from flaketui.app.screens.compare import CompareScreen
from flaketui.app.screens.matrix import MatrixScreen
from flaketui.app.screens.triage_dialogs import RunPicker
from flaketui.app.widgets.task_table import TaskTable
from flaketui.loading import load_logs
from flaketui.output.matrix import run_matrix, sparkline
from flaketui.stats import task_stats
from tests.conftest import SIZE, settle
from tests.helpers.cli import run
from tests.helpers.logs import write_runs

# Three runs, five tasks, 4 trials each: (passes per run r1, r2, r3).
PASSES = {"steady": (4, 4, 4), "newflaky": (4, 4, 2), "newfail": (4, 0, 0), "wobbly": (0, 4, 0), "gone": (2, 2, None)}


async def press_m(pilot: Pilot) -> None:
    """m on the task table, then wait for the matrix to be computed."""
    await pilot.press("m")
    await settle(pilot)
    await pilot.pause(0.2)
    await settle(pilot)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    runs: dict[str, dict[str, tuple[int, int]]] = {"r1": {}, "r2": {}, "r3": {}}
    for task, per_run in PASSES.items():
        for name, c in zip(runs, per_run, strict=True):
            if c is not None:
                runs[name][task] = (c, 4)
    return write_runs(tmp_path / "three.jsonl", runs)


def test_matrix_figures(log: Path) -> None:
    """The matrix holds each run's figures per task."""
    trials = load_logs([log])
    m = run_matrix([task_stats(trials.run_outcomes(r), 1) for r in trials.runs])
    assert m.runs == ["r1", "r2", "r3"]
    i = {t: m.tasks.index(t) for t in PASSES}
    expected = np.array([[np.nan if c is None else c / 4 for c in PASSES[t]] for t in m.tasks])
    np.testing.assert_array_equal(m.p_hat, expected)
    # Population variance across the runs that have the task: wobbly 0, 1, 0 → 2/9.
    assert m.variance[i["wobbly"]] == pytest.approx(2 / 9)
    assert m.variance[i["gone"]] == 0.0 and m.variance[i["steady"]] == 0.0
    assert [m.tasks[j] for j in m.order()[:3]] == ["newfail", "wobbly", "newflaky"]  # 2/9, 2/9, 1/18
    assert [m.tasks[j] for j in np.flatnonzero(m.newly_flaky(0))] == ["newflaky"]
    assert sorted(m.tasks[j] for j in np.flatnonzero(m.newly_failing(0))) == ["newfail", "newflaky"]
    # Since r2: newfail was already failing; newflaky and wobbly passed every trial in r2.
    assert sorted(m.tasks[j] for j in np.flatnonzero(m.newly_failing(1))) == ["newflaky", "wobbly"]
    assert sparkline(m.p_hat[i["newflaky"]]) == "██▅" and sparkline(m.p_hat[i["gone"]]) == "▅▅ "


@pytest.mark.slow
async def test_matrix_view_filters_and_compares(log: Path, tmp_path: Path) -> None:
    """The matrix view filters and opens a comparison."""
    app = make_app([str(log)], triage=str(tmp_path / "n.json"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press_m(pilot)
        screen = app.screen
        assert isinstance(screen, MatrixScreen)
        table = screen.query_one(TaskTable)
        keys = [c.key for c in table.columns]
        rows = [dict(zip(keys, table.row_text(p), strict=True)) for p in range(len(table.order))]
        assert [r["task"] for r in rows[:3]] == ["newfail", "wobbly", "newflaky"]
        assert rows[2]["run:2"] == "0.50*" and rows[2]["trend"] == "██▅"
        assert [r["task"] for r in rows[3:]] == ["gone", "steady"]  # variance 0, then by name
        assert rows[3]["run:2"] == "  —"  # gone: not in r3
        await pilot.press("v")  # newly flaky since r1
        await settle(pilot)
        assert [table.row_text(p)[0] for p in range(len(table.order))] == ["newflaky"]
        assert "newly flaky in r3 since r1 (1)" in str(screen.query_one("#matrix-summary").render())
        await pilot.press("v")  # newly failing since r1
        await settle(pilot)
        assert sorted(table.row_text(p)[0] for p in range(len(table.order))) == ["newfail", "newflaky"]
        await pilot.press("r", "v")  # run X = r2, back to every task
        await settle(pilot)
        assert len(table.order) == 5 and screen.since == 1
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        assert (app.screen.run_a, app.screen.run_b) == ("r2", "r3")
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert isinstance(app.screen, RunPicker)


@pytest.mark.slow
async def test_one_run_has_no_matrix(tmp_path: Path) -> None:
    """One run has no matrix."""
    path = write_runs(tmp_path / "one.jsonl", {"only": {"x": (1, 2)}})
    app = make_app([str(path)], triage=str(tmp_path / "n.json"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        assert not isinstance(app.screen, MatrixScreen)


def test_variance_matches_report_json(log: Path) -> None:
    """The var column is the population variance of each task's p̂ as ``report`` gives it."""
    doc = orjson.loads(run("report", log, "--format", "json")[1])
    by_task: dict[str, list[float]] = {}
    for r in doc["runs"]:
        for t in r["tasks"]:
            by_task.setdefault(t["task"], []).append(t["p_hat"])
    trials = load_logs([log])
    m = run_matrix([task_stats(trials.run_outcomes(r), 1) for r in trials.runs])
    for task, values in by_task.items():
        assert m.variance[m.tasks.index(task)] == pytest.approx(float(np.var(values)))
    assert json.dumps(sorted(by_task)) == json.dumps(sorted(m.tasks))


METR = Path("/work/shared/realdata/metr-eval-analysis/all_runs.jsonl")


@pytest.mark.slow
@pytest.mark.skipif(not METR.exists(), reason="METR's all_runs.jsonl is not on this machine")
async def test_metr_eleven_agents(tmp_path: Path) -> None:
    """METR's 11 agents open as an 11-run matrix; the top row moves most between agents."""
    from flaketui.model import FieldMap

    fields = FieldMap(run=("alias",), task=("task_id",), passed=("score_binarized",))
    app = make_app([str(METR)], fields=fields, triage=str(tmp_path / "n.json"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press_m(pilot)
        screen = app.screen
        assert isinstance(screen, MatrixScreen) and screen.matrix is not None
        m = screen.matrix
        assert len(m.runs) == 11
        top = int(screen.query_one(TaskTable).order[0])
        assert m.variance[top] == pytest.approx(float(np.nanmax(m.variance)))
        assert m.variance[top] == pytest.approx(float(np.nanvar(m.p_hat[top])))


@pytest.mark.slow
async def test_header_arrow_sits_after_the_sorted_runs_label(tmp_path: Path) -> None:
    """Sorted by the second run, the arrow follows that run's label (not the gap before it), and the
    labels show the part of each name that tells the runs apart."""
    runs = {name: {"t1": (1, 2), "t2": (2, 2)} for name in ("orch-claude-v2", "orch-azure-v2", "orch-gemini-v2")}
    app = make_app([str(write_runs(tmp_path / "three.jsonl", runs))])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press_m(pilot)
        screen = app.screen
        assert isinstance(screen, MatrixScreen)
        screen.action_sort_by("run:1")
        await settle(pilot)
        header = "".join(seg.text for seg in screen.query_one(TaskTable)._header())
        assert "1:clau 2:azur▼" in header and "3:gemi" in header
