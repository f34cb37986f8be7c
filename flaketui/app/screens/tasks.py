"""The main screen: the run's summary, the task table and the k curves.

What the keys change is here: ``f``, ``/``, ``s`` / ``S`` set the screen's reactives (flaky only,
the filter, the sort; the sort is data-bound to the table's header), whose watchers ask the run's
:class:`~flaketui.app.run_view.RunView` for the rows to show; ``+`` / ``-`` set the app's ``k``,
which this screen watches. ``enter`` opens the traces from here; the other keys that open a view
(``c``, ``p``, ``m``, ``H``…) post :class:`~flaketui.app.messages.Open` from
:class:`~flaketui.app.task_openers.TaskOpeners`.
What the table shows of a run is the session's :class:`~flaketui.session.state.RunState` (filled
by the jobs of :mod:`flaketui.session.jobs`, run here in workers) drawn by the columns of
:mod:`flaketui.app.task_columns`.

The reactives live on the screen, not on the RunView, because Textual binds a child's reactive
only to one of the node whose ``compose`` yields it; a new run gets a new RunView, and the sort
and filter carry over to it.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import Header, Input, Static

from flaketui.app.jobs import RunJobs, wants_history
from flaketui.app.messages import LogsGrew, Open, RunsLoaded
from flaketui.app.run_drawing import RunDrawing
from flaketui.app.run_view import RunView
from flaketui.app.screens.base import FlakeScreen
from flaketui.app.sorting import SortActions
from flaketui.app.task_openers import TaskOpeners
from flaketui.app.widgets.curve import Curves
from flaketui.app.widgets.footer import KeyFooter
from flaketui.app.widgets.loading import LoadingKeys, LoadingPane
from flaketui.app.widgets.run_summary import RunSummary
from flaketui.app.widgets.task_table import TaskTable
from flaketui.model import ERRORED


class TasksScreen(RunDrawing, SortActions, RunJobs, LoadingKeys, TaskOpeners, FlakeScreen[None]):
    """One row per task of the shown run, most dangerous (flakiest) first.

    State others can reach: :attr:`run` (name of the run shown), :attr:`stats`
    and :attr:`summary` of that run at the app's k, :attr:`outcomes`, and
    :attr:`current_task` (the task under the cursor).
    """

    BINDINGS = [
        Binding("enter", "show_traces", "Traces", id="show-traces",
                tooltip="Passing and failing traces of the highlighted task, side by side"),
        # Footer order: what matters most first, so that 80 columns keep it (sorting, K± are
        # in help, the palette and the header: click a column, "k = 5 +/−").
        Binding("slash", "filter", "Filter", id="filter",
                tooltip="Filter tasks by name"),
        Binding("m", "matrix", "Matrix", id="run-matrix", show=False,
                tooltip="Every run side by side: runs × tasks p̂, trends, newly flaky since run X"),
        Binding("c", "compare", "Compare", id="compare-runs",
                tooltip="Run B against run A: flips, the primary test, and the review of each flip"),
        Binding("p", "show_plan", "Plan", id="show-plan",
                tooltip="Plan the next run: how many more trials, on which tasks, and why"),
        Binding("r", "pick_run", "Runs", id="pick-run",
                tooltip="Pick the run to show from a list"),
        Binding("f", "toggle_flaky", "Flaky", id="flaky-only",
                tooltip="Show only flaky tasks (toggle)"),
        Binding("s", "sort_next", "Sort", id="sort-next", show=False,
                tooltip="Sort by the next column"),
        Binding("S", "sort_reverse", "Reverse", id="sort-reverse", show=False,
                tooltip="Reverse the sort order (ascending / descending)"),
        Binding("plus,equals_sign", "change_k(1)", "K+", id="k-up", show=False,
                tooltip="Increase k"),
        Binding("minus", "change_k(-1)", "K−", id="k-down", show=False,
                tooltip="Decrease k"),
        Binding("space", "triage('reviewed')", "Reviewed", id="task-reviewed", show=False,
                tooltip="Mark the highlighted task reviewed, or not (saved to the triage file)"),
        Binding("l", "triage('label')", "Label", id="task-label", show=False,
                tooltip="Give the highlighted task a cause label (also marks it reviewed)"),
        Binding("w", "triage('note')", "Note", id="task-note", show=False,
                tooltip="Write a note on the highlighted task"),
        Binding("y", "copy_task", "Copy", id="copy-task", show=False,
                tooltip="Copy the highlighted task's id to the clipboard"),
        Binding("ctrl+s", "export", "Export", id="export-table", show=False,
                tooltip="Write the tasks shown to a CSV or Markdown file (named in a prompt)"),
        Binding("o", "open_in_editor", "Editor", id="open-in-editor", show=False,
                tooltip="Open the highlighted task's first trial in $EDITOR, at its line"),
        Binding("H", "show_history", "History", id="task-history", show=False,
                tooltip="The highlighted task's history across recorded runs"),
        Binding("M", "failure_modes", "Modes", id="failure-modes", show=False,
                tooltip="What goes wrong across the run: its mixed tasks' failures grouped by signature"),
        Binding("A", "across_runs", "Across runs", id="task-across-runs", show=False,
                tooltip="The highlighted task in every loaded run, each run's first divergence from a reference"),
        Binding("e", "show_problems", "Warnings", id="problems", show=False,
                tooltip="The run's warnings, and the lines of the logs skipped or noted while loading"),
        Binding("escape", "clear_filter", "Clear filter", id="clear-filter", show=False,
                tooltip="Clear the name filter"),
        Binding("ctrl+c", "quit_loading", "Quit", id="quit-loading", show=False, priority=True,
                tooltip="While the logs load: stop loading and leave"),
    ]

    sort_key: reactive[str] = reactive("flakiness", init=False)
    """Column the table is sorted by (a key of the table's columns, e.g. ``flakiness`` or ``metric:NAME``);
    bound to the table's header arrow."""
    sort_reverse: reactive[bool] = reactive(True, init=False)
    """Descending when True."""
    filter_text: reactive[str] = reactive("", init=False)
    """Case-insensitive substring that task names must contain (or ``class:NAME``, ``state:NAME``…)."""
    flaky_only: reactive[bool] = reactive(False, init=False)
    """Show only tasks classed flaky."""
    run_index: reactive[int] = reactive(0, init=False)
    """Which of the loaded runs is shown."""
    _default_sort_set = False
    """Whether the first run shown has set the default sort (P(flaky) when trials are few)."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield LoadingPane(id="loading")
        yield RunSummary("", id="summary")
        # Disabled (so never focused) until loaded: keys pressed while loading must not type
        # into a hidden filter.
        yield Input(placeholder="filter tasks by name (enter: keep, escape: clear)", id="filter",
                    disabled=True)
        yield TaskTable(id="task-table").data_bind(TasksScreen.sort_key, TasksScreen.sort_reverse)
        yield Static("", id="current-task")
        yield Curves(id="curves")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self.theme_changed)
        self.watch(self.app, "k", self.k_changed, init=False)
        self.watch(self.app, "divergence_mode", self.mode_changed, init=False)
        self.add_class("-loading")
        self.query_one("#filter", Input).display = False
        self.sub_title = "loading"
        self.query_one(LoadingPane).load()

    @on(RunsLoaded)
    def runs_loaded(self, event: RunsLoaded) -> None:
        app = self.flake_app
        app.trial_log = event.log
        if app.k is None:
            app.k = app.session.usual_k()
        self.remove_class("-loading")
        self.query_one("#filter", Input).disabled = False
        self.refresh_bindings()  # the footer shows the keys that work now
        if any(not p.notice for p in event.log.problems):
            from flaketui.output.report import problems_line

            self.notify(f"{problems_line(event.log.problems)}; press e to see which and why",
                        title="Skipped input", severity="warning", timeout=10)
        self.show_run(0)
        self.query_one(TaskTable).focus()
        if app.options.watch:
            self.query_one(LoadingPane).follow()
        if wants_history(app.options) and not app.options.record:  # with --record: once recorded
            self.read_states()

    @on(LogsGrew)
    def logs_grew(self, event: LogsGrew) -> None:
        """New trials: show the same run again with them (divergences and causes are found again)."""
        app, run = self.flake_app, self.run
        app.trial_log = event.log  # every run's state afresh
        if app.session.follow_usual_k():
            app.set_reactive(type(app).k, app.session.k)  # shown below, not by the watcher
        runs = event.log.runs
        self.show_run(runs.index(run) if run in runs else 0)
        # Counted as the header counts: outcomes and errored trials apart.
        errored = int((event.log.outcome == ERRORED).sum())
        self.sub_title = f"watching: {len(event.log) - errored:,} trials, {errored:,} errored"

    # -- the shown run ----------------------------------------------------------------------

    def show_run(self, index: int) -> None:
        """Compute and show run number ``index`` of the loaded log; start its jobs once the table is drawn."""
        session = self.flake_app.session
        if session.log is None:
            return
        self.set_reactive(TasksScreen.run_index, index)
        keep = self.current_row  # the cursor's data row, kept in the new run's table
        state = session.run(session.log.runs[index])
        self.view = RunView(state)  # another run (or more trials): other rows, another natural order
        self.start_jobs(state)
        self.recompute(keep)

    def recompute(self, keep: int | None = None) -> None:
        """Statistics at the current k, then the table, summary and curves; the cursor stays on
        data row ``keep`` (None: the row under it)."""
        if self.view is None:
            return
        keep = self.current_row if keep is None else keep
        st = self.view.at_k(self.flake_app.k or 1)
        if not self._default_sort_set:
            # Few trials a task: the empirical-Bayes P(flaky) ranks the table, as report's order does.
            self._default_sort_set = True
            if self.sort_key == "flakiness" and st.few_trials():
                self.sort_key = "p_flaky"  # its watcher sorts nothing yet: no columns
        self.set_table_columns(keep_unchanged=True)
        self.refresh_order(keep)
        self.update_summary()
        self.update_curves()
        self.update_current_task()

    def refresh_order(self, keep: int | None = None) -> None:
        """Filter and sort the rows, keeping the cursor on ``keep`` (a data row) if shown."""
        if self.stats is None or self.view is None or self.table_columns is None:
            return
        table, key = self.query_one(TaskTable), self.sort_key
        mask = (self.table_columns.field_mask(self.filter_text, bool(self.flake_app.session.owners))
                if self.filter_text else None)
        order = self.view.shown_order(key, self.sort_reverse, lambda: self.sort_values(key),
                                      "" if mask is not None else self.filter_text, self.flaky_only, mask)
        mixed = self.summary.mixed_tasks if self.summary is not None else 0  # counted once per k, not per key
        table.empty_text = empty_text(self.filter_text, self.flaky_only, mixed)
        table.show(order, keep=keep)
        self.update_title()

    # -- keys -------------------------------------------------------------------------------

    def watch_sort_key(self) -> None:
        self._resort()

    def watch_sort_reverse(self) -> None:
        if not self.sort_settling:
            self._resort()

    def _resort(self) -> None:
        """A new sort shows the new top of the table (a filter or k keeps the cursor's task)."""
        self.refresh_order()
        self.query_one(TaskTable).cursor_row = 0

    def watch_filter_text(self) -> None:
        self.refresh_order(self.current_row)

    def watch_flaky_only(self) -> None:
        self.refresh_order(self.current_row)

    def watch_run_index(self, index: int) -> None:
        self.show_run(index)

    def action_filter(self) -> None:
        """Show the name filter and focus it."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()
        if self.view is not None:
            self.view.names.prepare()  # the names lower-cased now, not on the first letter typed

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()

    @on(Input.Submitted, "#filter")
    def filter_submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            event.input.display = False
        self.query_one(TaskTable).focus()

    def action_clear_filter(self) -> None:
        """Clear the name filter and hide it."""
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        self.filter_text = ""
        self.query_one(TaskTable).focus()

    def action_toggle_flaky(self) -> None:
        """Show only flaky tasks, or every task."""
        self.flaky_only = not self.flaky_only

    def action_change_k(self, delta: int) -> None:
        """Change k by ``delta`` (1 up to the largest n); :meth:`k_changed` recomputes."""
        app = self.flake_app
        if self.stats is None or app.k is None:
            return
        top = max(1, int(self.stats.n.max(initial=1)))
        new = max(1, min(top, app.k + delta))
        if new == app.k:
            self.notify(f"k stays {new}: it must lie between 1 and the largest n ({top})",
                        severity="warning", timeout=3)
            return
        app.k_is_default = False
        app.k = new

    def k_changed(self, k: int | None) -> None:
        """The app's k changed: the statistics at the new k, the table, summary and curves."""
        self.recompute()

    def action_show_traces(self) -> None:
        """Open the trace screen of the task under the cursor."""
        row = self.current_row
        if row is None or self.stats is None or self.outcomes is None:
            return
        self.post_message(Open("traces", outcomes=self.outcomes, row=row, stats=self.stats))

    @on(TaskTable.TaskSelected)
    def task_selected(self, event: TaskTable.TaskSelected) -> None:
        event.stop()
        self.action_show_traces()


def empty_text(filter_text: str, flaky_only: bool, mixed: int) -> str:
    """What the table says when no row is shown: with only flaky tasks asked for and none classed
    flaky, why (a class needs evidence; the tasks that merely passed and failed are a filter away)."""
    if flaky_only and not filter_text:
        return (f"no task is classed flaky yet (f: every task; /mixed: the {mixed} that passed and failed)"
                if mixed else "no task is classed flaky (f: every task)")
    return "no task matches" if (filter_text or flaky_only) else "no tasks"
