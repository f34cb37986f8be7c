"""Align two traces step by step and find where they first part ways.

The two traces are aligned with :class:`difflib.SequenceMatcher` on their
normalised step signatures, so an inserted step does not shift everything after
it. The *first divergence* is the first step (numbered from 1) at which the
aligned traces differ in a way the divergence mode counts: any difference in
``all`` mode, a difference in the agent's actions in ``actions`` mode (see
:mod:`flaketui.traces.steps`). Inside the divergent pair of steps, :func:`step_changes`
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
from flaketui.traces.steps import ACTIONS, ALL, action_keys, check_mode, tool_calls
from flaketui.traces.structdiff import MISSING as MISSING  # re-exported: callers import it from here
from flaketui.traces.structdiff import FieldChange, same_value, structural_diff

EQUAL, REPLACE, DELETE, INSERT = "equal", "replace", "delete", "insert"
"""Tags of aligned rows, as :meth:`difflib.SequenceMatcher.get_opcodes` names them."""


@dataclass(frozen=True)
class AlignedRow:
    """One row of two aligned traces: a step of A, a step of B, or both (0-based indexes).

    ``tag`` says how the two normalised steps compare. ``counts`` is False when the
    row differs only in what the alignment's mode does not count (in ``actions``
    mode: a user turn, a tool result, the wording of the agent's chat).
    """

    a: int | None
    b: int | None
    tag: str
    counts: bool = True


@dataclass(frozen=True)
class Alignment:
    """Two traces aligned step by step.

    ``divergence_row`` is the index in ``rows`` of the first row that differs in
    a way the mode counts (None: no such row). ``divergence_a`` and ``divergence_b``
    are that row's 1-based step in each trace (user turns included); for a step
    only one trace has, the other's is the step it would come before.
    ``first_divergence`` is ``divergence_a`` (the two are equal in ``all`` mode,
    where the steps before it are shared by both).
    """

    rows: list[AlignedRow]
    first_divergence: int | None
    divergence_row: int | None
    divergence_b: int | None = None
    mode: str = ALL

    @property
    def divergence_a(self) -> int | None:
        return self.first_divergence

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


def _diff_rows(a: Sequence[str], b: Sequence[str], off_a: int = 0, off_b: int = 0) -> list[AlignedRow]:
    """difflib's alignment of two signature lists as rows (indexes shifted by the offsets).

    The shared head and tail are matched first (difflib is slow on long runs of
    repeated steps); a ``replace`` block of unequal lengths pairs its steps in
    order and leaves the rest as deletions (A only) or insertions (B only).
    """
    head = common_prefix(a, b)
    tail = common_prefix(a[head:][::-1], b[head:][::-1])
    rows = [AlignedRow(off_a + d, off_b + d, EQUAL) for d in range(head)]
    mid_a, mid_b = list(a[head:len(a) - tail]), list(b[head:len(b) - tail])
    oa, ob = off_a + head, off_b + head
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=False).get_opcodes():
        if tag == EQUAL:
            rows.extend(AlignedRow(oa + i1 + d, ob + j1 + d, EQUAL) for d in range(i2 - i1))
        elif tag == DELETE:
            rows.extend(AlignedRow(oa + i, None, DELETE) for i in range(i1, i2))
        elif tag == INSERT:
            rows.extend(AlignedRow(None, ob + j, INSERT) for j in range(j1, j2))
        else:
            paired = min(i2 - i1, j2 - j1)
            rows.extend(AlignedRow(oa + i1 + d, ob + j1 + d, REPLACE) for d in range(paired))
            rows.extend(AlignedRow(oa + i, None, DELETE) for i in range(i1 + paired, i2))
            rows.extend(AlignedRow(None, ob + j, INSERT) for j in range(j1 + paired, j2))
    rows.extend(AlignedRow(off_a + len(a) - tail + d, off_b + len(b) - tail + d, EQUAL) for d in range(tail))
    return rows


def _finish(rows: list[AlignedRow], mode: str = ALL) -> Alignment:
    """The alignment of ``rows``: where the first counted difference is, in each trace."""
    na = nb = 0
    for n, r in enumerate(rows):
        if r.tag != EQUAL and r.counts:
            return Alignment(rows, na + 1, n, nb + 1, mode)
        na += r.a is not None
        nb += r.b is not None
    return Alignment(rows, None, None, None, mode)


def align(a: Sequence[str], b: Sequence[str]) -> Alignment:
    """Align two lists of step signatures with difflib (no junk heuristic); every step counts."""
    return _finish(_diff_rows(a, b))


def align_traces(
    a: Sequence[Any] | None,
    b: Sequence[Any] | None,
    normaliser: Normaliser | None = None,
    mode: str = ALL,
    tolerance: float = 0.0,
) -> Alignment:
    """Normalise two traces and align them.

    Args:
        a: Trace A (a list of steps), or None.
        b: Trace B.
        normaliser: Which keys to ignore.
        mode: ``all``: every step counts (:func:`align`). ``actions``: the
            agent's actions (:func:`~flaketui.traces.steps.action_keys`) are
            aligned first (their shared head, then the first differing action
            of each side as one row if they call the same tools, then the rest
            with difflib), then the other steps between each pair of aligned
            actions with each other; only a row where the actions differ counts.
        tolerance: Numbers this close are equal (see
            :func:`~flaketui.traces.structdiff.same_value`): a paired row whose
            only differences are such numbers is equal.
    """
    check_mode(mode)
    norm = normaliser or Normaliser()
    ta, tb = list(a or ()), list(b or ())
    sa, sb = norm.signatures(ta), norm.signatures(tb)
    if mode == ALL:
        rows = _diff_rows(sa, sb)
    else:
        rows = _action_rows(ta, tb, sa, sb, norm)
    if tolerance > 0:
        rows = [_within_tolerance(r, ta, tb, norm, mode, tolerance) for r in rows]
    return _finish(rows, mode)


def _action_rows(ta: list[Any], tb: list[Any], sa: list[str], sb: list[str],
                 norm: Normaliser) -> list[AlignedRow]:
    ka, kb = action_keys(ta, norm), action_keys(tb, norm)
    ia = [i for i, k in enumerate(ka) if k is not None]
    ib = [j for j, k in enumerate(kb) if k is not None]
    acts_a, acts_b = [ka[i] for i in ia], [kb[j] for j in ib]
    # When the agent's first differing actions call the same tools (or both are the
    # final answer), they are paired whatever difflib would make of them: that row is
    # the divergence, "A looked up NM1VX1, B looked up KC18K6".
    n = common_prefix(acts_a, acts_b)
    same_kind = n < min(len(acts_a), len(acts_b)) and _kind(ta[ia[n]], norm) == _kind(tb[ib[n]], norm)
    pairs = [(d, d) for d in range(n + same_kind)]
    m = len(pairs)
    pairs += [(r.a, r.b) for r in _diff_rows(acts_a[m:], acts_b[m:], m, m) if r.a is not None and r.b is not None]
    anchors = [(ia[x], ib[y]) for x, y in pairs]
    rows: list[AlignedRow] = []
    pa = pb = 0
    for x, y in [*anchors, (len(ta), len(tb))]:
        for r in _diff_rows(sa[pa:x], sb[pb:y], pa, pb):
            key_a = ka[r.a] if r.a is not None else None
            key_b = kb[r.b] if r.b is not None else None
            if r.tag == REPLACE and (key_a is None) != (key_b is None):
                # An action is never shown beside a step that is not one (a user turn).
                rows += [AlignedRow(r.a, None, DELETE, key_a is not None),
                         AlignedRow(None, r.b, INSERT, key_b is not None)]
            else:
                rows.append(AlignedRow(r.a, r.b, r.tag, key_a != key_b))
        if x < len(ta):
            rows.append(AlignedRow(x, y, EQUAL if sa[x] == sb[y] else REPLACE, ka[x] != kb[y]))
        pa, pb = x + 1, y + 1
    return rows


def _kind(step: Any, norm: Normaliser) -> list[Any]:
    """The names of an action's tool calls (empty for a final answer)."""
    return [c.get("name") for c in tool_calls(norm.step(step))]


def _within_tolerance(r: AlignedRow, ta: list[Any], tb: list[Any], norm: Normaliser, mode: str,
                      tolerance: float) -> AlignedRow:
    if r.tag != REPLACE or r.a is None or r.b is None:
        return r
    sa, sb = norm.step(ta[r.a]), norm.step(tb[r.b])
    if not structural_diff(sa, sb, tolerance):
        return AlignedRow(r.a, r.b, EQUAL, False)
    if mode == ACTIONS and r.counts:
        ca, cb = tool_calls(sa), tool_calls(sb)
        if ca and cb and not structural_diff(_call_parts(ca), _call_parts(cb), tolerance):
            return AlignedRow(r.a, r.b, r.tag, False)
    return r


def _call_parts(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": c.get("name"), "arguments": c.get("arguments")} for c in calls]


def step_changes(a: Any, b: Any, normaliser: Normaliser | None = None,
                 tolerance: float = 0.0) -> list[FieldChange]:
    """The fields that differ between two steps after normalisation, in A's order then B's.

    Paths are dotted (``tool_calls.0.arguments.reservation_id``); see
    :func:`~flaketui.traces.structdiff.structural_diff`.
    """
    norm = normaliser or Normaliser()
    na, nb = norm.step(a), norm.step(b)
    if not (isinstance(na, dict) and isinstance(nb, dict) or isinstance(na, list) and isinstance(nb, list)):
        return [] if same_value(na, nb, tolerance) else [FieldChange("", na, nb)]
    return structural_diff(na, nb, tolerance)


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


WORD_DIFF_CELLS = 40_000
"""Most (words of A × words of B) a block is word-diffed in at once; a larger block is first
split on the lines the two texts share. difflib's longest-match search costs about that product
for each block it splits, and much more when runs of white space count as words: a pair of long
tool outputs would keep the thread that draws the trace view busy for seconds."""


def _words_and_lines(toks: list[str]) -> tuple[list[int], list[int]]:
    """The indexes of ``toks``' words (non-blank tokens) and each word's line number."""
    words, lines, line = [], [], 0
    for i, t in enumerate(toks):
        if t[0].isspace():
            line += t.count("\n")
        else:
            words.append(i)
            lines.append(line)
    return words, lines


def _line_blocks(lines: list[int], lo: int, hi: int) -> list[tuple[int, int]]:
    """Words ``lo..hi`` grouped by line, as (first, end) ranges of word indexes."""
    out: list[tuple[int, int]] = []
    start = lo
    for n in range(lo + 1, hi + 1):
        if n == hi or lines[n] != lines[start]:
            out.append((start, n))
            start = n
    return out


def _mark_words(wa: list[str], wb: list[str], la: list[int], lb: list[int], ca: list[bool], cb: list[bool],
                i1: int, i2: int, j1: int, j2: int) -> None:
    """Mark the changed words of ``wa[i1:i2]`` against ``wb[j1:j2]`` in ``ca``/``cb``: difflib's
    opcodes on the words, or, for a block over :data:`WORD_DIFF_CELLS`, on its lines first (each
    pair of differing line runs then diffed word by word; a run as big as the block, marked whole)."""
    if i1 == i2 or j1 == j2:
        ca[i1:i2] = [True] * (i2 - i1)
        cb[j1:j2] = [True] * (j2 - j1)
        return
    if (i2 - i1) * (j2 - j1) <= WORD_DIFF_CELLS:
        for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, wa[i1:i2], wb[j1:j2], autojunk=False).get_opcodes():
            if tag != EQUAL:
                ca[i1 + a1:i1 + a2] = [True] * (a2 - a1)
                cb[j1 + b1:j1 + b2] = [True] * (b2 - b1)
        return
    runs_a, runs_b = _line_blocks(la, i1, i2), _line_blocks(lb, j1, j2)
    keys_a = [tuple(wa[s:e]) for s, e in runs_a]
    keys_b = [tuple(wb[s:e]) for s, e in runs_b]
    for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False).get_opcodes():
        if tag == EQUAL:
            continue
        s1, e1 = (runs_a[a1][0], runs_a[a2 - 1][1]) if a2 > a1 else (i1, i1)
        s2, e2 = (runs_b[b1][0], runs_b[b2 - 1][1]) if b2 > b1 else (j1, j1)
        if (s1, e1, s2, e2) == (i1, i2, j1, j2) or a2 == a1 or b2 == b1:
            ca[s1:e1] = [True] * (e1 - s1)
            cb[s2:e2] = [True] * (e2 - s2)
        else:
            _mark_words(wa, wb, la, lb, ca, cb, s1, e1, s2, e2)


def _marked(toks: list[str], words: list[int], changed: list[bool]) -> list[tuple[str, bool]]:
    """``toks`` each marked: a word as ``changed`` says, white space as changed when the words on
    both sides of it are (so a changed phrase is marked whole and a shared one not at all)."""
    state = [False] * len(toks)
    for w, c in zip(words, changed, strict=True):
        state[w] = c
    out = []
    for i, t in enumerate(toks):
        if t[0].isspace():
            before = state[i - 1] if i > 0 else None
            after = state[i + 1] if i + 1 < len(toks) else None
            near = [s for s in (before, after) if s is not None]
            out.append((t, bool(near) and all(near)))
        else:
            out.append((t, state[i]))
    return out


def word_diff(a: Any, b: Any) -> WordDiff:
    """Word-level diff of two values (non-strings are compared as compact JSON).

    The words (runs of non-space) are compared, not the runs of white space between them: a
    run of spaces repeats hundreds of times in a long text, and difflib's search goes through
    every repeat. A block too big to compare word by word is first split on shared lines
    (:data:`WORD_DIFF_CELLS`). Two texts that differ in white space only are compared token by
    token.
    """
    ta, tb = tokens(compact(a)), tokens(compact(b))
    ia, la = _words_and_lines(ta)
    ib, lb = _words_and_lines(tb)
    wa, wb = [ta[i] for i in ia], [tb[i] for i in ib]
    lo = 0
    while lo < len(wa) and lo < len(wb) and wa[lo] == wb[lo]:
        lo += 1
    hi_a, hi_b = len(wa), len(wb)
    while hi_a > lo and hi_b > lo and wa[hi_a - 1] == wb[hi_b - 1]:
        hi_a -= 1
        hi_b -= 1
    ca, cb = [False] * len(wa), [False] * len(wb)
    if hi_a > lo or hi_b > lo:
        _mark_words(wa, wb, la, lb, ca, cb, lo, hi_a, lo, hi_b)
    elif ta != tb and len(ta) * len(tb) <= WORD_DIFF_CELLS:
        out_a: list[tuple[str, bool]] = []
        out_b: list[tuple[str, bool]] = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
            same = tag == EQUAL
            out_a.extend((t, not same) for t in ta[i1:i2])
            out_b.extend((t, not same) for t in tb[j1:j2])
        return WordDiff(out_a, out_b)
    return WordDiff(_marked(ta, ia, ca), _marked(tb, ib, cb))


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
    traces: Sequence[tuple[bool, Sequence[Any] | None]],
    normaliser: Normaliser | None = None,
    mode: str = ALL,
) -> int | None:
    """First divergence of a task's most informative (pass, fail) pair of traces.

    Args:
        traces: ``(passed, trace)`` per non-errored trial, in trial order; trials
            without a trace are left out.
        normaliser: Which keys to ignore.
        mode: ``all`` or ``actions`` (see :func:`align_traces`); in ``actions``
            the pair is the one sharing the longest prefix of agent actions.

    Returns:
        The 1-based step in the passing trace, or None when the task has no
        passing or no failing trace, or the chosen pair does not diverge.
    """
    check_mode(mode)
    norm = normaliser or Normaliser()
    passing = [t for ok, t in traces if ok and t is not None]
    failing = [t for ok, t in traces if not ok and t is not None]
    pair = pick_pair(passing, failing, norm, mode)
    if pair is None:
        return None
    return align_traces(passing[pair[0]], failing[pair[1]], norm, mode).first_divergence


def pick_pair(
    first: Sequence[Sequence[Any] | None],
    second: Sequence[Sequence[Any] | None],
    normaliser: Normaliser | None = None,
    mode: str = ALL,
) -> tuple[int, int] | None:
    """The most informative pair of traces, one of ``first`` and one of ``second``: the one rule
    every view of a pair (the trace screens, ``flaketui diff``, the ``div`` column) chooses by.

    The pair sharing the longest prefix of :func:`pair_keys` (every step in ``all`` mode, the
    agent's actions in ``actions``) shows the most before it parts, so its divergence is the
    one decision that made the outcomes differ; ties go to the earliest of ``first``, then
    of ``second`` (:func:`best_pair`).

    Returns:
        ``(i, j)``: indexes into ``first`` and ``second``; None if a side is empty.
    """
    norm = normaliser or Normaliser()
    best = best_pair([pair_keys(t, norm, mode) for t in first], [pair_keys(t, norm, mode) for t in second])
    return None if best is None else (best[0], best[1])


def pair_keys(trace: Sequence[Any] | None, normaliser: Normaliser, mode: str = ALL) -> list[str]:
    """What :func:`best_pair` compares: every step's signature, or in ``actions`` the actions' keys."""
    if mode == ALL:
        return normaliser.signatures(trace)
    return [k for k in action_keys(trace, normaliser) if k is not None]
