"""The session's jobs run in the app: a thread worker posts each batch as a message, and the screen
that started it puts the batch into the run's state on the thread that draws, then redraws.

Batches are coalesced to one each quarter second (:func:`flaketui.session.jobs.every`) so that a
fast job does not redraw the table per task.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from textual import work
from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import Worker, get_current_worker

from flaketui.app.messages import StatesRead
from flaketui.app.widgets.task_table import TaskTable
from flaketui.session import jobs
from flaketui.session.jobs import every
from flaketui.session.state import CAUSES_FAILED, RunState

if TYPE_CHECKING:
    from textual.widget import Widget

    from flaketui.app.app import AppOptions, FlakeApp
    from flaketui.app.run_view import RunView

BATCH_SECONDS = 0.25
"""Seconds between two batches a worker posts."""


@dataclass
class BatchFound(Message):
    """A batch of a job over ``state`` (:class:`~flaketui.session.jobs.DivergenceBatch` or
    :class:`~flaketui.session.jobs.CausesBatch`), not yet put into it."""

    state: RunState
    batch: Any


def post_batches(node: MessagePump, state: RunState, job: Iterable[Any]) -> None:
    """Run ``job`` (in a thread worker) and post its batches to ``node``; stop when the worker is cancelled."""
    worker = get_current_worker()
    for batch in every(job, BATCH_SECONDS):
        if worker.is_cancelled:
            return
        node.post_message(BatchFound(state, batch))


def wants_history(options: AppOptions) -> bool:
    """The app was pointed at a history (``--history``, ``$FLAKETUI_HISTORY`` or ``--record``): the
    task table shows each task's state there. Otherwise none is read (its imports cost half a second)."""
    return bool(options.history or os.environ.get("FLAKETUI_HISTORY") or options.record)


class RunJobs:
    """The task table's part that runs the session's jobs over the shown run in thread workers
    and redraws what each batch fills in: the ``div``, ``cause?``, ``consist.`` and ``state`` columns.

    Mixed into :class:`~flaketui.app.screens.tasks.TasksScreen` (its :attr:`view`, table, sort
    and summary): a batch is put into its run's state on the thread that draws
    (:meth:`on_batch_found`), new suggestions are kept in the triage file, and the columns they
    change are sorted again.
    """

    view: RunView | None
    sort_key: str
    flake_app: FlakeApp

    def start_jobs(self, state: RunState) -> None:
        """Start the run's jobs unless they were: they run once the table is drawn (the readers of
        traces would slow its first paint). The causes kept in the triage file show at once, and
        are not read again."""
        screen = cast("Widget", self)
        new = not state.causes_started
        if new:
            from flaketui.traces.causes import CAUSES

            state.causes_started = True
            kept = self.flake_app.triage_store.suggested(state.name)  # a file's text: only known names
            state.causes = {t: c for t, c in kept.items() if c in CAUSES}
            state.causes_progress = "…"
        if not state.divergences_started:
            state.divergences_started = True
            screen.call_after_refresh(self.find_divergences, state)
        if new:
            screen.call_after_refresh(self.find_causes, state, frozenset(state.causes))

    @work(thread=True, exclusive=False, exit_on_error=False, group="divergence",
          description="Finding first divergences")
    def find_divergences(self, state: RunState) -> None:
        """Find the first divergence of each flaky task of the run (:func:`flaketui.session.jobs.divergences`)."""
        state.divergence_mode = self.flake_app.divergence_mode
        post_batches(cast("Widget", self), state, jobs.divergences(state, state.divergence_mode))

    @work(thread=True, exclusive=False, exit_on_error=False, group="causes", description="Suggesting causes")
    def find_causes(self, state: RunState, known: frozenset[str]) -> None:
        """Suggest each flaky task's source of flakiness and find its consistency (``known``: kept in the
        triage file already; :func:`flaketui.session.jobs.causes`)."""
        post_batches(cast("Widget", self), state, jobs.causes(state, known))

    def on_batch_found(self, event: BatchFound) -> None:
        """Put a batch into its run's state; keep new suggestions in the triage file (``suggested``,
        apart from any label) so that the next open does not read the traces again; redraw."""
        batch, state = event.batch, event.state
        batch.apply(state)
        causes = isinstance(batch, jobs.CausesBatch)
        if causes and batch.causes:
            self.flake_app.triage_store.suggest(state.name, batch.causes)
        if self.view is None or state is not self.view.state:
            return
        keys = ("suspected_cause", "trajectory_consistency") if causes else ("divergence",)
        for key in keys:
            self.view.forget_order(key)
        cast("Widget", self).query_one(TaskTable).invalidate()
        if self.sort_key in keys:
            self.refresh_order(self.current_row)  # type: ignore[attr-defined]
        if causes:
            self.update_summary()  # type: ignore[attr-defined]

    def show_worker_error(self, worker: Worker[object]) -> None:
        """A failed worker is told (by the screen); when it is the causes worker, the shown run's
        cells stop waiting for it and the summary says it failed."""
        super().show_worker_error(worker)  # type: ignore[misc]
        if worker.group == "causes" and self.view is not None:
            self.view.state.causes_progress = CAUSES_FAILED
            self.update_summary()  # type: ignore[attr-defined]

    def mode_changed(self, mode: str | None) -> None:
        """The divergence mode changed (``v``): every run's steps are the other mode's; find the shown run's again."""
        screen = cast("Widget", self)
        screen.workers.cancel_group(screen, "divergence")
        for state in self.flake_app.session.runs():
            state.forget_divergences()
        if self.view is not None:
            self.view.forget_order("divergence")
            self.view.state.divergences_started = True
            self.find_divergences(self.view.state)

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-states",
          description="Reading the tasks' states from the history")
    def read_states(self) -> None:
        """Read each task's state from the history, in a thread (:func:`flaketui.session.jobs.history_states`)."""
        options = self.flake_app.options
        for batch in jobs.history_states(options.history, options.flaky_cap):
            cast("Widget", self).post_message(StatesRead(batch.states, batch.error))

    def on_states_read(self, event: StatesRead) -> None:
        """Show the ``state`` column (a history with no run yet shows none), or why it can't."""
        if event.error is not None:  # told once; H says it again where the history is asked for
            cast("Widget", self).notify(event.error, title="History", severity="warning", timeout=10, markup=False)
        jobs.StatesBatch(event.states, event.error).apply(self.flake_app.session)
        if event.states is not None and self.view is not None and self.view.stats is not None:
            self.set_table_columns(keep_unchanged=True)  # type: ignore[attr-defined]
