"""The main screen: the run's summary, the task table and the k curves."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Header, Input, Label, ProgressBar, Static
from textual.worker import Worker, get_current_worker

from flaketui.app.messages import (
    CausesFound,
    DivergencesFound,
    LoadFailed,
    LoadProgress,
    LogsGrew,
    Open,
    RunsLoaded,
    StatesRead,
)
from flaketui.app.run_view import PENDING as PENDING  # re-exported: the table's "…" of a divergence
from flaketui.app.run_view import RunView
from flaketui.app.run_view import whole_valued as whole_valued  # re-exported
from flaketui.app.screens import triage_dialogs
from flaketui.app.screens.base import FlakeScreen
from flaketui.app.sorting import SortActions
from flaketui.app.widgets.curve import Curves
from flaketui.app.widgets.footer import KeyFooter
from flaketui.app.widgets.task_table import Column, TaskTable
from flaketui.app.widgets.themed import theme_colours, themed
from flaketui.model import ERRORED, InputError, RunOutcomes, TrialLog, who_ran
from flaketui.output import formatting as fmt
from flaketui.output.columns import (
    TASK_COLUMNS,
    TaskColumn,
    cause_column,
    class_style,
    consistency_column,
    label_ranks,
)
from flaketui.sanitize import mask_text, visible
from flaketui.stats import MeanEstimate, SuiteSummary, TaskStats, default_k, gate
from flaketui.stats.classes import CLASSES, UNDETERMINED
from flaketui.stats.estimators import FLAKY, STABLE_FAIL, STABLE_PASS, UNREPEATED
from flaketui.triage import TriageKey

WATCH_INTERVAL = 1.0
"""Seconds between looks at the logs with ``--watch``."""

if TYPE_CHECKING:
    from flaketui.app.app import AppOptions
    from flaketui.loading.watch import LogWatcher

METRIC_LABELS = {"tokens": "tokens", "cost_usd": "cost $", "duration_s": "dur s"}
"""Short column labels for common metrics (others show their own name)."""

SCORE_METRICS = frozenset({"reward"})
"""Metrics that repeat the trial's score (Harbor's reward): shown as the ``mean score`` column of a
graded run, never as a median of their own."""

CLASS_LABELS = {STABLE_PASS: "pass", STABLE_FAIL: "fail", FLAKY: "flaky", UNREPEATED: "once", UNDETERMINED: "undet."}
"""Short class names in the table (the reports spell them stable-pass, stable-fail, flaky, unrepeated,
undetermined)."""

CAUSES_FAILED = "failed (see the notification)"
"""The summary's progress of the cause? column when its worker raised."""


BAR = " ▏▎▍▌▋▊▉█"


def bar(value: float, cells: int = 4) -> str:
    """A horizontal bar of ``cells`` cells for a value in [0, 1], in eighths."""
    if fmt.is_missing(value):
        return " " * cells
    eighths = round(max(0.0, min(1.0, float(value))) * cells * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (BAR[part] if part else "")).ljust(cells)


def flakiness_cell(f: float) -> Text:
    """``0.556 ██▎`` : the flakiness and a bar, amber when the task is flaky."""
    style = class_style(FLAKY) if not fmt.is_missing(f) and f > 0 else "dim"
    return Text(f"{fmt.rate(f)} ") + Text(bar(f), style=style)


def metric_cell(medians: np.ndarray, whole: bool, row: int) -> Text:
    """A metric column's cell: the task's median, compactly; a count (``whole``) as a
    whole number (``678``, not ``678.0`` beside ``1,976``)."""
    value = medians[row]
    if whole and not fmt.is_missing(value):
        return Text(f"{value:,.0f}")
    return Text(fmt.number(value))


def rate_style(p: float) -> str:
    """Colour of a pass rate: green when always passing, red when always failing, else amber."""
    if fmt.is_missing(p):
        return "dim"
    if p >= 1:
        return "green"
    if p <= 0:
        return "red"
    return "bold yellow"


LINE_EDITORS = {"vi", "vim", "nvim", "nano", "emacs", "emacsclient", "micro", "kak", "hx",
                "helix", "joe", "mg", "jed", "ne"}
"""Editors that take ``+LINE`` before the file name."""
END_OF_OPTIONS_EDITORS = {"vi", "vim", "nvim", "gvim", "view", "nvi"}
"""Editors known to take ``--`` as the end of their options (vim ``:help --``: "Arguments
after this will be handled as a file name"; nvim and nvi the same, through getopt). Others
get no ``--`` (some would open a file named ``--``) and rely on the absolute path alone."""


def wants_history(options: AppOptions) -> bool:
    """The app was pointed at a history (``--history``, ``$FLAKETUI_HISTORY`` or ``--record``): the
    task table shows each task's state there. Otherwise none is read (its imports cost half a second)."""
    return bool(options.history or os.environ.get("FLAKETUI_HISTORY") or options.record)


def editor_command(editor: str, path: str, line: int) -> list[str]:
    """The command that opens ``path`` in ``editor`` (a command line, e.g. ``code -w``),
    at ``line`` when the editor takes ``+LINE`` (``code``: ``--goto path:line``).

    The path is a log's file name, so it is data: it is always passed as one argv element,
    made absolute so that it never starts with ``+`` (vim runs ``+CMD`` as an Ex command,
    and ``+!cmd`` as a shell command) or ``-`` (an option), and after ``--`` for the
    editors of :data:`END_OF_OPTIONS_EDITORS`. No shell ever sees it.
    """
    argv = shlex.split(editor) or ["vi"]
    name = Path(argv[0]).name
    path = os.path.abspath(path)
    end = ["--"] if name in END_OF_OPTIONS_EDITORS else []
    if name in LINE_EDITORS and line > 0:
        return [*argv, f"+{line}", *end, path]
    if name in ("code", "codium", "subl", "zed") and line > 0:
        return [*argv, *(["--goto"] if name in ("code", "codium") else []), f"{path}:{line}"]
    return [*argv, *end, path]


def summary_figures(sm: SuiteSummary) -> list[tuple[str, MeanEstimate]]:
    """(label, estimate) of the suite figures: pass@1, pass@k and pass^k, or at k = 1,
    where the three are one figure, ``pass@1`` once; then a graded run's mean score."""
    score = [] if sm.mean_score is None else [("mean score", sm.mean_score)]
    if sm.k == 1:
        return [("pass@1", sm.pass_at_1), *score]
    return [("pass@1", sm.pass_at_1), (f"pass@{sm.k}", sm.pass_at_k), (f"pass^{sm.k}", sm.pass_hat_k), *score]


def flow(chunks: list[Text], width: int, sep: str) -> Text:
    """``chunks`` joined by ``sep``, a new line where the next chunk would pass ``width``:
    lines break between chunks, never inside one."""
    out = Text()
    used = 0
    for chunk in chunks:
        if used and used + len(sep) + chunk.cell_len > width:
            out.append("\n")
            used = 0
        elif used:
            out.append(sep)
            used += len(sep)
        out.append_text(chunk)
        used += chunk.cell_len
    return out


class LoadCancelled(Exception):
    """Raised in the loading thread when the user quit while the logs were loading."""


SHORT_SCREEN = 30
"""Screen height under which the task table's curves are not shown (the table keeps the rows)."""
NARROW_TABLE = 120
"""Screen width under which the task table shows the class right after the task's name (the
columns after the first few are past the edge of an 80-column terminal until scrolled to)."""


class TasksScreen(SortActions, FlakeScreen[None]):
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
        Binding("slash", "filter", "Filter", id="filter", tooltip="Filter tasks by name"),
        Binding("m", "matrix", "Matrix", id="run-matrix", show=False,
                tooltip="Every run side by side: runs × tasks p̂, trends, newly flaky since run X"),
        Binding("c", "compare", "Compare", id="compare-runs",
                tooltip="Run B against run A: flips, the primary test, and the review of each flip"),
        Binding("p", "show_plan", "Plan", id="show-plan",
                tooltip="Plan the next run: how many more trials, on which tasks, and why"),
        Binding("r", "pick_run", "Runs", id="pick-run", tooltip="Pick the run to show from a list"),
        Binding("f", "toggle_flaky", "Flaky", id="flaky-only",
                tooltip="Show only flaky tasks (toggle)"),
        Binding("s", "sort_next", "Sort", id="sort-next", show=False,
                tooltip="Sort by the next column"),
        Binding("S", "sort_reverse", "Reverse", id="sort-reverse", show=False,
                tooltip="Reverse the sort order (ascending / descending)"),
        Binding("plus,equals_sign", "change_k(1)", "K+", id="k-up", show=False, tooltip="Increase k"),
        Binding("minus", "change_k(-1)", "K−", id="k-down", show=False, tooltip="Decrease k"),
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
                tooltip="What goes wrong across the run: its flaky tasks' failures grouped by signature"),
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
    _default_sort_set = False
    """Whether the first run shown has set the default sort (P(flaky) when trials are few)."""
    """Column the table is sorted by (a key of :meth:`columns`, e.g. ``flakiness`` or ``metric:NAME``)."""
    sort_reverse: reactive[bool] = reactive(True, init=False)
    """Descending when True."""
    filter_text: reactive[str] = reactive("", init=False)
    """Case-insensitive substring that task names must contain."""
    flaky_only: reactive[bool] = reactive(False, init=False)
    """Show only tasks classed flaky."""
    run_index: reactive[int] = reactive(0, init=False)
    """Which of the loaded runs is shown."""

    def __init__(self) -> None:
        super().__init__()
        self.view: RunView | None = None
        """The shown run's table state: outcomes, statistics at k, orders, flaky mask, name filter."""
        self.divergence: dict[str, dict[str, int | None]] = {}
        """Per run, task -> first divergence step (None: none), filled by a worker."""
        self._outcomes: dict[str, RunOutcomes] = {}
        self._outcomes_of: TrialLog | None = None
        """The log :attr:`_outcomes` (each run's trials by task) were grouped from."""
        self._last_progress = 0.0
        self._told_loading = 0.0
        """When a key pressed while loading was last answered (:meth:`on_key`)."""
        self._watcher: LogWatcher | None = None
        """Follows the logs with ``--watch`` (set by the loading worker)."""
        self._divergence_progress = ""
        self.causes: dict[str, dict[str, str]] = {}
        """Per run, flaky task -> suggested source of flakiness (kept in the triage file, else
        found by :meth:`find_causes`); a suggestion, never a label."""
        self._causes_progress: dict[str, str] = {}
        """Per run still being read, "3 of 10" (mixed tasks whose causes are found)."""
        self.consistency: dict[str, dict[str, float | None]] = {}
        """Per run, flaky task with traces -> its trajectory consistency (the ``consist.`` column), found
        by :meth:`find_causes` beside the causes (None: fewer than two passing trials with actions)."""
        self.history_states: dict[str, str] | None = None
        """Task -> its lifecycle state in the history (the ``state`` column), once read; None: no
        history asked for (``--history``, ``$FLAKETUI_HISTORY`` or ``--record``), or none recorded."""
        self._owners: dict[str, list[str]] = {}
        """Per run, each task's owners as shown (``--owners``), made on first show."""

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
    def has_traces(self) -> np.ndarray:
        """Per task of the shown run, whether a non-errored trial of it has a trace."""
        return np.empty(0, dtype=bool) if self.view is None else self.view.has_traces

    @property
    def medians(self) -> dict[str, np.ndarray]:
        """Per metric, each task's median over its trials."""
        return {} if self.view is None else self.view.medians

    # -- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="loading"):
            yield Label("Loading logs…", id="loading-label")
            yield ProgressBar(total=None, show_eta=False, id="load-progress")
        yield Static("", id="summary")
        # Disabled (so never focused) until loaded: keys pressed while loading must not type
        # into a hidden filter.
        yield Input(placeholder="filter tasks by name (enter: keep, escape: clear)", id="filter",
                    disabled=True)
        yield TaskTable(id="task-table")
        yield Static("", id="current-task")
        yield Curves(id="curves")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self.theme_changed)
        self.add_class("-loading")
        self.query_one("#filter", Input).display = False
        self.sub_title = "loading"
        self.load_runs()

    def theme_changed(self, theme: object) -> None:
        """Draw the summary, table and curves again in the new theme's colours."""
        self.update_summary()
        self.query_one(TaskTable).invalidate()
        self.update_curves()
        self.update_current_task()

    # -- loading ----------------------------------------------------------------------------

    @property
    def loading_logs(self) -> bool:
        """True until the logs are loaded (or failed to load): only quitting works then."""
        return self.has_class("-loading")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While loading, every key but ``q`` and ``ctrl+c`` does nothing; ``ctrl+c`` quits
        only then (after, it copies selected text as everywhere in Textual)."""
        if action == "quit_loading":
            return self.loading_logs
        return not self.loading_logs

    def on_key(self, event: events.Key) -> None:
        """A key pressed while the logs load is answered (at most once a second), not dropped
        without a word; only q and ctrl+c act then."""
        if not self.loading_logs or event.key in ("q", "ctrl+c"):
            return
        now = time.monotonic()
        if now - self._told_loading > 1.0:
            self._told_loading = now
            self.notify("still loading the logs…; the table takes keys once it is shown", timeout=2)

    def action_quit_loading(self) -> None:
        """Stop loading (the reading thread stops at its next progress report) and leave."""
        self.workers.cancel_group(self, "load")
        self.app.exit()

    @work(thread=True, exclusive=True, exit_on_error=False, group="load", description="Loading runs")
    def load_runs(self) -> None:
        """Read the logs in a thread; post progress, then the log or the error."""
        from flaketui.loading import load_logs

        app = self.flake_app
        worker = get_current_worker()

        def progress(done: int, total: int) -> None:
            if worker.is_cancelled:  # q while loading: stop reading rather than finish
                raise LoadCancelled
            now = time.monotonic()
            if done >= total or now - self._last_progress > 0.05:
                self._last_progress = now
                self.post_message(LoadProgress(done, total))

        try:
            if app.options.watch:
                from flaketui.loading.watch import LogWatcher

                self._watcher = LogWatcher(app.options.paths, app.options.fields)
                log = self._watcher.load()
            else:
                # the index cache is written behind the first paint, not before it
                log = load_logs(app.options.paths, app.options.fields, progress=progress, store_later=True)
        except InputError as exc:
            self.post_message(LoadFailed(str(exc)))
            return
        except LoadCancelled:
            return
        self.post_message(RunsLoaded(log))

    @on(LoadProgress)
    def show_progress(self, event: LoadProgress) -> None:
        bar_ = self.query_one("#load-progress", ProgressBar)
        bar_.update(total=event.total, progress=event.done)
        self.query_one("#loading-label", Label).update(
            f"Loading {', '.join(self.flake_app.options.paths)}: "
            f"{event.done / 1e6:,.1f} of {event.total / 1e6:,.1f} MB")

    @on(LoadFailed)
    def show_failure(self, event: LoadFailed) -> None:
        self.query_one("#loading-label", Label).update(Text(f"flaketui: error: {event.error}",
                                                            style="bold red"))
        self.query_one("#load-progress", ProgressBar).display = False
        self.sub_title = "error"
        self.notify(visible(event.error), title="Could not load", severity="error", timeout=30,
                    markup=False)

    def show_worker_error(self, worker: Worker[object]) -> None:
        """A failed worker is told; a failed load also replaces "Loading logs…" with its error."""
        super().show_worker_error(worker)
        if worker.group == "load":
            self.post_message(LoadFailed(str(worker.error)))
        if worker.group == "causes" and self.run is not None:
            self._causes_progress[self.run] = CAUSES_FAILED
            self.update_summary()

    @on(RunsLoaded)
    def runs_loaded(self, event: RunsLoaded) -> None:
        app = self.flake_app
        log = event.log
        app.trial_log = log
        if app.k is None:
            app.k = default_k([self.run_outcomes(r) for r in log.runs])
        self.remove_class("-loading")
        self.query_one("#filter", Input).disabled = False
        self.refresh_bindings()  # the footer shows the keys that work now
        if any(not p.notice for p in log.problems):
            from flaketui.output.report import problems_line

            self.notify(f"{problems_line(log.problems)}; press e to see which and why",
                        title="Skipped input", severity="warning", timeout=10)
        self.show_run(0)
        self.query_one(TaskTable).focus()
        if app.options.watch:
            self.set_interval(WATCH_INTERVAL, self.poll_logs)
        if wants_history(app.options) and not app.options.record:  # with --record: once recorded
            self.read_states()

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-states",
          description="Reading the tasks' states from the history")
    def read_states(self) -> None:
        """Read each task's state from the history, in a thread (:func:`flaketui.history.recording.task_states`)."""
        from flaketui.history import HistoryError
        from flaketui.history.recording import task_states

        try:
            self.post_message(StatesRead(task_states(self.flake_app.options.history,
                                                      self.flake_app.options.flaky_cap)))
        except HistoryError as exc:  # told once; H says it again where the history is asked for
            self.post_message(StatesRead(None, visible(str(exc))))

    @on(StatesRead)
    def states_read(self, event: StatesRead) -> None:
        """Show the ``state`` column (a history with no run yet shows none), or why it can't."""
        if event.error is not None:
            self.notify(event.error, title="History", severity="warning", timeout=10, markup=False)
        self.history_states = event.states
        if event.states is not None and self.stats is not None:
            self.set_table_columns(keep_unchanged=True)

    @work(thread=True, exclusive=True, exit_on_error=False, group="watch",
          description="Following the logs")
    def poll_logs(self) -> None:
        """With ``--watch``: look at the logs again; post the trials if they changed."""
        watcher = self._watcher
        if watcher is not None and watcher.poll():
            try:
                log = watcher.log()
            except InputError:
                return
            self.post_message(LogsGrew(log))

    @on(LogsGrew)
    def logs_grew(self, event: LogsGrew) -> None:
        """New trials: show the same run again with them (divergences are found again)."""
        app = self.flake_app
        app.trial_log = event.log
        if app.k_is_default:
            # k follows the trials most tasks have up as trials arrive, never down: new tasks
            # with one trial each are counted below k (as the summary says) until they catch
            # up, not a reason to drop to k = 1 for every task.
            usual = default_k([self.run_outcomes(r) for r in event.log.runs])
            if app.k is None or usual > app.k:
                app.k = usual
        self.divergence.clear()
        self.causes.clear()
        self.consistency.clear()
        runs = event.log.runs
        self.show_run(runs.index(self.run) if self.run in runs else 0)
        # Counted as the header counts: outcomes and errored trials apart.
        errored = int((event.log.outcome == ERRORED).sum())
        self.sub_title = f"watching: {len(event.log) - errored:,} trials, {errored:,} errored"

    # -- the shown run ----------------------------------------------------------------------

    def show_run(self, index: int) -> None:
        """Compute and show run number ``index`` of the loaded log."""
        log = self.flake_app.trial_log
        if log is None:
            return
        self.set_reactive(TasksScreen.run_index, index)
        run = log.runs[index]
        keep = self.current_row  # the cursor's data row, kept in the new run's table
        # another run (or more trials): other rows, another natural order, statistics afresh
        self.view = RunView(log, run, self.run_outcomes(run), self.flake_app.options.flaky_cap)
        new_run = self.run not in self.causes
        if new_run:
            from flaketui.traces.causes import CAUSES

            kept = self.flake_app.triage_store.suggested(self.run)  # a file's text: only known names
            self.causes[self.run] = {t: c for t, c in kept.items() if c in CAUSES}
            self._causes_progress[self.run] = "…"
        self.recompute(keep)
        # The readers of traces start once the table is drawn: they would slow its first paint.
        if self.run not in self.divergence:
            self.divergence[self.run] = {}
            self.call_after_refresh(self.find_divergences, self.run)
        if new_run:
            self.call_after_refresh(self.find_causes, self.run, frozenset(self.causes[self.run]))

    def run_outcomes(self, run: str) -> RunOutcomes:
        """Run ``run``'s trials grouped by task, grouped once per loaded log."""
        log = self.flake_app.trial_log
        assert log is not None
        if self._outcomes_of is not log:
            self._outcomes, self._outcomes_of = {}, log
        if run not in self._outcomes:
            self._outcomes[run] = log.run_outcomes(run)
        return self._outcomes[run]

    def recompute(self, keep: int | None = None) -> None:
        """Statistics at the current k, then the table, summary and curves; the cursor stays on
        data row ``keep`` (None: the row under it)."""
        if self.view is None:
            return
        k = self.flake_app.k or 1
        if keep is None:
            keep = self.current_row
        st = self.view.at_k(k)
        if not self._default_sort_set:
            # Few trials a task: the empirical-Bayes P(flaky) ranks the table, as report's order does.
            self._default_sort_set = True
            if self.sort_key == "flakiness" and st.few_trials():
                self.set_reactive(TasksScreen.sort_key, "p_flaky")
        self.set_table_columns(keep_unchanged=True)
        self.refresh_order(keep)
        self.update_summary()
        self.update_curves()
        self.update_current_task()

    def set_table_columns(self, keep_unchanged: bool = False) -> None:
        """Give the table its columns again (the data behind them changed). The sorted
        orders are forgotten; with ``keep_unchanged`` (a new k) the shown column's is kept
        if its values are the same (a sort by flakiness outlives a k change). The other
        columns sort again when asked: checking each would cost more than the k change."""
        view = self.view
        assert view is not None
        key = self.sort_key
        kept = view.take_orders()
        self.query_one(TaskTable).set_columns(self.columns())
        if not keep_unchanged:
            kept = {}
        view.keep_orders(kept, key, lambda: self.sort_values(key))

    def columns(self) -> list[Column]:
        """The table's columns for the shown run, each with its cells and sort values.

        The per-task statistics come from :data:`flaketui.columns.TASK_COLUMNS` (labels,
        text, sort); this adds widths, colours and the app's own columns.
        """
        st = self.stats
        assert st is not None
        view = self.view
        assert view is not None
        name_w = min(self.name_cap(), view.name_width)
        flaky_style = class_style(FLAKY)

        def stat(key: str, width: int, align: str = "right",
                 style: Callable[[int], str] = lambda row: "", tooltip: str | None = None,
                 render: Callable[[int], Text] | None = None) -> Column:
            """The app's column of statistic ``key``: its text in ``style`` (or ``render``)."""
            spec = TASK_COLUMNS[key]
            if render is None:
                render = lambda row: Text(spec.text(st, row), style=style(row))  # noqa: E731
            return Column(key, spec.header(st.k), width, align,
                          spec.tooltip if tooltip is None else tooltip, render,
                          sort=lambda: spec.sort(st), descending=spec.descending)

        label_k = max(6, len(TASK_COLUMNS["pass_at_k"].header(st.k)))
        cut = self.cut_names(name_w)
        class_w = max(5, *(len(CLASS_LABELS.get(c, c)) for c in set(st.classes))) if len(st) else 5
        cols = [
            replace(stat("task", name_w, "left", tooltip="task name (bold amber when flaky)",
                         render=lambda row: Text(cut.get(row) or visible(st.tasks[row]), style=flaky_style
                                                 if st.classes[row] == FLAKY else "")),
                    sort=lambda: view.name_rank.astype(np.float64), cut="middle"),
            stat("n", max(3, len(str(int(st.n.max(initial=0)))))),
            stat("p_hat", 5, style=lambda row: rate_style(st.p_hat[row])),
            stat("p_hat_ci", 12, style=lambda row: "dim"),
            *([stat("mean_score", 10), stat("mean_score_ci", 12, style=lambda row: "dim"), stat("score_sd", 8)]
              if st.scores is not None else []),
            stat("pass_at_k", label_k),
            stat("pass_hat_k", label_k),
            stat("flakiness", 10, "left", tooltip="4·p̂·(1−p̂), with a bar",
                 render=lambda row: flakiness_cell(st.flakiness[row])),
            stat("class", class_w, "left",
                 tooltip=f"against the flakiness cap {st.flaky_cap:g}: flaky (its exact interval rules out "
                         "flakiness at or below the cap), pass / fail (stable: rules out flakiness above it), "
                         "undet. (undetermined: more trials decide), or once (one trial); /class:NAME filters",
                 render=lambda row: Text(CLASS_LABELS.get(st.classes[row], st.classes[row]),
                                         style=class_style(st.classes[row]))),
            stat("mixed", 5, "left", style=lambda row: "dim",
                 tooltip="the task both passed and failed (a fact, not its class); /mixed filters"),
            stat("p_flaky", 8),
        ]
        if self.app.size.width < NARROW_TABLE:
            at = next(i for i, c in enumerate(cols) if c.key == "class")
            cols.insert(1, cols.pop(at))  # the class beside the name, never past the screen's edge
        if self.run is not None and triage_dialogs.run_has_notes(self.flake_app, self.run):
            cols.append(triage_dialogs.task_column(self.flake_app, self.run, st.tasks))
        if view.group_width is not None:
            cols.append(stat("group", view.group_width, "left", style=lambda row: "dim"))
        if self.history_states is not None:
            cols.append(self.state_column(st.tasks, self.history_states))
        if self.flake_app.options.owners:
            cols.append(self.owner_column())
        if self.has_traces.any():
            cols.append(Column("divergence", "div", 4, "right",
                               "first divergence step of the most informative pass/fail pair",
                               self.divergence_cell, self.divergence_values))
            spec = cause_column(self.causes.get(self.run or "", {}))
            cols.append(Column(spec.key, spec.label, 19, "left", spec.tooltip + "; l confirms it",
                               self.cause_cell, self.cause_values, descending=spec.descending))
            consist = consistency_column(self.consistency.setdefault(self.run or "", {}))
            cols.append(Column(consist.key, consist.label, 8, "right", consist.tooltip,
                               partial(self.consistency_cell, consist), lambda: consist.sort(st),
                               descending=consist.descending))
        for name, medians in self.medians.items():
            if name in SCORE_METRICS:
                continue
            label = METRIC_LABELS.get(name, name[:10])
            cols.append(Column(f"metric:{name}", label, max(6, len(label)), "right",
                               f"median {name} over the task's trials",
                               partial(metric_cell, medians, view.whole[name]),
                               partial(np.asarray, medians, dtype=np.float64)))
        return cols

    def cut_names(self, width: int) -> dict[int, str]:
        """The shown run's names longer than ``width``, cut so that they stay apart
        (:func:`~flaketui.output.cells.cut_names`: τ² telecom ids that share their start and end
        are cut round the part that differs), by data row."""
        from flaketui.output.cells import cut_names

        st = self.stats
        assert st is not None
        long = [i for i, t in enumerate(st.tasks) if len(t) > width]
        return dict(zip(long, cut_names([visible(st.tasks[i]) for i in long], width), strict=True))

    @staticmethod
    def state_column(tasks: list[str], states: dict[str, str]) -> Column:
        """Each task's lifecycle state in the history (``-``: never recorded); sorted in the
        lifecycle's order, most urgent first."""
        from flaketui.app.states import STATE_ORDER, STATE_STYLES

        shown = [states.get(t) for t in tasks]
        rank = np.array([STATE_ORDER.get(s, len(STATE_ORDER)) for s in shown], dtype=np.float64)
        width = max([5, *(len(s) for s in shown if s)])  # "undetermined" whole, as the class column
        return Column("history_state", "state", width, "left",
                      "the task's state in the history (flaky, fixed, regressed, quarantined…); /state:NAME filters",
                      lambda row: Text(shown[row] or "-", style=STATE_STYLES.get(shown[row] or "", "dim")),
                      lambda: rank, descending=False)

    def owner_column(self) -> Column:
        """Each task's owners by the ``--owners`` file (``-``: none); /owner:NAME filters."""
        owners = self.task_owners()
        width = min(24, max([5, *map(len, owners)]))
        return Column("owner", "owner", width, "left", "the task's owners (--owners); /owner:NAME filters",
                      lambda row: Text(visible(owners[row]) or "-", style="" if owners[row] else "dim"),
                      lambda: label_ranks(owners), descending=False)

    def task_owners(self) -> list[str]:
        """The shown run's tasks' owners, space-separated (empty: none), by the ``--owners`` rules."""
        from flaketui.history.owners import owners_of

        st = self.stats
        assert st is not None and self.run is not None
        if self.run not in self._owners:
            groups = self.outcomes.groups if self.outcomes is not None else None
            self._owners[self.run] = [" ".join(o) for o in owners_of(st.tasks, self.flake_app.options.owners,
                                                                      groups)]
        return self._owners[self.run]

    def field_mask(self, text: str) -> np.ndarray | None:
        """The rows a ``state:NAME``, ``owner:NAME``, ``class:NAME`` or ``mixed`` filter keeps (None: ``text``
        is a name filter)."""
        st = self.stats
        if st is not None and text.strip().lower() == "mixed":
            return st.mixed
        field_name, _, value = text.partition(":")
        if st is not None and field_name == "class" and value:
            wanted = value.strip().lower()
            names = {CLASS_LABELS.get(c, c): c for c in CLASSES}
            cls = names.get(wanted, wanted)
            return np.fromiter(map(cls.__eq__, st.classes), dtype=bool, count=len(st))
        if st is None or not value or field_name not in ("state", "owner"):
            return None
        value = value.strip().lower()
        if field_name == "state":
            states = self.history_states or {}
            return np.array([states.get(t, "-") == value for t in st.tasks], dtype=bool)
        if not self.flake_app.options.owners:
            return None
        return np.array([value in o.lower() for o in self.task_owners()], dtype=bool)

    def name_cap(self) -> int:
        """The widest the task column gets: a third of the screen, 24 to 64 cells (the
        highlighted task's full name is shown below the table)."""
        return max(24, min(64, self.app.size.width // 3))

    def cell(self, row: int, key: str) -> Text:
        """One cell of the table: column ``key``'s rendering of data row ``row``."""
        column = self.query_one(TaskTable).column(key)
        return Text("") if column is None else column.render(row)

    def divergence_cell(self, row: int) -> Text:
        """The divergence column's cell: the step, ``—`` for none, ``…`` while pending."""
        step = self.divergence_of(row)
        if step == PENDING:
            return Text("…", style="dim")
        return Text(fmt.DASH if step is None else str(step), style="" if step else "dim")

    def cause_cell(self, row: int) -> Text:
        """The cause? column's cell: the suggestion, dim until a label confirms it; ``…`` while pending."""
        st = self.stats
        assert st is not None and self.run is not None
        cause = self.causes.get(self.run, {}).get(st.tasks[row])
        if cause is None:
            progress = self._causes_progress.get(self.run, CAUSES_FAILED)
            pending = progress != CAUSES_FAILED and self.divergence_of(row) is not None
            return Text("…" if pending else "", style="dim")
        label = self.flake_app.triage_store.get(TriageKey(self.run, st.tasks[row])).label
        return Text(cause, style="" if label == cause else "dim")

    def divergence_values(self) -> np.ndarray:
        """Sort values of the divergence column (:meth:`RunView.divergence_values`)."""
        assert self.view is not None
        return self.view.divergence_values(self.divergence.get(self.view.run, {}))

    def cause_values(self) -> np.ndarray:
        """Sort values of the cause? column (:meth:`RunView.cause_values`)."""
        assert self.view is not None
        return self.view.cause_values(self.causes.get(self.view.run, {}))

    def consistency_cell(self, spec: TaskColumn, row: int) -> Text:
        """The consist. column's cell: the number; ``…`` while a flaky task with traces waits for
        the worker; blank for any other task (or too few passing trials with actions)."""
        st = self.stats
        assert st is not None and self.run is not None and self.view is not None
        if st.tasks[row] not in self.consistency.get(self.run, {}):
            progress = self._causes_progress.get(self.run, CAUSES_FAILED)
            pending = progress != CAUSES_FAILED and bool(st.mixed[row]) and bool(self.view.has_traces[row])
            return Text("…" if pending else "", style="dim")
        return Text(spec.text(st, row))

    def flaky_mask(self) -> np.ndarray:
        """Per task of the shown run, whether it is flaky (:meth:`RunView.flaky_mask`)."""
        assert self.view is not None
        return self.view.flaky_mask()

    def forget_order(self, key: str) -> None:
        """Column ``key``'s values changed (divergences or causes found): sort it again."""
        if self.view is not None:
            self.view.forget_order(key)

    def divergence_of(self, row: int) -> int | None:
        """First divergence of data row ``row``: a step, None, or :data:`PENDING`."""
        assert self.view is not None
        return self.view.divergence_of(row, self.divergence.get(self.view.run, {}))

    def sort_values(self, key: str) -> np.ndarray:
        """Values to sort by for column ``key`` (floats; NaN sort last)."""
        assert self.stats is not None
        return self.column_sort_values(key, len(self.stats))

    def sort_table(self) -> TaskTable:
        return self.query_one(TaskTable)

    def refresh_order(self, keep: int | None = None) -> None:
        """Filter and sort the rows, keeping the cursor on ``keep`` (a data row) if shown."""
        st = self.stats
        if st is None:
            return
        table = self.query_one(TaskTable)
        assert self.view is not None
        key = self.sort_key
        mask = self.field_mask(self.filter_text) if self.filter_text else None
        order = self.view.shown_order(key, self.sort_reverse, lambda: self.sort_values(key),
                                      "" if mask is not None else self.filter_text, self.flaky_only, mask)
        table.sort_key = self.sort_key
        table.sort_reverse = self.sort_reverse
        table.empty_text = "no task matches" if (self.filter_text or self.flaky_only) else "no tasks"
        table.show(order, keep=keep)
        self.update_title()

    @property
    def current_row(self) -> int | None:
        """Data row (index into :attr:`stats`) under the cursor."""
        if self.stats is None:
            return None
        return self.query_one(TaskTable).cursor_data_row

    @property
    def current_task(self) -> str | None:
        """Name of the task under the cursor."""
        row = self.current_row
        return None if row is None or self.stats is None else self.stats.tasks[row]

    # -- header, summary and curves ---------------------------------------------------------

    def update_title(self) -> None:
        st = self.stats
        if st is None or self.run is None:
            return
        shown = len(self.query_one(TaskTable).order)
        label = next((c.label for c in self.query_one(TaskTable).columns
                      if c.key == self.sort_key), self.sort_key)
        parts = [visible(self.run), f"{shown} of {len(st)} tasks" if shown != len(st) else
                 f"{len(st)} tasks", f"sorted by {label} {'↓' if self.sort_reverse else '↑'}"]
        if self.filter_text:
            parts.append(f"filter “{self.filter_text}”")
        if self.flaky_only:
            parts.append("flaky only")
        self.sub_title = visible(" · ".join(parts))

    def update_summary(self) -> None:
        """The run's figures, flowed to the width: a line breaks between figures, never
        inside one (``[0.64,`` / ``0.91]``)."""
        sm, st = self.summary, self.stats
        log = self.flake_app.trial_log
        if sm is None or st is None or log is None:
            return
        app = self.flake_app
        k = sm.k
        box = self.query_one("#summary", Static)
        width = box.content_size.width or max(20, self.app.size.width - 2)
        narrow = width < 100
        head = [Text(visible(sm.run), style="bold")]
        runs = len(log.runs)
        if runs > 1:
            head[0].append(f" ({self.run_index + 1}/{runs})" if narrow else
                           f" (run {self.run_index + 1} of {runs}, r: pick)", style="dim")
        who = who_ran(dict(log.run_meta.get(sm.run, {})))
        ran = " ".join(who[p] for p in ("agent", "model", "harness") if p in who)
        if ran:  # who ran it (the harness's configuration), when the log says
            head.append(Text(visible(mask_text(ran)), style="dim"))  # a model "name" may be a URL with a password
        counted = sm.pass_at_1.tasks
        tasks = f"{sm.tasks} tasks" + (f" ({counted} with an outcome)" if counted != sm.tasks else "")
        head += [Text(tasks), Text(f"{sm.trials} trials"), Text(f"{sm.errored} errored"),
                 Text(f"{sm.flaky_tasks} flaky", style="bold yellow" if sm.flaky_tasks else ""),
                 Text(f"{sm.undetermined_tasks} undetermined, {sm.stable_tasks} stable (cap {sm.flaky_cap:g})"),
                 Text(f"{sm.mixed_tasks} mixed", style="dim")]
        k_text = Text(f"k = {k}")
        if app.k_is_default:
            k_text.append(" (most tasks' trials)", style="dim")
        k_text.append(" +/−", style="dim")
        head.append(k_text)
        figures: list[Text] = []
        for label, est in summary_figures(sm):
            figure = Text(f"{label} ", style="dim")
            figure.append(fmt.rate(est.value), style="bold")
            figure.append(f" {fmt.suite_interval(est)}", style="dim")
            figures.append(figure)
        if sm.tasks_below_k:
            figures.append(Text(f"{sm.tasks_below_k} task(s) with n < k left out", style="yellow"))
        opts = app.options
        if opts.min_pass_hat_k is not None or opts.max_flakiness is not None:
            verdict = gate(st, sm, opts.min_pass_hat_k, opts.max_flakiness)
            if verdict.passed:
                figures.append(Text(" gate PASS ", style="bold black on green"))
            else:
                figures.append(Text(" gate FAIL ", style="bold white on red"))
                figures.append(Text("; ".join(verdict.reasons), style="red"))
        text = flow(head, width, " · ")
        text.append("\n")
        text.append_text(flow(figures, width, "   "))
        if self.run is not None and self.has_traces.any():
            text.append("\n" + self.causes_line(), style="dim")
        from flaketui.output.report import problems_line

        alerts = [visible(w) for w in sm.warnings]
        if log.problems:
            alerts.append(problems_line(log.problems))
        if len(alerts) == 1 and len(alerts[0]) + 2 + len(" (e: show)") <= width:
            text.append(f"\n⚠ {alerts[0]}" + (" (e: show)" if log.problems else ""), style="yellow")
        elif alerts:
            # Folded to one line, so that the table keeps its rows on a small terminal: e shows them all.
            more = f" (+{len(alerts) - 1} more; e: show all)" if len(alerts) > 1 else " (e: show)"
            line = Text(f"⚠ {alerts[0]}", style="yellow", no_wrap=True, overflow="ellipsis")
            line.truncate(max(10, width - len(more)), overflow="ellipsis")
            line.append(more, style="yellow bold")
            text.append("\n")
            text.append_text(line)
        box.update(themed(text, theme_colours(app.theme_variables)))

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
        st = self.stats
        if st is None:
            return
        assert self.view is not None
        row = self.current_row
        suite, spread, task = self.view.curves(row)
        title = "highlighted task"
        if row is not None:
            title = f"{visible(st.tasks[row])} ({int(st.passes[row])}/{int(st.n[row])})"
        self.query_one(Curves).show_curves(
            suite, f"suite ({len(st)} tasks)", task, title, spread, st.k)

    def update_current_task(self) -> None:
        """The full name of the highlighted task (the table may cut it), under the table."""
        st, row = self.stats, self.current_row
        line = Text()
        if st is not None and row is not None:
            line.append("▸ ")
            line.append(visible(st.tasks[row]), style="bold")
            line.append(f"  {int(st.passes[row])}/{int(st.n[row])} passed", style="dim")
        self.query_one("#current-task", Static).update(line, layout=False)  # one line, whatever it says

    @on(TaskTable.TaskHighlighted)
    def task_highlighted(self, event: TaskTable.TaskHighlighted) -> None:
        self.update_curves()
        self.update_current_task()

    # -- divergence column ------------------------------------------------------------------

    @work(thread=True, exclusive=False, exit_on_error=False, group="divergence",
          description="Finding first divergences")
    def find_divergences(self, run: str) -> None:
        """Read the traces of every flaky task of ``run`` and post its first divergence
        (:func:`~flaketui.traces.task_view.divergences`), in batches."""
        from flaketui.app.screens.traces import chosen_mode
        from flaketui.loading import read_trial
        from flaketui.traces.task_view import divergence_rows, divergences

        app = self.flake_app
        log = app.trial_log
        assert log is not None
        todo = divergence_rows(log, self.run_outcomes(run))
        worker = get_current_worker()
        batch: dict[str, int | None] = {}
        last = time.monotonic()
        found = divergences(partial(read_trial, log), todo, app.normaliser, chosen_mode(app))
        for done, (task, step) in enumerate(found, 1):
            if worker.is_cancelled:
                return
            batch[task] = step
            if time.monotonic() - last > 0.25 or done == len(todo):
                self.post_message(DivergencesFound(run, batch, done, len(todo)))
                batch, last = {}, time.monotonic()
        if not todo:
            self.post_message(DivergencesFound(run, {}, 0, 0))

    @on(DivergencesFound)
    def divergences_found(self, event: DivergencesFound) -> None:
        self.divergence.setdefault(event.run, {}).update(event.steps)
        if event.run != self.run:
            return
        self.forget_order("divergence")
        table = self.query_one(TaskTable)
        table.invalidate()
        if self.sort_key == "divergence":
            self.refresh_order(self.current_row)

    # -- cause? column ----------------------------------------------------------------------

    @work(thread=True, exclusive=False, exit_on_error=False, group="causes",
          description="Suggesting causes")
    def find_causes(self, run: str, known: frozenset[str]) -> None:
        """Suggest the source of flakiness of each flaky task of ``run`` with traces (``known``:
        kept in the triage file already) and hand them to :meth:`causes_found` in batches."""
        from flaketui.loading import read_trial
        from flaketui.model import PASS
        from flaketui.traces.causes import flaky_rows, suggest_causes
        from flaketui.traces.consistency import task_consistency

        log = self.flake_app.trial_log
        assert log is not None
        read = partial(read_trial, log)
        traced = {t: r for t, r in flaky_rows(self.run_outcomes(run)).items() if log.has_trace[r].any()}
        todo = {t: r for t, r in traced.items() if t not in known}
        # A kept cause spares its pairs, not its consistency: only its passing trials are read.
        jobs = [*todo.items(), *((t, r[log.outcome[r] == PASS]) for t, r in traced.items() if t in known)]
        worker = get_current_worker()
        batch: dict[str, str] = {}
        consistent: dict[str, float | None] = {}
        last = time.monotonic()
        for done, (task, rows) in enumerate(jobs, 1):
            if worker.is_cancelled:
                return
            if task in todo:
                found = suggest_causes(read, {task: rows}, self.flake_app.normaliser, fork=False)
                batch.update((t, s.cause) for t, s in found.items())
                consistent.update((t, s.consistency.trajectory) for t, s in found.items())
            else:
                passing = (read(int(r)) for r in rows)
                consistent[task] = task_consistency(passing, self.flake_app.normaliser).trajectory
            if time.monotonic() - last > 0.25 or done == len(jobs):
                self.post_message(CausesFound(run, batch, done, len(jobs), consistent))
                batch, consistent, last = {}, {}, time.monotonic()
        if not jobs:
            self.post_message(CausesFound(run, {}, 0, 0))

    @on(CausesFound)
    def causes_found(self, event: CausesFound) -> None:
        """Show a batch of suggestions and keep them in the triage file (``suggested``, apart
        from any label), so the next open does not read the traces again."""
        run, batch, done, total = event.run, event.causes, event.done, event.total
        self.causes.setdefault(run, {}).update(batch)
        self.consistency.setdefault(run, {}).update(event.consistency)
        if batch:
            self.flake_app.triage_store.suggest(run, batch)
        if done < total:
            self._causes_progress[run] = f"{done} of {total}"
        else:
            self._causes_progress.pop(run, None)
        if run != self.run:
            return
        self.forget_order("suspected_cause")
        self.forget_order("trajectory_consistency")
        self.query_one(TaskTable).invalidate()
        if self.sort_key in ("suspected_cause", "trajectory_consistency"):
            self.refresh_order(self.current_row)
        self.update_summary()

    def causes_line(self) -> str:
        """The summary's breakdown of the mixed tasks by suspected source, or the progress."""
        from flaketui.traces.causes import CauseSuggestion, breakdown_line

        assert self.run is not None and self.stats is not None
        progress = self._causes_progress.get(self.run)
        if progress is not None:
            return f"suspected sources: reading the flaky tasks' traces, {progress}"
        found = self.causes.get(self.run, {})
        assert self.view is not None
        flaky = self.view.flaky_tasks_in(found)
        return breakdown_line(CauseSuggestion(t, found[t], 0, 0) for t in flaky)

    # -- actions ----------------------------------------------------------------------------

    def watch_sort_key(self) -> None:
        self._resort()

    def watch_sort_reverse(self) -> None:
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
        """Change k by ``delta`` (1 up to the largest n) and recompute everything."""
        app = self.flake_app
        if self.stats is None or app.k is None:
            return
        top = max(1, int(self.stats.n.max(initial=1)))
        new = max(1, min(top, app.k + delta))
        if new == app.k:
            self.notify(f"k stays {new}: it must lie between 1 and the largest n ({top})",
                        severity="warning", timeout=3)
            return
        app.k = new
        app.k_is_default = False
        self.recompute()

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
        if log is None or row is None or self.outcomes is None:
            return
        trials = self.outcomes.task_rows(row)
        if not trials.size:
            return
        first = int(trials[0])
        path = log.sources[int(log.source[first])].path
        line = int(log.line[first])
        from flaketui.loading.location import is_url

        if is_url(path):
            self.notify("a remote log cannot be opened in an editor", title="Editor",
                        severity="warning", timeout=8, markup=False)
            return
        command = editor_command(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi",
                                 path, line)
        try:
            with self.app.suspend():
                subprocess.run(command, check=False)
        except (OSError, SuspendNotSupported) as exc:
            self.notify(visible(f"{command[0]}: {exc}"), title="Editor", severity="error",
                        timeout=10, markup=False)

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
        """(title, help, action) for the command palette."""
        yield "Open traces", "Passing vs failing traces of the highlighted task", "show_traces"
        yield "Toggle flaky only", "Show only flaky tasks", "toggle_flaky"
        yield "Filter by name", "Type part of a task name", "filter"
        yield "Increase k", "k + 1 for pass@k and pass^k", "change_k(1)"
        yield "Decrease k", "k − 1 for pass@k and pass^k", "change_k(-1)"
        yield "Pick a run", "Show another loaded run, picked from a list", "pick_run"
        yield "Plan the next run", "How many more trials, on which tasks, and why", "show_plan"
        yield "Compare two runs", "Flips, the primary test and the review of each flip", "compare"
        yield "Copy task id", "Copy the highlighted task's id to the clipboard", "copy_task"
        yield "Export the table", "Write the tasks shown to CSV or Markdown", "export"
        yield "Open in $EDITOR", "The highlighted task's first trial, at its line", "open_in_editor"
        yield "Show warnings and skipped lines", "The run's warnings and what loading met", "show_problems"
        if self.stats is not None:
            for col in self.query_one(TaskTable).columns:
                yield f"Sort by {col.label}", col.tooltip, f"sort_by('{col.key}')"
