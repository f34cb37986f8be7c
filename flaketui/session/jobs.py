"""The slow work a session does for its runs, run to the end by the CLI and in workers by the app."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flaketui.model import TrialLog

Progress = Callable[[int, int], None]
"""Called with (done, total) as a job goes."""


def find_causes(log: TrialLog, runs: Sequence[str], workers: int = 1, grades_field: str | None = None,
                rescoring: Mapping[str, Any] | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Each run's flaky tasks' suggested sources of flakiness (reads only their traces);
    ``grades_field``: where each trial's grades are; ``rescoring``: run → its
    :class:`~flaketui.traces.causes.Rescoring` (``--rescored``); ``progress`` counts the tasks read."""
    from flaketui.loading import read_trial
    from flaketui.traces.causes import flaky_rows, suggest_causes

    todo = {r: flaky_rows(log.run_outcomes(r)) for r in runs}
    total = sum(len(rows) for rows in todo.values())
    done = 0
    out: dict[str, Any] = {}
    for r, rows in todo.items():
        out[r] = suggest_causes(functools.partial(read_trial, log), rows, workers=workers,
                                progress=(lambda n, _total, before=done: progress(before + n, total))
                                if progress is not None else None,
                                grades_field=grades_field,
                                rescored=rescoring[r].grades if rescoring and r in rescoring else None)
        done += len(rows)
    return out
