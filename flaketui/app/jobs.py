"""The session's jobs run in the app: a thread worker posts each batch as a message, and the screen
that started it puts the batch into the run's state on the thread that draws, then redraws.

Batches are coalesced to one each quarter second (:func:`flaketui.session.jobs.every`) so that a
fast job does not redraw the table per task.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import get_current_worker

from flaketui.session.jobs import every
from flaketui.session.state import RunState

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
