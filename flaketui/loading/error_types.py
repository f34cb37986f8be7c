"""Errored trials counted by the kind of error, per run: what a harness's own summary gives as
its per-type error counts (Harbor's ``exception_stats``: ``AgentTimeoutError`` ×3,
``RuntimeError`` ×1), for every format.

The trial table keeps an errored trial's outcome, not its reason; the reasons are read back
from the files (:func:`~flaketui.loading.loader.read_trial`, without the trace), one per
errored trial, so the count costs one read per errored trial and nothing when none errored.
A reason's kind is the exception type it starts with (``AgentTimeoutError: …``, a dotted
``asyncio.TimeoutError`` by its last part) or names (``… raised KeyError``), else its first
words up to a colon or parenthesis with the numbers masked (``infrastructure_error``), a
failure mode in parentheses kept (``is_resolved is null (test_timeout)``), so reasons that
differ only in ids or counts fall together. No Textual, no Rich.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from flaketui.model import ERRORED, TrialLog

NO_REASON = "(no reason given)"
"""The kind of an errored trial whose log gives no reason (its outcome was missing)."""
KIND_CHARS = 60
"""A kind longer than this is cut."""
SHOWN = 6
"""Kinds named in the one-line summary; the rest are counted together."""
MAX_READS = 20_000
"""Errored trials read back at most: past this the kinds are not counted (one read each; a
report's time stays bounded whatever the log)."""

_LEADING_TYPE = re.compile(r"^\s*((?:[A-Za-z_]\w*\.)*([A-Z]\w*))\s*(?::|$)")
_NAMED_TYPE = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Timeout|Exit|Interrupt))\b")
_NUMBERS = re.compile(r"\b\d+(?:\.\d+)?\b")
_MODE = re.compile(r"\s\([a-z][a-z0-9_]*\)$")


def error_kind(reason: object) -> str:
    """The kind of one errored trial's reason (see the module docstring).

    Examples
    --------
    >>> error_kind("AgentTimeoutError: Agent execution timed out after 60.0 seconds")
    'AgentTimeoutError'
    >>> error_kind("asyncio.TimeoutError")
    'TimeoutError'
    >>> error_kind("infrastructure_error: sandbox 12 lost")
    'infrastructure_error'
    >>> error_kind("is_resolved is null (test_timeout)")
    'is_resolved is null (test_timeout)'
    >>> error_kind("verifier_result is null (the trial was not verified)")
    'verifier_result is null'
    >>> error_kind("the container raised OSError twice")
    'OSError'
    >>> error_kind(None)
    '(no reason given)'
    """
    if reason is None or reason is False or reason == "":
        return NO_REASON
    text = reason if isinstance(reason, str) else str(reason)
    lines = text.strip().splitlines()
    first = lines[0].strip() if lines else ""
    if not first:
        return NO_REASON
    m = _LEADING_TYPE.match(first)
    if m:
        return m.group(2)[:KIND_CHARS]
    m = _NAMED_TYPE.search(first)
    if m:
        return m.group(1)[:KIND_CHARS]
    head = first.split(": ", 1)[0].strip()
    mode = _MODE.search(head)  # a harness's failure mode in parentheses is part of the kind
    head = head if mode else head.split(" (", 1)[0].strip()
    head = _NUMBERS.sub("<n>", head)
    return head[: KIND_CHARS - 1] + "…" if len(head) > KIND_CHARS else head


def errored_by_type(log: TrialLog, runs: Sequence[str] | None = None,
                    limit: int | None = MAX_READS) -> dict[str, dict[str, int]] | None:
    """Each run's errored trials counted by :func:`error_kind`, most first (ties by name);
    runs without an errored trial are absent. ``runs`` limits which runs are counted; None when
    they hold more than ``limit`` errored trials (not counted)."""
    from flaketui.loading.loader import read_trial

    rows = np.flatnonzero(log.outcome == ERRORED)
    if runs is not None:
        wanted = [log.runs.index(r) for r in runs if r in log.runs]
        rows = rows[np.isin(log.run[rows], wanted)]
    if limit is not None and len(rows) > limit:
        return None
    counts: dict[int, Counter[str]] = {}
    for row in rows.tolist():
        r = int(log.run[row])
        try:
            reason = read_trial(log, row, max_steps=0).error
        except (OSError, ValueError):
            reason = None
        counts.setdefault(r, Counter())[error_kind(reason)] += 1
    return {log.runs[r]: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
            for r, c in sorted(counts.items())}


def errored_by_type_line(counts: dict[str, int] | None) -> str | None:
    """``errored by type: AgentTimeoutError 3, RuntimeError 1`` for the terminal and Markdown
    summary (the caller passes it through :func:`flaketui.sanitize.visible`: the kinds come
    from the logs), a line saying they were not counted (None: over :data:`MAX_READS`), or
    None when nothing errored."""
    text = errored_by_type_text(counts)
    return None if text is None else f"errored by type: {text}"


def errored_by_type_text(counts: dict[str, int] | None) -> str | None:
    """``AgentTimeoutError 3, RuntimeError 1`` (:func:`errored_by_type_line` without its label),
    ``not counted (…)``, or None when nothing errored."""
    if counts is None:
        return f"not counted (over {MAX_READS:,} errored trials)"
    if not counts:
        return None
    items = list(counts.items())
    shown = ", ".join(f"{kind} {n}" for kind, n in items[:SHOWN])
    rest = sum(n for _, n in items[SHOWN:])
    more = f", {len(items) - SHOWN} other kinds {rest}" if len(items) > SHOWN else ""
    return f"{shown}{more}"
