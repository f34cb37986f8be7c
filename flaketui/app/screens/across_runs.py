"""One task across every loaded run: opened with ``A`` from the task table, the matrix or the comparison pane.

One row per loaded run (agent): its trials of the task, passes, errored, p̂, the trial
shown for it and that trial's first divergence from one reference trial, the reference's
run marked. The reference starts as the first passing trial of the first run that has one;
``r`` makes the highlighted run's trial the reference, ``enter`` opens the reference's trace
beside that run's trial (the comparison's trace screen, run A the reference's run). The
model is :func:`flaketui.traces.task_view.task_across_runs`, built in one thread worker;
this screen only renders.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Header, Static

from flaketui.app.messages import Open
from flaketui.app.screens.base import FlakeScreen, back_key
from flaketui.app.widgets.footer import KeyFooter
from flaketui.model import Trial
from flaketui.output import formatting as fmt
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.app.app import FlakeApp
    from flaketui.traces.task_view import RunTrials, TaskAcrossRuns

REFERENCE_MARK = "◆"
"""Marks the reference's run."""


def divergence_text(run: RunTrials, has_reference: bool) -> Text:
    """``step 4`` (the step in the reference's trace), ``none`` (the trials do not part),
    or ``—`` (no trial to set against the reference)."""
    if not has_reference or run.representative is None:
        return Text(fmt.DASH, style="dim")
    if run.divergence is None:
        return Text("none", style="green")
    b = f" ({run.divergence_b} here)" if run.divergence_b not in (None, run.divergence) else ""
    return Text(f"step {run.divergence}{b}", style="bold yellow")


def trial_text(trial: Trial | None) -> Text:
    """``3 fail``: a trial's number and outcome, coloured by it."""
    if trial is None:
        return Text(fmt.DASH, style="dim")
    return Text(f"{trial.trial} {'pass' if trial.passed else 'fail'}", style="green" if trial.passed else "red")


@dataclass
class AcrossRunsReady(Message):
    """The task's trials in every run are read and set against the reference (from a worker)."""

    model: TaskAcrossRuns


class AcrossRunsScreen(FlakeScreen[None]):
    """One task's trials in every loaded run, each run's first divergence from a reference trial.

    Args:
        task: The task shown.
    """

    DEFAULT_CSS = """
    AcrossRunsScreen #across-head { height: auto; padding: 0 1; background: $boost; }
    AcrossRunsScreen #across-table { height: 1fr; }
    """

    BINDINGS = [
        back_key("across-back", "the screen this was opened from"),
        Binding("enter", "open_pair", "Traces", id="across-traces", priority=True,
                tooltip="The reference's trace beside the highlighted run's trial"),
        Binding("r", "make_reference", "Reference", id="across-reference",
                tooltip="Make the highlighted run's trial the reference"),
    ]

    STATUS = "#across-head"
    AUTO_FOCUS = "#across-table"

    def __init__(self, task: str) -> None:
        super().__init__()
        self.task_name = task
        self.reference: tuple[str, int] | None = None
        """``(run, trial number)`` asked for with ``r`` (None: the default reference)."""
        self.model: TaskAcrossRuns | None = None
        """The model shown (None while it is built)."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text("reading the task's trials in every run…", style="dim"), id="across-head")
        yield DataTable(id="across-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = f"across runs · {visible(self.task_name)}"
        table = self.query_one(DataTable)
        for label, key in (("", "ref"), ("run", "run"), ("trials", "trials"), ("pass", "passes"),
                           ("err", "errored"), ("p̂", "p_hat"), ("trial", "trial"),
                           ("first divergence", "divergence")):
            table.add_column(label, key=key)
        self.compute()

    @work(thread=True, exclusive=True, exit_on_error=False, group="across-runs",
          description="Reading the task in every run")
    def compute(self) -> None:
        """Read the task's trials in every run and set each run's against the reference, in a thread."""
        from flaketui.loading import read_trial
        from flaketui.traces.task_view import task_across_runs

        log = self.flake_app.trial_log
        assert log is not None
        self.post_message(AcrossRunsReady(task_across_runs(
            log, self.task_name, partial(read_trial, log), self.reference, self.flake_app.normaliser,
            self.flake_app.divergence_mode)))

    @on(AcrossRunsReady)
    def model_ready(self, event: AcrossRunsReady) -> None:
        m = self.model = event.model
        ref = m.reference_trial
        head = Text()
        head.append(visible(m.task), style="bold")
        head.append(f"  in {sum(1 for r in m.runs if r.trials)} of {len(m.runs)} runs · divergence mode {m.mode}\n")
        if ref is None:
            head.append("no run has a trial of this task with a trace: nothing to set against", style="yellow")
        else:
            head.append("reference: ", style="dim")
            head.append(f"{REFERENCE_MARK} ", style="bold cyan")
            head.append(visible(ref.run), style="bold")
            head.append(" trial ")
            head.append_text(trial_text(ref))
            head.append("   enter: it beside the run's trial · r: the run's trial as reference", style="dim")
        self.query_one("#across-head", Static).update(head)
        table = self.query_one(DataTable)
        keep = table.cursor_row
        table.clear()
        for j, run in enumerate(m.runs):
            table.add_row(
                Text(REFERENCE_MARK if run.has_reference else "", style="bold cyan"),
                Text(visible(run.run), style="bold" if run.has_reference else ""),
                Text(str(len(run.trials)) if run.trials else "not in run", justify="right",
                     style="" if run.trials else "dim"),
                Text(str(run.passes), justify="right"), Text(str(run.errored), justify="right"),
                Text(fmt.rate(run.p_hat), justify="right"), trial_text(run.representative_trial),
                divergence_text(run, ref is not None), key=str(j))
        if m.runs:
            table.move_cursor(row=min(max(keep, 0), len(m.runs) - 1))

    @property
    def current(self) -> RunTrials | None:
        """The highlighted run's row."""
        table = self.query_one(DataTable)
        if self.model is None or not 0 <= table.cursor_row < len(self.model.runs):
            return None
        return self.model.runs[table.cursor_row]

    @on(DataTable.RowSelected)
    def row_selected(self) -> None:
        """``enter`` on the table (which takes the key before the screen's binding)."""
        self.action_open_pair()

    def action_open_pair(self) -> None:
        """The reference's trace beside the highlighted run's trial."""
        m, run = self.model, self.current
        if m is None or run is None:
            return
        ref, trial = m.reference_trial, run.representative_trial
        if ref is None or trial is None:
            self.notify(f"{visible(run.run)} has no trial of this task with a trace to compare", timeout=4,
                        markup=False)
            return
        assert m.reference is not None
        self.post_message(Open("across-traces", model=m, ref_run=m.runs[m.reference[0]], run=run))

    def action_make_reference(self) -> None:
        """Make the highlighted run's trial the reference, and set every run against it again."""
        run = self.current
        if run is None:
            return
        trial = run.representative_trial
        if trial is None:
            self.notify(f"{visible(run.run)} has no trial of this task with a trace", timeout=4, markup=False)
            return
        self.reference = (run.run, trial.trial)
        self.query_one("#across-head", Static).update(Text("setting every run against the new reference…",
                                                           style="dim"))
        self.compute()

    def action_back(self) -> None:
        """Back to the screen this was opened from."""
        self.dismiss()


def open_across_runs(app: FlakeApp, task: str | None) -> AcrossRunsScreen | None:
    """``Open("across-runs", task=…)``: ``task`` across every loaded run (None: two or more
    runs must be loaded, and a task highlighted; it says so)."""
    log = app.trial_log
    if log is None:
        app.notify("the logs are still loading", timeout=3)
        return None
    if len(log.runs) < 2:
        app.notify("only one run is loaded: a task across runs needs two or more", severity="warning",
                   timeout=5)
        return None
    if task is None:
        return None
    return AcrossRunsScreen(task)
