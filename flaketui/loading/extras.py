"""What a plan needs from a task's trials beyond their outcomes: tags and temperature.

The loader keeps a trial's extra fields only on disk; :func:`read_task_extras`
reads one trial per task back to find them. No Textual, no Rich.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from flaketui.loading.loader import read_trial
from flaketui.loading.location import is_url
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


EXTRA_NAMES = ("tags", "tag", "risk", "temperature")
"""The extra fields a plan reads."""


class _Extras(msgspec.Struct):
    """The fields of a trial a plan reads; every other field is skipped unbuilt."""

    tags: Any = None
    tag: Any = None
    risk: Any = None
    temperature: Any = None


def read_task_extras(log: TrialLog, outcomes: RunOutcomes) -> dict[str, TaskExtras]:
    """Tags and temperature of each task of a run, from its first trial on disk.

    The loader keeps extra fields only on disk, so one trial per task is read
    back. A trial that can no longer be read counts as untagged.

    Trials in local plain JSONL files are read from one map of each file, only the four
    fields decoded (issue 15: one :func:`~flaketui.loading.read_trial` per task opened the
    file 200,000 times for a 200k-task plan, 12 s); the others, and any line this can't
    decode, through :func:`~flaketui.loading.read_trial`.
    """
    firsts: dict[str, int] = {}
    for i, task in enumerate(outcomes.tasks):
        if outcomes.bounds[i + 1] > outcomes.bounds[i]:
            firsts[task] = int(outcomes.rows[outcomes.bounds[i]])
    found = _read_mapped(log, list(firsts.values()))
    out: dict[str, TaskExtras] = {}
    for task, row in firsts.items():
        got = found.get(row)
        if got is None:
            try:
                extra = read_trial(log, row).extra
            except (OSError, ValueError, KeyError):
                out[task] = TaskExtras()
                continue
            got = {name: extra.get(name) for name in EXTRA_NAMES}
        out[task] = _extras(got)
    return out


_NONE = TaskExtras()


def _extras(extra: Mapping[str, Any]) -> TaskExtras:
    if extra.get("temperature") is None and not any(map(extra.get, ("tags", "tag", "risk"))):
        return _NONE  # none of them (most trials): one shared object
    temp = extra.get("temperature")
    value = None
    if isinstance(temp, (int, float)) and not isinstance(temp, bool) and math.isfinite(temp):
        value = float(temp)
    return TaskExtras(frozenset(tags_of(extra)), value)


def _read_mapped(log: TrialLog, rows: list[int]) -> dict[int, dict[str, Any]]:
    """The extra fields of ``rows`` that lie in local plain JSONL files, read from a map of
    each file (rows elsewhere, or that fail to decode, are left out)."""
    if not rows or log.fields.known_names().intersection(EXTRA_NAMES):  # a role field named like an extra
        return {}
    idx = np.asarray(rows, dtype=np.int64)
    decode = msgspec.json.Decoder(_Extras).decode
    out: dict[int, dict[str, Any]] = {}
    for s in np.unique(log.source[idx]).tolist():
        src = log.sources[s]
        if src.kind != "jsonl" or is_url(src.path):
            continue
        mine = idx[log.source[idx] == s]
        mine = mine[np.argsort(log.offset[mine], kind="stable")]
        try:
            with open(src.path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                size = len(mm)
                for row, offset, length in zip(mine.tolist(), log.offset[mine].tolist(),
                                               log.length[mine].tolist(), strict=True):
                    if offset + length > size:
                        continue
                    try:
                        rec = decode(mm[offset:offset + length])
                    except (msgspec.DecodeError, RecursionError):
                        continue
                    out[row] = {name: getattr(rec, name) for name in EXTRA_NAMES}
        except (OSError, ValueError):  # gone, or empty: read_trial decides
            continue
    return out
