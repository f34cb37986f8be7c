"""Every cell of a report column at once: the table's text and the CSV cells of a whole run
(or chunk of one), computed a column at a time instead of a cell at a time.

A per-task column holds few distinct values (they follow from the counts), so each distinct
value is formatted once and the cells are picked from those (``np.unique``): a million
tasks' column in a few tens of milliseconds, where :attr:`TaskColumn.text` per cell takes a
second. :func:`cell_texts` and :func:`csv_columns` give exactly what
:attr:`~flaketui.output.columns.TaskColumn.text` and ``csv_cells(json(st))`` give (tests
check every column); a column not known here falls back to those.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flaketui.output import formatting as fmt
from flaketui.output.columns import TaskColumn, csv_number
from flaketui.sanitize import csv_cell, visible
from flaketui.stats.suite import TaskStats


def cell_texts(col: TaskColumn, st: TaskStats) -> list[str]:
    """``col.text(st, i)`` of every task ``i``."""
    texts = _TEXTS.get(col.key)
    return texts(st) if texts is not None else [col.text(st, i) for i in range(len(st))]


def csv_columns(col: TaskColumn, st: TaskStats) -> list[list[Any]]:
    """``col.csv_cells(col.json(st))``: one list of cells per name of ``col.csv_names``."""
    cells = _CSV.get(col.key)
    return cells(st) if cells is not None else col.csv_cells(col.json(st))


def widest(col: TaskColumn, st: TaskStats) -> int | None:
    """The widest of ``col``'s cells, in terminal cells, from its distinct values alone (no
    list of every cell); None for a column not known here."""
    width = _WIDEST.get(col.key)
    return None if width is None else width(st)


def cell_width(text: str) -> int:
    """``text``'s width on a terminal (East Asian wide characters take two cells)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def format_each(values: Any, one: Callable[[float], Any]) -> list[Any]:
    """``one(x)`` for each float of ``values``, called once per distinct value."""
    arr = np.asarray(values, dtype=np.float64).ravel()
    if _negative_zero(arr):  # np.unique takes -0.0 for 0.0; formats tell them apart
        return [one(x) for x in arr.tolist()]
    uniq, inv = np.unique(arr, return_inverse=True)  # NaNs collapse into one
    made = [one(x) for x in uniq.tolist()]
    return list(map(made.__getitem__, inv.ravel().tolist()))


def format_pairs(first: Any, second: Any, one: Callable[[float, float], Any], empty: Any) -> list[Any]:
    """``one(a, b)`` of each pair of floats (``empty`` where either is NaN), once per distinct
    pair (an interval's bounds; a bound and a flag)."""
    lo = np.asarray(first, dtype=np.float64).ravel()
    hi = np.asarray(second, dtype=np.float64).ravel()
    if _negative_zero(lo) or _negative_zero(hi):
        return [empty if a != a or b != b else one(a, b) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]
    pairs = np.empty(lo.shape, dtype=np.complex128)  # one complex per pair: np.unique orders them
    pairs.real, pairs.imag = lo, hi
    pairs[np.isnan(lo) | np.isnan(hi)] = np.nan
    uniq, inv = np.unique(pairs, return_inverse=True)
    made = [empty if z != z else one(z.real, z.imag) for z in uniq.tolist()]
    return list(map(made.__getitem__, inv.ravel().tolist()))


def _distinct_each(values: Any, one: Callable[[float], str]) -> set[str]:
    """The texts :func:`format_each` would make, each once."""
    arr = np.asarray(values, dtype=np.float64).ravel()
    return {one(x) for x in (arr.tolist() if _negative_zero(arr) else np.unique(arr).tolist())}


def _distinct_pairs(first: Any, second: Any, one: Callable[[float, float], str], empty: str) -> set[str]:
    """The texts :func:`format_pairs` would make, each once."""
    lo = np.asarray(first, dtype=np.float64).ravel()
    hi = np.asarray(second, dtype=np.float64).ravel()
    if _negative_zero(lo) or _negative_zero(hi):
        return set(format_pairs(lo, hi, one, empty))
    pairs = np.empty(lo.shape, dtype=np.complex128)
    pairs.real, pairs.imag = lo, hi
    pairs[np.isnan(lo) | np.isnan(hi)] = np.nan
    return {empty if z != z else one(z.real, z.imag) for z in np.unique(pairs).tolist()}


def _widest_names(names: Any) -> int:
    """The widest name once made visible: printable ASCII names by their length, the others
    (escapes, wide or combining characters) one by one."""
    plain = max((len(t) for t in names if t.isascii() and t.isprintable()), default=0)
    odd = [cell_width(visible(t)) for t in names if not (t.isascii() and t.isprintable())]
    return max(plain, *odd) if odd else plain


def _widest(texts: set[str]) -> int:
    return max(map(cell_width, texts), default=0)


def _negative_zero(arr: np.ndarray) -> bool:
    return bool((np.signbit(arr) & (arr == 0)).any())


def _texts(values: Any) -> list[str]:
    """A text column's cells (``None`` shown empty), made visible (printable ASCII, most names,
    is left as it is without a call)."""
    return [v if v and v.isascii() and v.isprintable() else visible(v or "") for v in values]


def _labels(values: Any, one: Callable[[Any], str]) -> list[str]:
    """``one`` of each of a few labels repeated over the tasks (classes, groups), once each."""
    made = {v: one(v) for v in set(values)}
    return list(map(made.__getitem__, values))


def _counts(values: Any) -> list[str]:
    return format_each(values, lambda x: str(int(x)))


def _rates(values: Any) -> list[str]:
    return format_each(values, fmt.rate)


def _intervals(iv: Any) -> list[str]:
    return format_pairs(iv.low, iv.high, fmt.interval, fmt.DASH)


def _rule_of_three_pairs(st: TaskStats) -> tuple[np.ndarray, np.ndarray, Callable[[float, float], str]]:
    """Each task's bound (NaN where none is shown), whether it always passed, and the text of
    the two (:func:`~flaketui.output.columns.rule_of_three_text`)."""
    n = np.asarray(st.n)
    bounds = np.where(n != 0, np.asarray(st.rule_of_three, dtype=np.float64), np.nan)
    passed = (np.asarray(st.passes) == n).astype(np.float64)
    return bounds, passed, lambda b, p: f"{'fail' if p else 'pass'} < {b:.3g}"


def _rule_of_three(st: TaskStats) -> list[str]:
    """``fail < 0.221`` / ``pass < 0.221``, empty for a flaky task."""
    return format_pairs(*_rule_of_three_pairs(st), "")


def _csv_text(v: str | None) -> str:
    return "" if v is None else csv_cell(v)


def _csv_names(values: Any) -> list[list[str]]:
    """Task names for CSV: a printable ASCII name starting with a letter or digit is its own
    cell (never a formula); any other goes through :func:`~flaketui.sanitize.csv_cell`."""
    return [[v if v[:1].isalnum() and v.isascii() and v.isprintable() else csv_cell(v) for v in values]]


def _csv_rates(values: Any) -> list[list[str]]:
    return [format_each(values, csv_number)]


def _csv_intervals(iv: Any) -> list[list[str]]:
    """Both cells empty where either bound is missing."""
    pairs = format_pairs(iv.low, iv.high, lambda lo, hi: (csv_number(lo), csv_number(hi)), ("", ""))
    return [[p[0] for p in pairs], [p[1] for p in pairs]]


_TEXTS: dict[str, Callable[[TaskStats], list[str]]] = {
    "task": lambda st: _texts(st.tasks),
    "group": lambda st: _labels(st.groups, lambda v: visible(v or "")),
    "class": lambda st: _labels(st.classes, lambda v: visible(v or "")),
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
"""Each column of :data:`~flaketui.output.columns.TASK_COLUMNS` whose cells are made at once, by key."""

_CSV: dict[str, Callable[[TaskStats], list[list[Any]]]] = {
    "task": lambda st: _csv_names(st.tasks),
    "group": lambda st: [_labels(st.groups, _csv_text)],
    "class": lambda st: [_labels(st.classes, _csv_text)],
    "n": lambda st: [np.asarray(st.n).tolist()],
    "passes": lambda st: [np.asarray(st.passes).tolist()],
    "errored": lambda st: [np.asarray(st.errored).tolist()],
    "p_hat": lambda st: _csv_rates(st.p_hat),
    "pass_at_k": lambda st: _csv_rates(st.pass_at_k),
    "pass_hat_k": lambda st: _csv_rates(st.pass_hat_k),
    "flakiness": lambda st: _csv_rates(st.flakiness),
    "p_hat_ci": lambda st: _csv_intervals(st.p_hat_ci),
    "pass_hat_k_ci": lambda st: _csv_intervals(st.pass_hat_k_ci),
}
"""The same for the CSV cells."""

_WIDEST: dict[str, Callable[[TaskStats], int]] = {
    "task": lambda st: _widest_names(st.tasks),
    "group": lambda st: _widest({visible(v or "") for v in set(st.groups)}),
    "class": lambda st: _widest({visible(v or "") for v in set(st.classes)}),
    "n": lambda st: _widest(_distinct_each(st.n, lambda x: str(int(x)))),
    "passes": lambda st: _widest(_distinct_each(st.passes, lambda x: str(int(x)))),
    "errored": lambda st: _widest(_distinct_each(st.errored, lambda x: str(int(x)))),
    "p_hat": lambda st: _widest(_distinct_each(st.p_hat, fmt.rate)),
    "pass_at_k": lambda st: _widest(_distinct_each(st.pass_at_k, fmt.rate)),
    "pass_hat_k": lambda st: _widest(_distinct_each(st.pass_hat_k, fmt.rate)),
    "flakiness": lambda st: _widest(_distinct_each(st.flakiness, fmt.rate)),
    "p_hat_ci": lambda st: _widest(_distinct_pairs(st.p_hat_ci.low, st.p_hat_ci.high, fmt.interval, fmt.DASH)),
    "pass_hat_k_ci": lambda st: _widest(_distinct_pairs(st.pass_hat_k_ci.low, st.pass_hat_k_ci.high,
                                                        fmt.interval, fmt.DASH)),
    "rule_of_three": lambda st: _widest(_distinct_pairs(*_rule_of_three_pairs(st), "")),
}
"""The widest cell of each column of :data:`_TEXTS`, from its distinct values."""
