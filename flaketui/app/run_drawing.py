"""The task table's drawing: the shown run's columns, title, summary, curves and highlighted task.

:class:`RunDrawing` is mixed into :class:`~flaketui.app.screens.tasks.TasksScreen`: what it
draws is the screen's :attr:`view` (a :class:`~flaketui.app.run_view.RunView` over the session's
run state) at the screen's sort and filter; the screen's handlers decide when (a new run, a new
k, a batch of a job, a key), this draws. Nothing here changes what is shown, only how.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from rich.text import Text
from textual.widgets import Static

from flaketui.app.screens import triage_dialogs
from flaketui.app.task_columns import RunColumns
from flaketui.app.widgets.curve import Curves
from flaketui.app.widgets.run_summary import RunSummary
from flaketui.app.widgets.task_table import Column, TaskTable
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.app.app import FlakeApp
    from flaketui.app.run_view import RunView
    from flaketui.model import RunOutcomes
    from flaketui.session.state import RunState
    from flaketui.stats import SuiteSummary, TaskStats

SHORT_SCREEN = 30
"""Screen height under which the task table's curves are not shown (the table keeps the rows)."""


class RunDrawing:
    """Draws the shown run (see the module's docstring); its properties are what others read of it:
    :attr:`run`, :attr:`stats` and :attr:`summary` at the app's k, :attr:`outcomes`, :attr:`current_task`."""

    view: RunView | None = None
    """The shown run's table state: statistics at k, orders, flaky mask, name filter (None: loading)."""
    table_columns: RunColumns | None = None
    """The shown run's columns (what they draw: the view and the run's state)."""
    sort_key: str
    sort_reverse: bool
    filter_text: str
    flaky_only: bool
    run_index: int
    flake_app: FlakeApp

    @property
    def state(self) -> RunState | None:
        """The shown run's state in the session."""
        return None if self.view is None else self.view.state

    @property
    def run(self) -> str | None:
        """The shown run's name."""
        return None if self.view is None else self.view.run

    @property
    def outcomes(self) -> RunOutcomes | None:
        """The shown run's trials by task."""
        return None if self.view is None else self.view.outcomes

    @property
    def stats(self) -> TaskStats | None:
        """The shown run's statistics at the app's k."""
        return None if self.view is None else self.view.stats

    @property
    def summary(self) -> SuiteSummary | None:
        """The shown run's suite figures at the app's k."""
        return None if self.view is None else self.view.summary

    @property
    def current_row(self) -> int | None:
        """Data row (index into :attr:`stats`) under the cursor."""
        return None if self.stats is None else self.query_one(TaskTable).cursor_data_row

    @property
    def current_task(self) -> str | None:
        """Name of the task under the cursor."""
        row = self.current_row
        return None if row is None or self.stats is None else self.stats.tasks[row]

    def theme_changed(self, theme: object) -> None:
        """Draw the summary, table and curves again in the new theme's colours."""
        self.update_summary()
        self.query_one(TaskTable).invalidate()
        self.update_curves()
        self.update_current_task()

    def set_table_columns(self, keep_unchanged: bool = False) -> None:
        """Give the table its columns again (the data behind them changed). The sorted orders are
        forgotten; with ``keep_unchanged`` (a new k) the shown column's is kept if its values are the
        same (:meth:`RunView.keep_orders`)."""
        view, key = self.view, self.sort_key
        assert view is not None and self.state is not None
        kept = view.take_orders()
        self.table_columns = RunColumns(view, self.state, self.flake_app.triage_store)
        self.query_one(TaskTable).set_columns(self.columns())
        view.keep_orders(kept if keep_unchanged else {}, key, lambda: self.sort_values(key))

    def columns(self) -> list[Column]:
        """The table's columns for the shown run at the screen's width (:mod:`flaketui.app.task_columns`)."""
        assert self.table_columns is not None and self.stats is not None
        app, run = self.flake_app, self.run
        review = ([triage_dialogs.task_column(app, run, self.stats.tasks)]
                  if run is not None and triage_dialogs.run_has_notes(app, run) else [])
        return self.table_columns.columns(self.app.size.width, review, bool(app.session.owners))

    def cell(self, row: int, key: str) -> Text:
        """One cell of the table: column ``key``'s rendering of data row ``row``."""
        column = self.query_one(TaskTable).column(key)
        return Text("") if column is None else column.render(row)

    def sort_values(self, key: str) -> np.ndarray:
        """Values to sort by for column ``key`` (floats; NaN sort last)."""
        assert self.stats is not None
        return self.column_sort_values(key, len(self.stats))

    def sort_table(self) -> TaskTable:
        return self.query_one(TaskTable)

    def update_title(self) -> None:
        st, table = self.stats, self.query_one(TaskTable)
        if st is None or self.run is None:
            return
        shown = len(table.order)
        label = next((c.label for c in table.columns if c.key == self.sort_key), self.sort_key)
        parts = [visible(self.run), f"{shown} of {len(st)} tasks" if shown != len(st) else
                 f"{len(st)} tasks", f"sorted by {label} {'↓' if self.sort_reverse else '↑'}"]
        parts += [f"filter “{self.filter_text}”"] * bool(self.filter_text) + ["flaky only"] * self.flaky_only
        self.sub_title = visible(" · ".join(parts))

    def update_summary(self) -> None:
        """The run's figures (:class:`~flaketui.app.widgets.run_summary.RunSummary`)."""
        if self.view is None or self.summary is None:
            return
        opts, box = self.flake_app.options, self.query_one(RunSummary)
        facts = self.view.summary_facts(self.run_index, self.flake_app.k_is_default, opts.min_pass_hat_k,
                                        opts.max_flakiness)
        box.show(facts, box.content_size.width or max(20, self.app.size.width - 2))

    def on_resize(self) -> None:
        # On a short terminal the curves give their rows to the table (ten rows and more at 80×24).
        self.set_class(self.app.size.height < SHORT_SCREEN, "-short")
        self.update_summary()
        table = self.query_one(TaskTable)
        name = table.column("task")
        if self.stats is None or name is None:
            return
        columns = self.columns()
        # the task column's cap and the class column's place follow the width
        if columns[0].width != name.width or [c.key for c in columns] != [c.key for c in table.columns]:
            table.set_columns(columns)

    def update_curves(self) -> None:
        st, row = self.stats, self.current_row
        if st is None or self.view is None:
            return
        suite, spread, task = self.view.curves(row)
        title = ("highlighted task" if row is None else
                 f"{visible(st.tasks[row])} ({int(st.passes[row])}/{int(st.n[row])})")
        self.query_one(Curves).show_curves(suite, f"suite ({len(st)} tasks)", task, title, spread, st.k)

    def update_current_task(self) -> None:
        """The full name of the highlighted task (the table may cut it), under the table."""
        st, row = self.stats, self.current_row
        line = Text()
        if st is not None and row is not None:
            line.append("▸ ")
            line.append(visible(st.tasks[row]), style="bold")
            line.append(f"  {int(st.passes[row])}/{int(st.n[row])} passed", style="dim")
        self.query_one("#current-task", Static).update(line, layout=False)  # one line, whatever it says

    def on_task_table_task_highlighted(self, event: TaskTable.TaskHighlighted) -> None:
        """The cursor moved: the highlighted task's curve and line follow it."""
        self.update_curves()
        self.update_current_task()

