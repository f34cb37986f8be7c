"""What the task table opens: the other views of the shown run and of the highlighted task.

:class:`TaskOpeners` is mixed into :class:`~flaketui.app.screens.tasks.TasksScreen`, whose
bindings name these actions: each reads the screen's shown run and cursor and posts
:class:`~flaketui.app.messages.Open` with the screen's name and what it shows (the app's
:mod:`~flaketui.app.navigation` opens it), or acts on the highlighted task in place (copy, export,
the editor, triage). None of them changes the table's rows, sort or filter but the failure modes'
way back, which clears the filter so that the example task is shown.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from flaketui.app.editor import open_in_editor
from flaketui.app.messages import Open
from flaketui.app.screens import triage_dialogs
from flaketui.app.widgets.task_table import TaskTable
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.app.app import FlakeApp
    from flaketui.model import RunOutcomes
    from flaketui.stats import SuiteSummary, TaskStats


class TaskOpeners:
    """The task table's actions that open another view or act on the highlighted task (see the
    module's docstring)."""

    flake_app: FlakeApp
    run: str | None
    stats: TaskStats | None
    summary: SuiteSummary | None
    outcomes: RunOutcomes | None
    current_task: str | None
    current_row: int | None
    run_index: int
    filter_text: str
    flaky_only: bool

    def run_outcomes(self, run: str) -> RunOutcomes:
        """Run ``run``'s trials grouped by task (the session's, grouped once per loaded log)."""
        return self.flake_app.session.run(run).outcomes

    def action_pick_run(self) -> None:
        """Open the list of loaded runs; the one picked is shown."""
        log = self.flake_app.trial_log
        if log is None:
            return
        if len(log.runs) < 2:
            self.notify("only one run is loaded", timeout=3)
            return
        runs = []
        for run in log.runs:
            outcomes = self.run_outcomes(run)
            runs.append((run, len(outcomes.tasks), int(outcomes.n.sum())))

        def picked(index: int | None) -> None:
            if index is not None:
                self.run_index = index

        self.post_message(Open("run-picker", picked, runs=runs, current=self.run_index))

    def action_copy_task(self) -> None:
        """Copy the highlighted task's id to the clipboard, as shown (control characters
        spelled out: a hostile id can't end a bracketed paste, ``ESC [201~``, in the terminal
        it is pasted into)."""
        task = self.current_task
        if task is None:
            return
        self.app.copy_to_clipboard(visible(task))
        self.notify(f"copied {visible(task)}", title="Clipboard", timeout=4, markup=False)

    def action_export(self) -> None:
        """Ask for a file name, then write the tasks shown (filter and order kept) to it."""
        from flaketui.app.table_export import default_name, write_export

        st, run = self.stats, self.run
        if st is None or run is None:
            return
        rows = self.query_one(TaskTable).order.tolist()

        def chosen(name: str | None) -> None:
            if name is None:
                return
            try:
                path = write_export(Path(name).expanduser(), st, rows, self.flake_app.triage_store)
            except OSError as exc:
                self.notify(visible(f"{name}: {exc.strerror or exc}"), title="Not exported",
                            severity="error", timeout=10, markup=False)
                return
            self.notify(f"{len(rows):,} task(s) written to {visible(path)}", title="Exported",
                        timeout=8, markup=False)

        self.post_message(Open("export", chosen, default=default_name(run), rows=len(rows)))

    def action_open_in_editor(self) -> None:
        """Open the file of the highlighted task's first trial in ``$EDITOR`` (``+LINE``
        for editors that take it), the app suspended meanwhile."""
        log, row = self.flake_app.trial_log, self.current_row
        if log is not None and row is not None and self.outcomes is not None:
            open_in_editor(self.app, log, self.outcomes.task_rows(row))

    def action_show_plan(self) -> None:
        """Open the plan of the shown run, with the figures of the highlighted task."""
        if self.run is None:
            return
        self.post_message(Open("plan", run=self.run, task=self.current_task))

    def action_show_history(self) -> None:
        """Open the highlighted task's history across recorded runs (``--history``)."""
        task = self.current_task
        if task is None:
            return
        self.post_message(Open("history", task=task))

    def action_failure_modes(self) -> None:
        """Open the run's failure modes; the mode picked (``enter``) brings the cursor to its example task."""
        log, run = self.flake_app.trial_log, self.run
        if log is None or run is None:
            return
        from flaketui.loading import read_trial
        from flaketui.traces.causes import flaky_rows

        todo = {t: r for t, r in flaky_rows(self.run_outcomes(run)).items() if log.has_trace[r].any()}

        def back(task: str | None) -> None:
            st = self.stats
            if task is None or st is None or self.run != run:
                return
            row = st.tasks.index(task)
            if self.filter_text or self.flaky_only:  # the example may be filtered out: show every task
                self.filter_text, self.flaky_only = "", False
            self.refresh_order(keep=row)

        self.post_message(Open("failure-modes", back, run=run, rows_by_task=todo, read=partial(read_trial, log),
                               normaliser=self.flake_app.normaliser))

    def action_compare(self) -> None:
        """Open the comparison pane (picking runs A and B when more than two are loaded)."""
        self.post_message(Open("compare"))

    def action_matrix(self) -> None:
        """The runs × tasks matrix (two or more runs)."""
        self.post_message(Open("matrix"))

    def action_across_runs(self) -> None:
        """The highlighted task in every loaded run (two or more runs)."""
        self.post_message(Open("across-runs", task=self.current_task))

    def action_triage(self, what: str) -> None:
        """Mark reviewed (``reviewed``), label (``label``) or note (``note``) the highlighted task."""
        triage_dialogs.triage_task(self, what)

    def action_show_problems(self) -> None:
        """List the run's warnings, the skipped lines of the logs and the notes from loading."""
        log = self.flake_app.trial_log
        self.post_message(Open("problems", problems=log.problems if log else [],
                               warnings=self.summary.warnings if self.summary is not None else ()))

    def palette_commands(self) -> Iterable[tuple[str, str, str]]:
        """(title, help, action) for the command palette: the table's commands, then a sort by each column."""
        yield from PALETTE
        if self.stats is not None:
            for col in self.query_one(TaskTable).columns:
                yield f"Sort by {col.label}", col.tooltip, f"sort_by('{col.key}')"


PALETTE = (
    ("Open traces", "Passing vs failing traces of the highlighted task", "show_traces"),
    ("Toggle flaky only", "Show only flaky tasks", "toggle_flaky"),
    ("Filter by name", "Type part of a task name", "filter"),
    ("Increase k", "k + 1 for pass@k and pass^k", "change_k(1)"),
    ("Decrease k", "k − 1 for pass@k and pass^k", "change_k(-1)"),
    ("Pick a run", "Show another loaded run, picked from a list", "pick_run"),
    ("Plan the next run", "How many more trials, on which tasks, and why", "show_plan"),
    ("Compare two runs", "Flips, the primary test and the review of each flip", "compare"),
    ("Copy task id", "Copy the highlighted task's id to the clipboard", "copy_task"),
    ("Export the table", "Write the tasks shown to CSV or Markdown", "export"),
    ("Open in $EDITOR", "The highlighted task's first trial, at its line", "open_in_editor"),
    ("Show warnings and skipped lines", "The run's warnings and what loading met", "show_problems"),
)
"""The task table's commands in the palette (title, help, action), before its sorts."""
