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
from textual.binding import Binding
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


def back_key(id: str, to: str, action: str = "back", keys: str = "escape") -> Binding:
    """The key that leaves a screen for ``to`` (said in its tooltip): written once, so every
    screen's way back reads and shows alike."""
    return Binding(keys, action, "Back", id=id, tooltip=f"Back to {to}")


COMPACT_BELOW = 32
"""Terminal rows under which a screen's header shows its compact form (unless ``h`` chose)."""
COMPACT_BELOW_NARROW = 40
"""The same under :data:`NARROW` columns, where the full header wraps to more rows."""
NARROW = 110
"""Columns under which the full header wraps (see :data:`COMPACT_BELOW_NARROW`)."""


def small_terminal(width: int, height: int) -> bool:
    """True when a full header would leave the main pane fewer than half the rows."""
    return height < (COMPACT_BELOW_NARROW if width < NARROW else COMPACT_BELOW)


HEAD_KEYS = [
    Binding("h", "toggle_head", "Header", id="toggle-head",
            tooltip="Collapse the header to its compact form, or show it in full"),
    Binding("Z", "toggle_maximised", "Maximise", id="toggle-maximised",
            tooltip="Maximise the main pane (shift+z): nothing above it but the keys; again to restore"),
]
"""The keys of a screen with a :class:`CollapsibleHead` (the actions are its own)."""


class CollapsibleHead:
    """A screen whose header collapses (``h``) and whose main pane maximises (``Z``), as k9s and
    lazygit do; at small sizes (:func:`small_terminal`) the header starts compact.

    Mixed into a :class:`FlakeScreen`: it sets the screen classes ``-compact-head`` and
    ``-maximised`` (the stylesheet does the rest) and calls :meth:`head_changed` so that the
    screen can draw its header's compact form.
    """

    head_choice: bool | None = None
    """``h``'s choice: True compact, False full; None: by the terminal's size."""
    maximised: bool = False
    """The main pane fills the screen (``Z``)."""

    @property
    def compact_head(self) -> bool:
        """The header shows its compact form."""
        if self.head_choice is not None:
            return self.head_choice
        try:
            size = self.app.size  # type: ignore[attr-defined]
        except Exception:  # no app yet (a unit test building the screen alone)
            return False
        return small_terminal(size.width, size.height)

    def apply_head(self) -> None:
        """Set the classes from :attr:`compact_head` and :attr:`maximised`; redraw the header."""
        compact = self.compact_head
        screen = cast("Screen[object]", self)
        changed = (screen.has_class("-compact-head") != compact
                   or screen.has_class("-maximised") != self.maximised)
        screen.set_class(compact, "-compact-head")
        screen.set_class(self.maximised, "-maximised")
        if changed:
            self.head_changed()

    def head_changed(self) -> None:
        """The header's form changed: screens whose compact header is other text redraw it."""

    def on_resize(self) -> None:
        self.apply_head()

    def action_toggle_head(self) -> None:
        """Collapse the header to its compact form, or show it in full."""
        self.head_choice = not self.compact_head
        self.maximised = False
        self.apply_head()

    def action_toggle_maximised(self) -> None:
        """Maximise the main pane, or restore the header."""
        self.maximised = not self.maximised
        self.apply_head()
