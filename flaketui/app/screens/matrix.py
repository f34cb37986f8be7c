"""The matrix view: every loaded run side by side, task by task.

One row per task, one column per run (in load order) with its p̂, shaded from
red (0) to green (1) and marked ``*`` where the task is flaky in that run; a
sparkline of p̂ over the runs; and the variance of p̂ across runs, by which
the rows are sorted (the tasks that move most between runs first). ``r``
chooses run X, ``v`` filters the tasks newly flaky, or newly failing, in the
last run since run X; ``enter`` opens the comparison pane of run X against
the last run, ``p`` of any two runs; ``A`` the highlighted task across every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Header, Static

from flaketui.app.messages import Open
from flaketui.app.screens import triage_dialogs as dialogs
from flaketui.app.screens.base import FlakeScreen, back_key
from flaketui.app.sorting import SortActions, sorted_rows
from flaketui.app.widgets.footer import KeyFooter
from flaketui.app.widgets.task_table import Column, TaskTable
from flaketui.model import natural_ranks
from flaketui.output import formatting as fmt
from flaketui.output.matrix import RunMatrix, distinguishing_parts, run_matrix, sparkline
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.app.app import FlakeApp

FILTERS = ("all", "newly flaky", "newly failing")
"""What ``v`` cycles through: every task, those newly flaky since run X, those newly failing."""

RUN_WIDTH = 6
"""Cells wide of a run's column (``0.50*``)."""


def shade(p: float) -> str:
    """A background from red (p̂ = 0) through amber to green (p̂ = 1)."""
    if p != p:
        return ""
    red, green = int(40 + 150 * (1 - p)), int(40 + 130 * p)
    return f"rgb(235,235,235) on rgb({red},{green},50)"


def run_label(j: int, part: str) -> str:
    """A run column's header: its number and the start of the part of its name that tells it
    from the other runs' (``3:cand``; :func:`flaketui.output.matrix.distinguishing_parts`)."""
    return f"{j + 1}:{visible(part)}"[:RUN_WIDTH]


@dataclass
class MatrixReady(Message):
    """The matrix of the runs' p̂ is computed (posted from a worker)."""

    matrix: RunMatrix


class MatrixScreen(SortActions, FlakeScreen[None]):
    """Runs × tasks: p̂ shaded, flaky marked, sorted by the variance of p̂ across runs."""

    DEFAULT_CSS = """
    MatrixScreen #matrix-summary {
        height: auto;
        padding: 0 1;
        background: $boost;
    }
    """

    BINDINGS = [
        Binding("enter", "compare", "Compare X vs last", id="matrix-compare", priority=True,
                tooltip="The comparison pane of run X (A) against the last run (B)"),
        Binding("p", "pick_runs", "Compare…", id="matrix-pick-runs",
                tooltip="Choose any two runs and open their comparison pane"),
        Binding("r", "next_since", "Run X", id="matrix-since",
                tooltip="Choose run X, the run the filters and enter compare the last run with"),
        Binding("v", "next_filter", "Filter", id="matrix-filter",
                tooltip="Every task, those newly flaky since run X, or those newly failing since run X"),
        Binding("A", "across_runs", "Across runs", id="matrix-across-runs", show=False,
                tooltip="The highlighted task in every run, each run's first divergence from a reference"),
        Binding("s", "sort_next", "Sort", id="matrix-sort-next",
                tooltip="Sort by the next column"),
        Binding("S", "sort_reverse", "Reverse", id="matrix-sort-reverse", show=False,
                tooltip="Reverse the sort order"),
        back_key("close-matrix", "the task table", "close", keys="escape,m"),
    ]

    sort_key: reactive[str] = reactive("variance", init=False)
    """Column the tasks are sorted by (the table's header data-binds to it)."""
    sort_reverse: reactive[bool] = reactive(True, init=False)
    """Descending when True (the table's header data-binds to it)."""
    since: reactive[int] = reactive(0, init=False)
    """Run X (an index into the runs)."""
    filter_index: reactive[int] = reactive(0, init=False)
    """Index into :data:`FILTERS`."""

    STATUS = "#matrix-summary"
    AUTO_FOCUS = "#matrix-table"

    def __init__(self) -> None:
        super().__init__()
        self.matrix: RunMatrix | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Reading every run…", id="matrix-summary")
        yield TaskTable(id="matrix-table").data_bind(MatrixScreen.sort_key, MatrixScreen.sort_reverse)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = "runs × tasks"
        self.query_one(TaskTable).empty_text = "reading every run…"
        self.compute()

    @work(thread=True, exclusive=True, exit_on_error=False, group="matrix", description="Reading the runs")
    def compute(self) -> None:
        """Per-task p̂ of every run, in a thread."""
        from flaketui.stats import task_stats

        log = self.flake_app.trial_log
        assert log is not None
        run = self.flake_app.session.run  # each run grouped once, shared with the task table
        self.post_message(MatrixReady(run_matrix([task_stats(run(r).outcomes, 1) for r in log.runs])))

    @on(MatrixReady)
    def matrix_ready(self, event: MatrixReady) -> None:
        self.matrix = event.matrix
        table = self.query_one(TaskTable)
        table.empty_text = "no task matches the filter (v: the next filter)"
        table.set_columns(self.columns())
        self.refresh_order()
        self.update_summary()
        table.focus()

    # -- table ------------------------------------------------------------------------------

    def columns(self) -> list[Column]:
        m = self.matrix
        assert m is not None
        p, flaky, var = m.p_hat, m.flaky, m.variance
        names = natural_ranks(m.tasks).astype(np.float64)
        # as the task table: sized to the names, up to a third of the screen, cut in the middle
        cap = min(64, max(24, self.app.size.width // 3))
        name_w = min(cap, max([4, *(len(visible(t)) for t in m.tasks[:20000])]))

        parts = distinguishing_parts(m.runs)

        def cell(j: int) -> Column:
            def render(i: int) -> Text:
                v = float(p[i, j])
                if v != v:
                    return Text("  —", style="dim")
                return Text(f"{v:.2f}" + ("*" if flaky[i, j] else " "), style=shade(v))

            return Column(f"run:{j}", run_label(j, parts[j]), RUN_WIDTH, "right",
                          f"p̂ in run {visible(m.runs[j])} (* flaky)", render, lambda: p[:, j])

        return [
            Column("task", "task", name_w, "left", "task name", lambda i: Text(visible(m.tasks[i])),
                   lambda: names, descending=False, cut="middle"),
            Column("trend", "trend", max(5, len(m.runs)), "left", "p̂ over the runs, in load order",
                   lambda i: Text(sparkline(p[i]), style="cyan"), None),
            Column("variance", "var", 5, "right", "variance of p̂ across the runs",
                   lambda i: Text(fmt.rate(var[i])), lambda: var),
            *(cell(j) for j in range(len(m.runs))),
        ]

    def sort_table(self) -> TaskTable:
        return self.query_one(TaskTable)

    def shown_mask(self) -> np.ndarray:
        """The rows the filter keeps."""
        m = self.matrix
        assert m is not None
        name = FILTERS[self.filter_index]
        if name == "newly flaky":
            return m.newly_flaky(self.since)
        if name == "newly failing":
            return m.newly_failing(self.since)
        return np.ones(len(m.tasks), dtype=bool)

    def refresh_order(self) -> None:
        if self.matrix is None:
            return
        table = self.query_one(TaskTable)
        idx = np.flatnonzero(self.shown_mask())
        values = self.column_sort_values(self.sort_key, len(self.matrix.tasks))[idx]
        tiebreak = np.argsort(self.matrix.order())[idx]  # variance, then name
        table.show(sorted_rows(idx, values, self.sort_reverse, tiebreak), keep=table.cursor_data_row)

    def update_summary(self) -> None:
        m = self.matrix
        if m is None:
            return
        x, last = visible(m.runs[self.since]), visible(m.runs[-1])
        text = Text()
        text.append(f"{len(m.runs)} runs × {len(m.tasks)} tasks", style="bold")
        text.append(" · p̂ shaded red (0) to green (1), * flaky · sorted by the variance of p̂ across runs\n")
        text.append("runs: ", style="dim")
        text.append("  ".join(f"{j + 1} {visible(r)}" for j, r in enumerate(m.runs)) + "\n")
        text.append("run X: ", style="dim")
        text.append(f"{self.since + 1} {x}", style="bold")
        name = FILTERS[self.filter_index]
        shown = int(self.shown_mask().sum())
        what = ("every task" if name == "all" else f"{name} in {last} since {x}")
        text.append(f" · showing {what} ({shown})", style="bold yellow" if name != "all" else "")
        text.append(f" · enter: compare {x} (A) with {last} (B)", style="dim")
        self.query_one("#matrix-summary", Static).update(text)

    # -- actions ----------------------------------------------------------------------------

    def watch_sort_key(self) -> None:
        self.refresh_order()

    def watch_sort_reverse(self) -> None:
        if not self.sort_settling:  # a new key's direction: the key's watcher sorts
            self.refresh_order()

    def watch_since(self) -> None:
        self.refresh_order()
        self.update_summary()

    def watch_filter_index(self) -> None:
        self.refresh_order()
        self.update_summary()

    def action_next_since(self) -> None:
        """Run X becomes the next run (wrapping round)."""
        if self.matrix is not None:
            self.since = (self.since + 1) % len(self.matrix.runs)

    def action_next_filter(self) -> None:
        """Every task → newly flaky since X → newly failing since X → every task."""
        self.filter_index = (self.filter_index + 1) % len(FILTERS)

    @on(TaskTable.TaskSelected)
    def task_selected(self, event: TaskTable.TaskSelected) -> None:
        event.stop()
        self.action_compare()

    def action_compare(self) -> None:
        """The comparison pane of run X (A) against the last run (B)."""
        m = self.matrix
        if m is None:
            return
        a, b = m.runs[self.since], m.runs[-1]
        if a == b:
            self.notify("run X is the last run: r chooses another, p any two", timeout=4)
            return
        self.post_message(Open("compare", run_a=a, run_b=b))

    def action_pick_runs(self) -> None:
        """Choose any two runs and open their comparison pane."""
        m = self.matrix
        if m is None:
            return
        def chosen(pair: tuple[str, str] | None) -> None:
            if pair is not None:
                self.post_message(Open("compare", run_a=pair[0], run_b=pair[1]))

        self.app.push_screen(dialogs.RunPicker(m.runs, m.runs[self.since], m.runs[-1]), chosen)

    def action_across_runs(self) -> None:
        """The highlighted task in every run, side by side."""
        m = self.matrix
        row = self.query_one(TaskTable).cursor_data_row
        if m is None or row is None:
            return
        self.post_message(Open("across-runs", task=m.tasks[row]))

    def action_close(self) -> None:
        """Back to the task table."""
        self.dismiss(None)


def open_matrix(app: FlakeApp) -> MatrixScreen | None:
    """``Open("matrix")`` (``m`` on the task table): the matrix of every run (None: at least two
    must be loaded, and it says so)."""
    log = app.trial_log
    if log is None:
        app.notify("the logs are still loading", timeout=3)
        return None
    if len(log.runs) < 2:
        app.notify("only one run is loaded: the matrix shows two or more side by side",
                   severity="warning", timeout=5)
        return None
    return MatrixScreen()
