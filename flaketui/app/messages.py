"""App-wide messages, posted from worker threads (``post_message`` is thread-safe)."""

from __future__ import annotations

from dataclasses import dataclass

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
