"""Two trials' traces compared for showing side by side: the model a trace view only renders.

:func:`pair_diff` normalises and aligns the two traces (:func:`~flaketui.traces.align.align_traces`)
and finds the divergent row's changed fields (:func:`~flaketui.traces.align.step_changes`) —
the same two calls ``flaketui diff``'s :class:`~flaketui.traces.diff.TraceDiff` report is made of,
so the screen and the command agree on every step. A :class:`PairDiff` then answers what a view
asks while it draws: each row's changes and changed words (computed when the row is first drawn
and kept, since a 5,000-step pair is drawn a few hundred rows at a time), the folds of identical
steps, the hunks, the rows a search matches, and which system prompts repeat.

Build it in a worker (it aligns the whole pair) and hand it to the view. Pure Python: no
Textual, no Rich.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flaketui.model import Trial
from flaketui.traces.align import DELETE, EQUAL, INSERT, REPLACE, Alignment, align_traces, step_changes, word_diff
from flaketui.traces.normalise import Normaliser, compact
from flaketui.traces.steps import call_text, default_mode, harness_step_ids
from flaketui.traces.structdiff import MISSING, FieldChange

__all__ = [
    "DELETE", "EQUAL", "FOLD_KEEP", "FOLD_MIN", "INSERT", "MISSING", "REPLACE", "FieldChange", "Item", "PairDiff",
    "action_first", "header_changes",
    "Tokens", "highlights", "is_system", "pair_diff", "tool_calls_text",
]

FOLD_MIN = 6
"""Runs of more identical aligned steps than this are folded."""
FOLD_KEEP = 1
"""Identical steps kept visible at each end of a folded run."""

Tokens = list[tuple[str, bool]]
"""A text as word tokens, each marked changed (True) or shared (False)."""

Row = tuple[int | None, int | None, str, bool]
"""An aligned row as (A's 0-based step, B's, tag, counts)."""


@dataclass(frozen=True)
class Item:
    """One thing a view draws: an aligned row (``first == last``) or a fold of rows."""

    first: int
    last: int
    fold: bool = False


ACTION_FIELDS = frozenset({"tool_calls", "tool_call", "function_call", "action", "actions", "arguments", "args",
                           "tool", "name", "function", "content", "text", "output", "answer", "message"})
"""Top-level step fields that are the agent's action or what it said; the others are metadata."""
HEADER_FIELDS = 3
"""Fields the divergence header names before counting the rest."""


def action_first(changes: Sequence[FieldChange]) -> tuple[list[FieldChange], list[FieldChange]]:
    """The changes split into those of the agent's action or words (:data:`ACTION_FIELDS`, first
    part of the path; a step only one side has counts as action) and the metadata, each in its
    order. A harness that writes a dozen audio flags on every message would otherwise hide the one
    argument that changed behind them."""
    action, meta = [], []
    for c in changes:
        top = c.path.split(".", 1)[0] if c.path else ""
        (action if not top or top in ACTION_FIELDS else meta).append(c)
    return action, meta


def header_changes(changes: Sequence[FieldChange]) -> tuple[list[FieldChange], int, int]:
    """What the divergence header names: up to :data:`HEADER_FIELDS` changes, the action's first,
    then how many more action fields and how many metadata fields it folds."""
    action, meta = action_first(changes)
    shown = (action or meta)[:HEADER_FIELDS]
    more_action = max(0, len(action) - HEADER_FIELDS)
    more_meta = len(meta) if action else max(0, len(meta) - HEADER_FIELDS)
    return shown, more_action, more_meta


def is_system(step: Any) -> bool:
    """A system (or developer) prompt: shown once when both sides share it."""
    return isinstance(step, dict) and str(step.get("role", "")).lower() in ("system", "developer")


def tool_calls_text(value: Any) -> str | None:
    """``tool_calls`` as one line per call; None if not a list of calls.

    Normalised calls (``{"name", "arguments"}``) read ``name(arg="v", …)``; raw OpenAI
    calls ``name {"arg": value}``.

    The arguments arrive as a JSON string; shown parsed (with spaces, so long ones wrap)
    rather than as escaped JSON inside JSON. The word diff of two steps' calls is taken
    of this text, so that the marked words are the ones the row shows.
    """
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(c, dict) and "name" in c and "function" not in c for c in value):
        return "\n".join(call_text(c) for c in value)  # normalised: ``name(arg="v", …)``
    lines = []
    for call in value:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            return None
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                lines.append(f"{fn['name']} {args}")
                continue
        lines.append(fn["name"] if args in (None, {}) else
                     f"{fn['name']} {json.dumps(args, ensure_ascii=False)}")
    return "\n".join(lines)


def highlights(changes: Sequence[FieldChange], step_a: Any = None, step_b: Any = None,
               ) -> tuple[dict[str, Tokens], dict[str, Tokens]]:
    """Word diffs of the changed top-level fields, as token lists for side A and side B.

    Args:
        changes: The two steps' changes (:func:`~flaketui.traces.align.step_changes`).
        step_a: A's normalised step: a nested change (``args.query``) diffs its whole
            top-level field (``args``), which is what the row shows.
        step_b: B's normalised step.
    """
    a: dict[str, Tokens] = {}
    b: dict[str, Tokens] = {}
    for c in changes:
        top = c.path.split(".")[0].split("[")[0]
        if top in a or top in b:
            continue
        va, vb = c.a, c.b
        if top != c.path:
            if not (isinstance(step_a, dict) and isinstance(step_b, dict)):
                continue
            va, vb = step_a.get(top, MISSING), step_b.get(top, MISSING)
        if va is MISSING or vb is MISSING:
            if va is not MISSING:
                a[top] = [(compact(va), True)]
            if vb is not MISSING:
                b[top] = [(compact(vb), True)]
            continue
        if top == "tool_calls":
            ta, tb = tool_calls_text(va), tool_calls_text(vb)
            if ta is not None and tb is not None:
                va, vb = ta, tb  # the calls as the row shows them, ``name(arg="v")``
        wd = word_diff(va, vb)
        a[top], b[top] = wd.a, wd.b
    return a, b


def _changed(tokens: dict[str, Tokens]) -> int:
    return sum(1 for toks in tokens.values() for t, c in toks if c and t.strip())


@dataclass(eq=False)
class PairDiff:
    """Two traces aligned for a side-by-side view (see :func:`pair_diff`).

    ``alignment`` is None when there is one side only (then :attr:`rows` are A's steps, all
    ``equal``); ``changes`` are the fields the divergent row differs in and
    ``divergent_steps`` its two normalised steps (when both sides have one).
    """

    trace_a: list[Any]
    trace_b: list[Any]
    mode: str
    normaliser: Normaliser
    tolerance: float
    alignment: Alignment | None
    changes: list[FieldChange]
    divergent_steps: tuple[Any, Any]
    ignored: list[str]
    """The keys of either trace that the normaliser ignores, in first-seen order."""
    rows: list[Row]
    """Every aligned row as (A's index, B's index, tag, counts); one side: A's steps."""
    ids: tuple[tuple[Any, ...], tuple[Any, ...]] = ((), ())
    """Each side's harness step ids (:func:`~flaketui.traces.steps.harness_step_ids`; empty: none)."""

    def step_name(self, side: int, index: int) -> Any:
        """Side ``side``'s (0: A, 1: B) step at 0-based ``index`` as its harness numbers it (ATIF
        ``step_id``, τ²'s ``turn_idx``), else its 1-based row: what the panes and header show."""
        ids = self.ids[side]
        return ids[index] if index < len(ids) and ids[index] is not None else index + 1
    _row_changes: dict[int, list[FieldChange]] = field(default_factory=dict, repr=False)
    _texts: list[str] | None = field(default=None, repr=False)
    _system_first: list[dict[int, int] | None] = field(default_factory=lambda: [None, None], repr=False)

    @property
    def two_sided(self) -> bool:
        """Both sides are shown (else only A's steps)."""
        return self.alignment is not None

    @property
    def first_divergence(self) -> int | None:
        """1-based step where the two traces first differ (None: equal or one side)."""
        return self.alignment.first_divergence if self.alignment else None

    @property
    def divergence_row(self) -> int | None:
        """The aligned row of the first divergence (None: none, or one side)."""
        return self.alignment.divergence_row if self.alignment else None

    def steps(self, n: int) -> tuple[Any, Any]:
        """Row ``n``'s two normalised steps (None for a side without one)."""
        ia, ib, _, _ = self.rows[n]
        norm = self.normaliser
        return (norm.step(self.trace_a[ia]) if ia is not None else None,
                norm.step(self.trace_b[ib]) if ib is not None else None)

    def row_changes(self, n: int) -> list[FieldChange]:
        """The fields row ``n``'s two steps differ in (empty: equal, one side, or one step only)."""
        ia, ib, tag, _ = self.rows[n]
        if not self.two_sided or tag == EQUAL or ia is None or ib is None:
            return []
        if n == self.divergence_row:
            return self.changes
        found = self._row_changes.get(n)
        if found is None:
            found = self._row_changes[n] = step_changes(self.trace_a[ia], self.trace_b[ib], self.normaliser,
                                                        self.tolerance)
        return found

    def row_highlights(self, n: int, changes: Sequence[FieldChange] | None = None,
                       steps: tuple[Any, Any] | None = None) -> tuple[dict[str, Tokens], dict[str, Tokens]]:
        """The changed words of row ``n``'s fields on each side (see :func:`highlights`)."""
        changes = self.row_changes(n) if changes is None else changes
        if not changes:
            return {}, {}
        sa, sb = self.steps(n) if steps is None else steps
        return highlights(changes, sa, sb)

    def changed_word_counts(self) -> tuple[int, int]:
        """How many words of the divergent step are marked on A and on B."""
        ha, hb = highlights(self.changes, *self.divergent_steps)
        return _changed(ha), _changed(hb)

    def items(self, folded: bool = True, unfolded: frozenset[int] | set[int] = frozenset()) -> list[Item]:
        """What the rows show, in order: aligned rows, and folds of runs of more than
        :data:`FOLD_MIN` identical ones (``folded``), except the runs starting at ``unfolded``."""
        rows = self.rows
        if not self.two_sided or not folded:
            return [Item(n, n) for n in range(len(rows))]
        out: list[Item] = []
        n = 0
        while n < len(rows):
            end = n
            while end < len(rows) and rows[end][2] == EQUAL:
                end += 1
            if end - n > FOLD_MIN and n not in unfolded:
                out.extend(Item(i, i) for i in range(n, n + FOLD_KEEP))
                out.append(Item(n + FOLD_KEEP, end - FOLD_KEEP - 1, fold=True))
                out.extend(Item(i, i) for i in range(end - FOLD_KEEP, end))
            else:
                out.extend(Item(i, i) for i in range(n, end))
            if end < len(rows):
                out.append(Item(end, end))
            n = end + 1
        return out

    def hunks(self) -> list[int]:
        """The first aligned row of each run of differing rows."""
        rows = self.rows if self.two_sided else []
        return [n for n, r in enumerate(rows) if r[2] != EQUAL and (n == 0 or rows[n - 1][2] == EQUAL)]

    def find(self, query: str) -> list[int]:
        """The aligned rows whose steps hold ``query`` (any case), as compact JSON."""
        if self._texts is None:
            ta, tb = self.trace_a, self.trace_b
            self._texts = [
                "\n".join(compact(t[i]) for t, i in ((ta, ia), (tb, ib)) if i is not None).casefold()
                for ia, ib, _, _ in self.rows
            ]
        q = query.casefold()
        return [n for n, text in enumerate(self._texts) if q in text]

    def same_system(self, side: int, index: int) -> int | None:
        """The earlier step of side ``side`` (0: A, 1: B) with the same system prompt as step
        ``index`` (None: none, or not a system prompt)."""
        if self._system_first[side] is None:
            first: dict[str, int] = {}
            earlier: dict[int, int] = {}
            for i, step in enumerate(self.trace_a if side == 0 else self.trace_b):
                if is_system(step):
                    sig = self.normaliser.signature(step)
                    if sig in first:
                        earlier[i] = first[sig]
                    else:
                        first[sig] = i
            self._system_first[side] = earlier
        return self._system_first[side].get(index)  # type: ignore[union-attr]


def pair_diff(
    a: Trial | None,
    b: Trial | None,
    normaliser: Normaliser | None = None,
    mode: str | None = None,
    tolerance: float = 0.0,
) -> PairDiff:
    """Align trial ``a``'s trace with trial ``b``'s for a side-by-side view.

    Args:
        a: The left trial, or None.
        b: The right trial, or None to show only ``a`` (a trial without a trace is an empty trace).
        normaliser: Which keys to ignore (default: ids, timestamps, durations, noise).
        mode: ``actions`` or ``all``; None: :func:`~flaketui.traces.steps.default_mode` of the pair.
        tolerance: Numbers this close are equal.
    """
    norm = normaliser or Normaliser()
    ta, tb = (list(t.trace or []) if t is not None else [] for t in (a, b))
    mode = mode or default_mode(ta, tb)
    alignment = None
    changes: list[FieldChange] = []
    divergent: tuple[Any, Any] = (None, None)
    if a is not None and b is not None:
        alignment = align_traces(ta, tb, norm, mode, tolerance)
        row = alignment.divergence_row
        if row is not None:
            r = alignment.rows[row]
            if r.a is not None and r.b is not None:
                changes = step_changes(ta[r.a], tb[r.b], norm, tolerance)
                divergent = (norm.step(ta[r.a]), norm.step(tb[r.b]))
    if alignment is None:
        rows: list[Row] = [(i, None, EQUAL, False) for i in range(len(ta))]
    else:
        rows = [(r.a, r.b, r.tag, r.counts) for r in alignment.rows]
    return PairDiff(ta, tb, mode, norm, tolerance, alignment, changes, divergent, norm.ignored_keys_of(ta + tb),
                    rows, ids=(harness_step_ids(ta), harness_step_ids(tb)))
