"""Every cell of a report column at once: the table's text and the CSV cells of a whole run
(or chunk of one), computed a column at a time instead of a cell at a time.

A per-task column other than the name holds few distinct values (they follow from the
counts), so each distinct value is formatted once and each task keeps the index of its
cell (:class:`~flaketui.output.distinct.Coded`, from ``np.unique``): a million tasks' column in a few tens of
milliseconds, where :attr:`TaskColumn.text` per cell takes a second. :func:`cell_texts`
and :func:`csv_columns` give exactly what :attr:`~flaketui.output.columns.TaskColumn.text`
and ``csv_cells(json(st))`` give (tests check every column); a column not known here falls
back to those.
"""

from __future__ import annotations

import os

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from flaketui.output import formatting as fmt
from flaketui.output.columns import TaskColumn, csv_number
from flaketui.output.distinct import Coded, coded_each, coded_pairs, negative_zero
from flaketui.sanitize import csv_cell, visible
from flaketui.stats.suite import TaskStats

NAME_KEYS = frozenset({"task"})
"""Columns with a different cell for (almost) every task: kept as lists, never coded."""


def cell_codes(col: TaskColumn, st: TaskStats) -> Coded:
    """``col.text(st, i)`` of every task ``i``, coded."""
    make = _CODED.get(col.key)
    return make(st) if make is not None else _coded_labels(cell_texts(col, st), str)


def cell_texts(col: TaskColumn, st: TaskStats) -> list[str]:
    """``col.text(st, i)`` of every task ``i``."""
    if col.key in NAME_KEYS:
        return _names(st.tasks)
    if col.key in _CODED:
        return _CODED[col.key](st).cells()
    return [col.text(st, i) for i in range(len(st))]


def csv_columns(col: TaskColumn, st: TaskStats) -> list[list[Any]]:
    """``col.csv_cells(col.json(st))``: one list of cells per name of ``col.csv_names``."""
    if col.key in NAME_KEYS:
        return [_csv_names(st.tasks)]
    coded = _CSV.get(col.key)
    return [c.cells() for c in coded(st)] if coded is not None else col.csv_cells(col.json(st))


def csv_codes(col: TaskColumn, st: TaskStats) -> list[Coded]:
    """:func:`csv_columns` coded, one per name of ``col.csv_names``."""
    coded = _CSV.get(col.key)
    if coded is not None:
        return coded(st)
    return [_coded_labels(cells, lambda v: v) for cells in csv_columns(col, st)]


def widest(col: TaskColumn, st: TaskStats) -> int:
    """The widest of ``col``'s cells, in terminal cells: from the values' range where that
    decides it (rates, intervals, counts), else from the distinct texts."""
    if col.key in NAME_KEYS:
        return widest_names(st.tasks)
    quick = _WIDEST.get(col.key)
    width = quick(st) if quick is not None else None
    return width if width is not None else max(map(cell_width, set(cell_codes(col, st).texts)), default=0)


def _widest_decimal(values: Any, digits: int) -> int | None:
    """The width of ``f"{x:.{digits}f}"`` over ``values`` (a dash where NaN) when every value
    lies in [0, 10), so that each takes ``digits + 2`` characters; None when one does not."""
    arr = np.asarray(values, dtype=np.float64)
    seen = arr[~np.isnan(arr)]
    if not seen.size:
        return len(fmt.DASH) if arr.size else 0
    if seen.min() < 0 or seen.max() >= 9.5 or negative_zero(seen):  # 9.9996 rounds to "10.000"
        return None
    return digits + 2


def _widest_interval(iv: Any) -> int | None:
    """The same for ``[0.03, 1.00]`` intervals."""
    low, high = _widest_decimal(iv.low, 2), _widest_decimal(iv.high, 2)
    if low is None or high is None:
        return None
    both = ~(np.isnan(np.asarray(iv.low, dtype=np.float64)) | np.isnan(np.asarray(iv.high, dtype=np.float64)))
    return 2 * 4 + 4 if both.any() else (len(fmt.DASH) if both.size else 0)


def _widest_rule_of_three(st: TaskStats) -> int | None:
    """``fail < `` and the widest bound shown (from the distinct bounds)."""
    bounds, _, _ = _rule_of_three_pairs(st)
    seen = bounds[~np.isnan(bounds)]
    if not seen.size:
        return 0
    if negative_zero(seen):
        return None
    return len("fail < ") + max(len(f"{b:.3g}") for b in np.unique(seen).tolist())


def _widest_count(values: Any) -> int | None:
    """Whole numbers, none negative: the largest is the widest."""
    arr = np.asarray(values)
    if not arr.size:
        return 0
    return len(str(int(arr.max()))) if arr.min() >= 0 else None


def cell_width(text: str) -> int:
    """``text``'s width on a terminal (East Asian wide characters take two cells)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _coded_labels(values: Sequence[Any], one: Callable[[Any], Any]) -> Coded:
    """``one`` of each of a few labels repeated over the tasks (classes, groups), once each."""
    distinct = list(dict.fromkeys(values))
    index = {v: i for i, v in enumerate(distinct)}
    return Coded([one(v) for v in distinct], np.fromiter(map(index.__getitem__, values), np.int64, len(values)))


def _plain(text: str) -> bool:
    """Printable ASCII: what :func:`~flaketui.sanitize.visible` leaves as it is."""
    return text.isascii() and text.isprintable()


def _names(values: Sequence[str]) -> list[str]:
    """Task names made visible: a chunk of printable ASCII names (the common case) as it is."""
    if _plain("".join(values)):
        return list(values)
    return [v if _plain(v) else visible(v) for v in values]


def widest_names(names: Sequence[str]) -> int:
    """The widest name once made visible: printable ASCII names by their length, the others
    (escapes, wide or combining characters) one by one."""
    if _plain("".join(names)):
        return max(map(len, names), default=0)
    return max((len(t) if _plain(t) else cell_width(visible(t)) for t in names), default=0)


ELLIPSIS = "…"


def middle_cut(name: str, width: int, tail: int | None = None) -> str:
    """``name`` in at most ``width`` cells, an ellipsis in the middle when it is longer.

    The last path segment (from the last ``/``) is kept whole when it takes at most two
    thirds of the room: ``hypothesis_…/mystery_func_7``; otherwise both ends get half.
    ``tail``: keep that many characters of the end instead (see :func:`cut_names`).
    """
    if cell_width(name) <= width:
        return name
    if width < 3:
        return name[:width]
    room = width - 1
    if tail is None:
        slash = name.rfind("/")
        tail = len(name) - slash if 0 < slash and len(name) - slash <= room * 2 // 3 else room // 2
    tail = max(0, min(tail, room))
    cut = name[:room - tail] + ELLIPSIS + name[len(name) - tail:]
    while cell_width(cut) > width:  # wide characters: give way from the head, then the tail
        room -= 1
        if room - tail < 0:
            tail -= 1
        cut = name[:max(0, room - tail)] + ELLIPSIS + name[len(name) - tail:] if tail else name[:room] + ELLIPSIS
    return cut


def cut_names(names: Sequence[str], width: int) -> list[str]:
    """Each of ``names`` in at most ``width`` cells, cut in the middle (:func:`middle_cut`),
    keeping what tells them apart: names that would look alike once cut
    (``blind-maze-explorer-algorithm.easy`` and ``.hard``) are cut again with more of their
    end kept, then more of their start, until they differ (or no cut can tell them apart).
    """
    cuts = [middle_cut(n, width) for n in names]
    if width < 3:
        return cuts
    seen: dict[str, set[str]] = {}
    for name, cut in zip(names, cuts, strict=True):
        if cut != name:
            seen.setdefault(cut, set()).add(name)
    alike = {cut: group for cut, group in seen.items() if len(group) > 1}
    if not alike:
        return cuts
    better: dict[str, str] = {}
    room = width - 1
    for group in alike.values():
        members = sorted(group)
        for tail in [*range(room // 2 + 1, room + 1), *range(room // 2 - 1, -1, -1)]:
            tried = [middle_cut(n, width, tail) for n in members]
            if len(set(tried)) == len(members):
                better.update(zip(members, tried, strict=True))
                break
        else:
            tried = _cut_round_difference(members, width)
            if len(set(tried)) == len(members):
                better.update(zip(members, tried, strict=True))
    return [better.get(name, cut) for name, cut in zip(names, cuts, strict=True)]


def _cut_round_difference(names: Sequence[str], width: int) -> list[str]:
    """Each of ``names`` (alike at both ends once cut) cut to show where it parts from the others:
    a few cells of its start, ``…``, its text from the word in which it first differs from every
    other name, ``…``, a few cells of its end (``[mo…data_usage_exceeded|user_…ne]``). τ² telecom
    ids share a long start and end and differ in the middle, where no single cut reaches."""
    keep = max(1, (width - 2) // 8)
    out = []
    for n in names:
        lead = max(len(os.path.commonprefix([n, m])) for m in names if m is not n)
        back = max((n.rfind(c, 0, lead) for c in "|]_-/.:"), default=-1)
        start = back + 1 if lead - 12 <= back else lead
        head = n[:min(keep, start)]
        if len(head) + 1 + len(n) - start <= width:
            out.append(head + ELLIPSIS + n[start:] if start > len(head) else n[:width])
            continue
        middle = width - len(head) - 2 - keep
        out.append(head + (ELLIPSIS if start > len(head) else "") + n[start:start + middle] + ELLIPSIS + n[-keep:])
    return out


def _label(v: str | None) -> str:
    return visible(v or "")


def _counts(values: Any) -> Coded:
    return coded_each(values, lambda x: str(int(x)))


def _rates(values: Any) -> Coded:
    return coded_each(values, fmt.rate)


def _intervals(iv: Any) -> Coded:
    return coded_pairs(iv.low, iv.high, fmt.interval, fmt.DASH)


def _rule_of_three_pairs(st: TaskStats) -> tuple[np.ndarray, np.ndarray, Callable[[float, float], str]]:
    """Each task's bound (NaN where none is shown: a flaky task, or fewer than two trials), whether it
    always passed, and the text of the two."""
    n = np.asarray(st.n)
    bounds = np.where(n >= 2, np.asarray(st.rule_of_three, dtype=np.float64), np.nan)
    passed = (np.asarray(st.passes) == n).astype(np.float64)
    return bounds, passed, lambda b, p: f"{'fail' if p else 'pass'} < {b:.3g}"


def _rule_of_three(st: TaskStats) -> Coded:
    """``fail < 0.221`` for a task that always passed, ``pass < 0.221`` for one that always
    failed, empty for a flaky one (:func:`~flaketui.output.columns.rule_of_three_text`)."""
    return coded_pairs(*_rule_of_three_pairs(st), "")


def _csv_text(v: str | None) -> str:
    return "" if v is None else csv_cell(v)


def _csv_names(values: Sequence[str]) -> list[str]:
    """Task names for CSV: a printable ASCII name starting with a letter or digit is its own
    cell (never a formula); any other goes through :func:`~flaketui.sanitize.csv_cell`."""
    return [v if v[:1].isalnum() and _plain(v) else csv_cell(v) for v in values]


def _csv_counts(values: Any) -> list[Coded]:
    """Whole numbers (the CSV writer writes each as ``str`` of the int)."""
    return [coded_each(values, int)]


def _csv_intervals(iv: Any) -> list[Coded]:
    """The low and high cells; both empty where either bound is missing."""
    pairs = coded_pairs(iv.low, iv.high, lambda lo, hi: (csv_number(lo), csv_number(hi)), ("", ""))
    return [Coded([p[0] for p in pairs.texts], pairs.codes), Coded([p[1] for p in pairs.texts], pairs.codes)]


_CODED: dict[str, Callable[[TaskStats], Coded]] = {
    "group": lambda st: _coded_labels(st.groups, _label),
    "class": lambda st: _coded_labels(st.classes, _label),
    "n": lambda st: _counts(st.n),
    "passes": lambda st: _counts(st.passes),
    "errored": lambda st: _counts(st.errored),
    "p_hat": lambda st: _rates(st.p_hat),
    "pass_at_k": lambda st: _rates(st.pass_at_k),
    "pass_hat_k": lambda st: _rates(st.pass_hat_k),
    "flakiness": lambda st: _rates(st.flakiness),
    "p_hat_ci": lambda st: _intervals(st.p_hat_ci),
    "pass_hat_k_ci": lambda st: _intervals(st.pass_hat_k_ci),
    "rule_of_three": _rule_of_three,
}
"""Each column of :data:`~flaketui.output.columns.TASK_COLUMNS` (but the name) made at once, by key."""

_CSV: dict[str, Callable[[TaskStats], list[Coded]]] = {
    "group": lambda st: [_coded_labels(st.groups, _csv_text)],
    "class": lambda st: [_coded_labels(st.classes, _csv_text)],
    "n": lambda st: _csv_counts(st.n),
    "passes": lambda st: _csv_counts(st.passes),
    "errored": lambda st: _csv_counts(st.errored),
    "p_hat": lambda st: [coded_each(st.p_hat, csv_number)],
    "pass_at_k": lambda st: [coded_each(st.pass_at_k, csv_number)],
    "pass_hat_k": lambda st: [coded_each(st.pass_hat_k, csv_number)],
    "flakiness": lambda st: [coded_each(st.flakiness, csv_number)],
    "p_hat_ci": lambda st: _csv_intervals(st.p_hat_ci),
    "pass_hat_k_ci": lambda st: _csv_intervals(st.pass_hat_k_ci),
}
"""The same for the CSV cells (but the name), one per CSV column."""

_WIDEST: dict[str, Callable[[TaskStats], int | None]] = {
    "group": lambda st: max((cell_width(_label(v)) for v in set(st.groups)), default=0),
    "class": lambda st: max((cell_width(_label(v)) for v in set(st.classes)), default=0),
    "n": lambda st: _widest_count(st.n),
    "passes": lambda st: _widest_count(st.passes),
    "errored": lambda st: _widest_count(st.errored),
    "p_hat": lambda st: _widest_decimal(st.p_hat, 3),
    "pass_at_k": lambda st: _widest_decimal(st.pass_at_k, 3),
    "pass_hat_k": lambda st: _widest_decimal(st.pass_hat_k, 3),
    "flakiness": lambda st: _widest_decimal(st.flakiness, 3),
    "p_hat_ci": lambda st: _widest_interval(st.p_hat_ci),
    "pass_hat_k_ci": lambda st: _widest_interval(st.pass_hat_k_ci),
    "rule_of_three": _widest_rule_of_three,
}
"""Columns whose widest cell follows from the values' range or distinct values (None: it does
not here)."""
