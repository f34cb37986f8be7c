"""The headless comparison of two trials' traces, for ``flaketui diff`` and bug reports.

:func:`diff_traces` aligns two traces in a divergence mode and returns a
:class:`TraceDiff`: the first divergence (1-based steps in each trace, user
turns included, as on screen), every field that differs in every differing
aligned step, and the steps around the divergence as one line each. Pure
Python: no Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flaketui.traces.align import EQUAL, Alignment, align_traces, step_changes
from flaketui.traces.normalise import Normaliser, json_text, one_line
from flaketui.traces.steps import check_mode, default_mode, harness_step_ids, step_line
from flaketui.traces.structdiff import MISSING, FieldChange

CONTEXT = 2
"""Rows shown on each side of the divergent row."""


@dataclass(frozen=True)
class StepChange:
    """A field that differs between aligned steps ``step_a`` and ``step_b`` (1-based).

    A step only one trace has is one change with an empty ``path``, the whole
    (normalised) step on its side, :data:`~flaketui.traces.structdiff.MISSING` and
    a None step number on the other. ``counts`` is False when the mode does not
    count this row's differences (a reworded user turn in ``actions`` mode).
    """

    step_a: int | None
    step_b: int | None
    path: str
    a: Any
    b: Any
    counts: bool = True

    def text(self, width: int | None = None) -> str:
        """``tool_calls.0.arguments.reservation_id: "NM1VX1" → "KC18K6"`` on one line."""
        return change_text(FieldChange(self.path, self.a, self.b), width)


@dataclass(frozen=True)
class ContextRow:
    """One aligned row near the divergence: step numbers (None: that side has none) and lines.

    ``counts``: the row differs in a way the mode counts.
    """

    step_a: int | None
    step_b: int | None
    tag: str
    counts: bool
    line_a: str | None
    line_b: str | None


@dataclass(frozen=True)
class TraceDiff:
    """Two traces compared: where they first diverge, what differs, and the rows around it.

    ``step_a``/``step_b`` are None when the traces do not diverge in ``mode``.
    """

    mode: str
    step_a: int | None
    step_b: int | None
    changes: list[StepChange]
    around: list[ContextRow]
    alignment: Alignment
    ids_a: tuple[Any, ...] = ()
    """Each row of trace A's harness step id (:func:`~flaketui.traces.steps.harness_step_ids`;
    empty: the log numbers none, the rows are named by their 1-based position)."""
    ids_b: tuple[Any, ...] = ()

    def name_a(self, step: int | None) -> Any:
        """Trace A's 1-based row ``step`` as the harness numbers it (its own id), else the row."""
        return _named(self.ids_a, step)

    def name_b(self, step: int | None) -> Any:
        """Trace B's 1-based row ``step`` as the harness numbers it, else the row."""
        return _named(self.ids_b, step)

    @property
    def divergent_changes(self) -> list[StepChange]:
        """The changes of the divergent row itself (empty: no divergence)."""
        if self.alignment.divergence_row is None:
            return []
        row = self.alignment.rows[self.alignment.divergence_row]
        steps = (None if row.a is None else row.a + 1, None if row.b is None else row.b + 1)
        return [c for c in self.changes if (c.step_a, c.step_b) == steps]

    def to_json(self) -> dict[str, Any]:
        """``{"mode", "first_divergence": {"step_a", "step_b"}, "changes": [...], "around": [...]}``.

        Steps are named by the harness's own ids where the traces carry them (:attr:`ids_a`), and
        the first divergence then also gives flaketui's rows (``row_a``, ``row_b``).

        A value one side lacks is ``null``; the values are the log's own JSON.
        """
        a, b = self.name_a, self.name_b
        return {
            "mode": self.mode,
            "first_divergence": {"step_a": a(self.step_a), "step_b": b(self.step_b),
                                 **({"row_a": self.step_a, "row_b": self.step_b}
                                    if (self.ids_a or self.ids_b) and self.step_a is not None else {})},
            "changes": [
                {"step_a": a(c.step_a), "step_b": b(c.step_b), "path": c.path,
                 "a": None if c.a is MISSING else c.a, "b": None if c.b is MISSING else c.b,
                 "counts": c.counts}
                for c in self.changes
            ],
            "around": [
                {"step_a": a(r.step_a), "step_b": b(r.step_b), "tag": r.tag, "counts": r.counts,
                 "a": r.line_a, "b": r.line_b}
                for r in self.around
            ],
        }


def _named(ids: tuple[Any, ...], step: int | None) -> Any:
    if step is None or not ids or step > len(ids) or ids[step - 1] is None:
        return step
    return ids[step - 1]


def change_text(change: FieldChange, width: int | None = None) -> str:
    """A change on one line: ``reservation_id: "NM1VX1" → "KC18K6"`` (``(none)`` for a missing side).

    A whole step (empty path) reads as :func:`~flaketui.traces.steps.step_line` puts it.
    """
    def side(v: Any) -> str:
        if v is MISSING:
            return "(none)"
        return step_line(v) if not change.path and isinstance(v, dict) else json_text(v)

    head = f"{change.path}: " if change.path else ""
    return one_line(f"{head}{side(change.a)} → {side(change.b)}", width)


def diff_traces(
    a: Sequence[Any] | None,
    b: Sequence[Any] | None,
    mode: str | None = None,
    normaliser: Normaliser | None = None,
    tolerance: float = 0.0,
    context: int = CONTEXT,
    width: int | None = 120,
) -> TraceDiff:
    """Compare trace ``a`` with trace ``b``.

    Args:
        a: Trace A (e.g. the passing trial's), a list of steps; None for no trace.
        b: Trace B.
        mode: ``actions`` or ``all``; None picks :func:`~flaketui.traces.steps.default_mode`.
        normaliser: Which keys to ignore (default: ids, timestamps, durations, noise).
        tolerance: Numbers this close are equal (absolute or relative).
        context: Rows shown before and after the divergent row.
        width: Longest line of a row around the divergence (None: whole lines).
    """
    mode = check_mode(mode) if mode is not None else default_mode(a, b)
    norm = normaliser or Normaliser()
    ta, tb = list(a or ()), list(b or ())
    al = align_traces(ta, tb, norm, mode, tolerance)
    changes: list[StepChange] = []
    for r in al.rows:
        if r.tag == EQUAL:
            continue
        sa = None if r.a is None else r.a + 1
        sb = None if r.b is None else r.b + 1
        if r.a is not None and r.b is not None:
            changes.extend(StepChange(sa, sb, c.path, c.a, c.b, r.counts)
                           for c in step_changes(ta[r.a], tb[r.b], norm, tolerance))
        elif r.a is not None:
            changes.append(StepChange(sa, None, "", norm.step(ta[r.a]), MISSING, r.counts))
        elif r.b is not None:
            changes.append(StepChange(None, sb, "", MISSING, norm.step(tb[r.b]), r.counts))
    around: list[ContextRow] = []
    if al.divergence_row is not None:
        lo, hi = max(0, al.divergence_row - context), al.divergence_row + context + 1
        around = [
            ContextRow(None if r.a is None else r.a + 1, None if r.b is None else r.b + 1, r.tag,
                       r.counts and r.tag != EQUAL,
                       None if r.a is None else step_line(ta[r.a], width, norm),
                       None if r.b is None else step_line(tb[r.b], width, norm))
            for r in al.rows[lo:hi]
        ]
    return TraceDiff(mode, al.first_divergence, al.divergence_b, changes, around, al,
                     harness_step_ids(ta), harness_step_ids(tb))
