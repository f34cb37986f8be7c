"""Align two traces step by step and find where they first part ways.

The two traces are aligned with :class:`difflib.SequenceMatcher` on their
normalised step signatures, so an inserted step does not shift everything after
it. The *first divergence* is the first step (numbered from 1) at which the
aligned traces differ. Inside the divergent pair of steps, :func:`step_changes`
names the fields that differ and :func:`word_diff` marks the changed words.
Pure Python: no Textual, no Rich.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flaketui.traces.normalise import Normaliser, compact

EQUAL, REPLACE, DELETE, INSERT = "equal", "replace", "delete", "insert"
"""Tags of aligned rows, as :meth:`difflib.SequenceMatcher.get_opcodes` names them."""

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
"""Stands for a field that one of two steps does not have."""


@dataclass(frozen=True)
class AlignedRow:
    """One row of two aligned traces: a step of A, a step of B, or both (0-based indexes)."""

    a: int | None
    b: int | None
    tag: str


@dataclass(frozen=True)
class Alignment:
    """Two traces aligned step by step.

    ``first_divergence`` is the 1-based step number where the traces first differ
    (``None`` when they are equal after normalisation); the steps before it are
    shared by both. ``divergence_row`` is that row's index in ``rows``.
    """

    rows: list[AlignedRow]
    first_divergence: int | None
    divergence_row: int | None

    @property
    def shared_prefix(self) -> int:
        """Number of leading steps the two traces share."""
        if self.first_divergence is None:
            return sum(1 for r in self.rows if r.tag == EQUAL)
        return self.first_divergence - 1


def common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common prefix of two signature lists."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def align(a: Sequence[str], b: Sequence[str]) -> Alignment:
    """Align two lists of step signatures with difflib (no junk heuristic).

    A ``replace`` block of unequal lengths pairs its steps in order and leaves
    the rest as deletions (A only) or insertions (B only).
    """
    matcher = difflib.SequenceMatcher(None, list(a), list(b), autojunk=False)
    rows: list[AlignedRow] = []
    first: int | None = None
    first_row: int | None = None
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != EQUAL and first is None:
            # Every opcode before this one was "equal" and they start at 0, so i1 == j1.
            first, first_row = i1 + 1, len(rows)
        if tag == EQUAL:
            rows.extend(AlignedRow(i1 + d, j1 + d, EQUAL) for d in range(i2 - i1))
        elif tag == DELETE:
            rows.extend(AlignedRow(i, None, DELETE) for i in range(i1, i2))
        elif tag == INSERT:
            rows.extend(AlignedRow(None, j, INSERT) for j in range(j1, j2))
        else:
            paired = min(i2 - i1, j2 - j1)
            rows.extend(AlignedRow(i1 + d, j1 + d, REPLACE) for d in range(paired))
            rows.extend(AlignedRow(i, None, DELETE) for i in range(i1 + paired, i2))
            rows.extend(AlignedRow(None, j, INSERT) for j in range(j1 + paired, j2))
    return Alignment(rows, first, first_row)


def align_traces(
    a: Sequence[Any] | None, b: Sequence[Any] | None, normaliser: Normaliser | None = None
) -> Alignment:
    """Normalise two traces and align them (see :func:`align`)."""
    norm = normaliser or Normaliser()
    return align(norm.signatures(a), norm.signatures(b))


@dataclass(frozen=True)
class FieldChange:
    """A field that differs between two steps; ``path`` is dotted (``args.query``, ``items[2]``).

    ``a`` or ``b`` is :data:`MISSING` when only one step has the field. The path is
    empty when the steps themselves are strings (or of different kinds).
    """

    path: str
    a: Any
    b: Any


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and value and any(isinstance(v, (dict, list)) for v in value):
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = value


def step_changes(a: Any, b: Any, normaliser: Normaliser | None = None) -> list[FieldChange]:
    """The fields that differ between two steps after normalisation, in A's order then B's."""
    norm = normaliser or Normaliser()
    na, nb = norm.step(a), norm.step(b)
    if not (isinstance(na, dict) and isinstance(nb, dict)):
        return [] if na == nb else [FieldChange("", na, nb)]
    fa: dict[str, Any] = {}
    fb: dict[str, Any] = {}
    _flatten(na, "", fa)
    _flatten(nb, "", fb)
    changes = []
    for path in list(fa) + [p for p in fb if p not in fa]:
        va, vb = fa.get(path, MISSING), fb.get(path, MISSING)
        if va != vb or type(va) is not type(vb):
            changes.append(FieldChange(path, va, vb))
    return changes


_TOKEN = re.compile(r"\s+|\S+")


def tokens(text: str) -> list[str]:
    """Split text into words (runs of non-space) and runs of white space."""
    return _TOKEN.findall(text)


@dataclass(frozen=True)
class WordDiff:
    """Two texts as token lists, each token marked changed (True) or shared (False)."""

    a: list[tuple[str, bool]]
    b: list[tuple[str, bool]]

    @property
    def changed_words(self) -> tuple[int, int]:
        """How many non-blank tokens changed on each side."""
        return (
            sum(1 for t, c in self.a if c and t.strip()),
            sum(1 for t, c in self.b if c and t.strip()),
        )


def word_diff(a: Any, b: Any) -> WordDiff:
    """Word-level diff of two values (non-strings are compared as compact JSON)."""
    ta, tb = tokens(compact(a)), tokens(compact(b))
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    out_a: list[tuple[str, bool]] = []
    out_b: list[tuple[str, bool]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        same = tag == EQUAL
        out_a.extend((t, not same) for t in ta[i1:i2])
        out_b.extend((t, not same) for t in tb[j1:j2])
    return WordDiff(out_a, out_b)


def best_pair(
    passing: Sequence[Sequence[str]], failing: Sequence[Sequence[str]]
) -> tuple[int, int, int] | None:
    """The most informative (passing, failing) pair: the longest shared normalised prefix.

    Args:
        passing: Signature lists of the passing trials, in trial order.
        failing: Signature lists of the failing trials, in trial order.

    Returns:
        ``(i, j, prefix)``: indexes into ``passing`` and ``failing`` and the length
        of their shared prefix; ties go to the earliest trials. None if a side is empty.
    """
    best: tuple[int, int, int] | None = None
    for i, a in enumerate(passing):
        for j, b in enumerate(failing):
            p = common_prefix(a, b)
            if best is None or p > best[2]:
                best = (i, j, p)
    return best


def first_divergence(a: Sequence[str], b: Sequence[str]) -> int | None:
    """1-based step at which two signature lists first differ (None if equal)."""
    return align(a, b).first_divergence


def task_divergence(
    traces: Sequence[tuple[bool, Sequence[Any] | None]], normaliser: Normaliser | None = None
) -> int | None:
    """First divergence of a task's most informative (pass, fail) pair of traces.

    Args:
        traces: ``(passed, trace)`` per non-errored trial, in trial order; trials
            without a trace are left out.
        normaliser: Which keys to ignore.

    Returns:
        The 1-based step, or None when the task has no passing or no failing
        trace, or the chosen pair is equal after normalisation.
    """
    norm = normaliser or Normaliser()
    passing = [norm.signatures(t) for ok, t in traces if ok and t is not None]
    failing = [norm.signatures(t) for ok, t in traces if not ok and t is not None]
    pair = best_pair(passing, failing)
    if pair is None:
        return None
    return first_divergence(passing[pair[0]], failing[pair[1]])
