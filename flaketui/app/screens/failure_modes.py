"""What goes wrong across the suite: opened with ``M`` from the task table.

The flaky tasks' failing and errored trials of the run shown, grouped by signature
(exception type, masked error message, termination reason, divergent action: see
:mod:`flaketui.traces.failure_modes`), most trials first, with the tasks each mode spans
and an example; above, the mixed tasks by suspected source and any outage window. The
same figures as ``flaketui report --causes``'s "failure modes" section, for one run.

The traces are read in one thread worker (:func:`flaketui.traces.causes.suggest_causes`,
with its progress shown); this screen only renders. ``enter`` goes back to the task table
on the mode's example task.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Header, Static
from textual.worker import get_current_worker

from flaketui.app.screens.base import FlakeScreen, back_key
from flaketui.app.widgets.footer import KeyFooter
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.model import Trial
    from flaketui.traces.failure_modes import FailureMode
    from flaketui.traces.normalise import Normaliser

NO_MIXED = "no mixed task (passed and failed) with traces in this run: nothing to group"
"""What the screen says when the run has no mixed task whose trials carry traces."""


@dataclass
class ModesProgress(Message):
    """Tasks read so far, of all."""

    done: int
    total: int


@dataclass
class ModesFound(Message):
    """The worker grouped the failures: the modes, the breakdown by source, the outage windows."""

    modes: list[FailureMode]
    sources: str
    bursts: list[str]


class FailureModesScreen(FlakeScreen[str | None]):
    """The failure modes of one run's flaky tasks.

    Args:
        run: The run shown.
        rows_by_task: Its flaky tasks with traces → their trial rows.
        read: Reads one trial with its trace from its row.
        normaliser: The keys ignored when traces are compared.
    """

    DEFAULT_CSS = """
    FailureModesScreen #modes-head { height: auto; padding: 0 1; background: $boost; }
    FailureModesScreen #modes-table { height: 1fr; }
    """

    BINDINGS = [
        back_key("modes-back", "the task table"),
        Binding("enter", "example", "Example", id="modes-example",
                tooltip="Back to the task table on this mode's example task"),
    ]

    STATUS = "#modes-head"
    AUTO_FOCUS = "#modes-table"

    def __init__(self, run: str, rows_by_task: Mapping[str, np.ndarray], read: Callable[[int], Trial],
                 normaliser: Normaliser | None) -> None:
        super().__init__()
        self.run_name = run
        self.rows_by_task = dict(rows_by_task)
        self.read_trial = read
        self.normaliser = normaliser
        self.modes: list[FailureMode] = []
        """The modes found (empty until found)."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"reading the traces of {len(self.rows_by_task)} mixed tasks…", style="dim"),
                     id="modes-head")
        yield DataTable(id="modes-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = f"failure modes · {visible(self.run_name)}"
        table = self.query_one(DataTable)
        for label, key in (("trials", "trials"), ("tasks", "tasks"), ("kind", "kind"),
                           ("signature", "signature"), ("example", "example")):
            table.add_column(label, key=key)
        if not self.rows_by_task:
            self.query_one("#modes-head", Static).update(Text(NO_MIXED, style="bold"))
            table.display = False
            return
        self.group()

    @work(thread=True, exclusive=True, exit_on_error=False, group="failure-modes",
          description="Grouping the failures")
    def group(self) -> None:
        """Suggest each flaky task's source (which signs each failing trial), then group the signatures."""
        from flaketui.traces.causes import breakdown_line, suggest_causes, suite_bursts, suite_failure_modes

        worker = get_current_worker()
        last = [0.0]

        def progress(done: int, total: int) -> None:
            if worker.is_cancelled:
                raise _Cancelled
            now = time.monotonic()
            if now - last[0] > 0.2:
                last[0] = now
                self.post_message(ModesProgress(done, total))

        try:
            found = suggest_causes(self.read_trial, self.rows_by_task, self.normaliser, fork=False,
                                   progress=progress)
        except _Cancelled:
            return
        modes = suite_failure_modes(found.values())
        bursts = [b.text() for b in suite_bursts(found.values())]
        self.post_message(ModesFound(modes, breakdown_line(found.values()), bursts))

    @on(ModesProgress)
    def progressed(self, event: ModesProgress) -> None:
        self.query_one("#modes-head", Static).update(
            Text(f"reading the mixed tasks' traces: {event.done} of {event.total}", style="dim"))

    @on(ModesFound)
    def found(self, event: ModesFound) -> None:
        self.modes = event.modes
        failing = sum(m.trials for m in event.modes)
        head = Text()
        tasks, modes = len(self.rows_by_task), len(event.modes)
        head.append(f"{_count(failing, 'failing or errored trial')} of {_count(tasks, 'mixed task')} "
                    f"in {_count(modes, 'failure mode')}", style="bold")
        head.append("\n" + visible(event.sources))
        for burst in event.bursts:
            head.append("\n" + visible(burst), style="yellow")
        self.query_one("#modes-head", Static).update(head)
        table = self.query_one(DataTable)
        table.clear()
        for i, m in enumerate(event.modes):
            table.add_row(Text(str(m.trials), justify="right"), Text(str(m.tasks), justify="right"),
                          Text(m.kind), Text(visible(m.signature)),
                          Text(visible(f"{m.example[0]} trial {m.example[1]}"), style="dim"), key=str(i))

    @on(DataTable.RowSelected)
    def row_selected(self) -> None:
        """``enter`` on the table (which takes the key before the screen's binding)."""
        self.action_example()

    def action_example(self) -> None:
        """Back to the task table on the highlighted mode's example task."""
        table = self.query_one(DataTable)
        if not self.modes or not 0 <= table.cursor_row < len(self.modes):
            return
        self.dismiss(self.modes[table.cursor_row].example[0])

    def action_back(self) -> None:
        """Return to the task table."""
        self.dismiss(None)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class _Cancelled(Exception):
    """The screen was left while the traces were read."""
