"""What a plan needs from a task's trials beyond their outcomes: tags and temperature.

The loader keeps a trial's extra fields only on disk; :func:`read_task_extras`
reads one trial per task back to find them. No Textual, no Rich.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flaketui.loading.loader import read_trial
from flaketui.model import RunOutcomes, TrialLog


def tags_of(extra: Mapping[str, Any]) -> set[str]:
    """Lower-case tags of a trial's extra fields: ``tags`` / ``tag`` / ``risk`` (string or list).

    Examples
    --------
    >>> sorted(tags_of({"tags": ["Write", "db"], "risk": "high-risk"}))
    ['db', 'high-risk', 'write']
    """
    out: set[str] = set()
    for name in ("tags", "tag", "risk"):
        value = extra.get(name)
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, str) and v.strip():
                out.add(v.strip().lower())
    return out


@dataclass(frozen=True)
class TaskExtras:
    """What a plan reads from one trial of each task: its tags and temperature."""

    tags: frozenset[str] = frozenset()
    temperature: float | None = None


def read_task_extras(log: TrialLog, outcomes: RunOutcomes) -> dict[str, TaskExtras]:
    """Tags and temperature of each task of a run, from its first trial on disk.

    The loader keeps extra fields only on disk, so one trial per task is read
    back (:func:`flaketui.loading.read_trial`). A trial that can no longer be
    read counts as untagged.
    """
    out: dict[str, TaskExtras] = {}
    for i, task in enumerate(outcomes.tasks):
        rows = outcomes.task_rows(i)
        if rows.size == 0:
            continue
        try:
            extra = read_trial(log, int(rows[0])).extra
        except (OSError, ValueError, KeyError):
            out[task] = TaskExtras()
            continue
        temp = extra.get("temperature")
        value = None
        if isinstance(temp, (int, float)) and not isinstance(temp, bool) and math.isfinite(temp):
            value = float(temp)
        out[task] = TaskExtras(frozenset(tags_of(extra)), value)
    return out
