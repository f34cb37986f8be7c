"""App-wide messages: those posted from worker threads (``post_message`` is thread-safe), and
:class:`Open`, by which a screen opens another by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from flaketui.model import TrialLog


@dataclass
class LoadProgress(Message):
    """Bytes read so far while loading the logs."""

    done: int
    total: int


@dataclass
class RunsLoaded(Message):
    """The logs are loaded: every run's trials, and the lines that were skipped."""

    log: TrialLog


@dataclass
class Recorded(Message):
    """``--record`` recorded the loaded runs in the history (``ok``), or could not: what it said."""

    said: str
    ok: bool


@dataclass
class StatesRead(Message):
    """The tasks' lifecycle states read from the history (None: none recorded, or ``error``)."""

    states: dict[str, str] | None
    error: str | None = None
    """Why the history could not be read (shown once)."""


@dataclass
class LogsGrew(Message):
    """With ``--watch``: the logs changed; this is every trial read so far."""

    log: TrialLog


@dataclass
class LoadFailed(Message):
    """Loading stopped with an input error (one line, shown to the user)."""

    error: str


@dataclass
class DivergencesFound(Message):
    """First divergence steps of some tasks of a run (task name -> 1-based step or None)."""

    run: str
    steps: dict[str, int | None]
    done: int
    total: int


@dataclass
class CausesFound(Message):
    """Suggested sources of flakiness of some tasks of a run (task name -> cause), and those tasks'
    trajectory consistency (task name -> number, None: fewer than two passing trials with actions)."""

    run: str
    causes: dict[str, str]
    done: int
    total: int
    consistency: dict[str, float | None] = field(default_factory=dict)


class Open(Message):
    """Open the screen registered as ``name`` in :data:`flaketui.app.navigation.SCREENS`, made
    from ``arguments``; ``callback`` (if any) gets what the screen is dismissed with (a picked
    run, an export's file name, the task a failure mode points at).

    Posted by a screen (it bubbles to the app, whose one handler opens it): a screen opens
    another by name and never imports it, so each screen changes without the others.
    """

    def __init__(self, name: str, callback: Callable[[Any], object] | None = None, /,
                 **arguments: Any) -> None:
        super().__init__()
        self.name = name
        """The screen's name in :data:`~flaketui.app.navigation.SCREENS`."""
        self.arguments = arguments
        """What the screen is made from (its factory's keyword arguments)."""
        self.callback = callback
        """Called with the screen's result when it is dismissed (None: nothing waits for one)."""

    def __repr__(self) -> str:
        return f"Open({self.name!r}, {sorted(self.arguments)})"
