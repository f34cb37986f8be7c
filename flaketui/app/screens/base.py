"""The base of flaketui's screens: typed access to the app, and one handler for failed workers.

A new screen subclasses :class:`FlakeScreen`, reads the shared state through
:attr:`FlakeScreen.flake_app` (``trial_log``, ``k``, ``options``, ``normaliser``,
``triage_store``) and names in :attr:`FlakeScreen.STATUS` the widget that says
what it is waiting for ("reading the task's trials…"): when one of its thread
workers raises, the error is shown there and in a notification.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import on
from textual.screen import Screen, ScreenResultType
from textual.widgets import Static
from textual.worker import Worker, WorkerState

if TYPE_CHECKING:
    from flaketui.app.app import FlakeApp


class FlakeScreen(Screen[ScreenResultType]):
    """A screen of the flaketui app."""

    STATUS: ClassVar[str | None] = None
    """Selector of the :class:`~textual.widgets.Static` that shows the screen's progress
    ("reading…"); a failed worker's error replaces its text. None: a notification only."""

    @property
    def flake_app(self) -> FlakeApp:
        """The app, typed: its options, loaded trials, k, normaliser and triage notes."""
        return cast("FlakeApp", self.app)

    @on(Worker.StateChanged)
    def worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker of this screen raised: show its error (:meth:`show_worker_error`)."""
        if event.state == WorkerState.ERROR:
            self.show_worker_error(event.worker)

    def show_worker_error(self, worker: Worker[object]) -> None:
        """Tell the user what failed: a notification, and the error in place of the
        :attr:`STATUS` text so that no "reading…" stays on screen. Screens that show
        progress elsewhere extend this."""
        error = worker.error
        message = f"{type(error).__name__}: {error}"
        self.notify(message, title=worker.description, severity="error", timeout=30, markup=False)
        if self.STATUS is not None:
            for status in self.query(self.STATUS).results(Static):
                status.update(Text(f"{worker.description} failed: {message}", style="bold red"))
                status.display = True
