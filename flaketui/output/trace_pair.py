"""Two trials' traces compared for a page: what the HTML pages embed for each task they show
(``report``'s flaky tasks, ``compare``'s changed tasks, ``diff``'s one pair).

Apart from :mod:`flaketui.output.html` so that what picks the pairs (the headless session,
:mod:`flaketui.session.pairs`) names it without importing the page writer (and, through it,
the terminal tables' Rich).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flaketui.traces import TraceDiff

TRACE_CONTEXT = 15
"""Aligned trace rows shown on each side of the first divergence."""
LINE_WIDTH = 240
"""Longest trace line embedded (longer ones are cut with …)."""


@dataclass(frozen=True)
class TracePair:
    """Two trials of a task, their traces compared (:func:`flaketui.traces.diff_traces`)."""

    task: str
    label_a: str
    """``run trial 3 (pass)``."""
    label_b: str
    diff: TraceDiff
