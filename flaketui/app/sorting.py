"""Sorting shared by the screens that show a :class:`~flaketui.app.widgets.task_table.TaskTable`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from flaketui.app.widgets.task_table import TaskTable


def sorted_rows(idx: np.ndarray, values: np.ndarray, reverse: bool, tiebreak: np.ndarray) -> np.ndarray:
    """``idx`` ordered by ``values`` (missing values last in either direction), ties by
    ``tiebreak`` (then by their place in ``idx``): :func:`sorted_order` of those rows."""
    return idx[sorted_order(values, reverse, np.argsort(tiebreak, kind="stable"))]


def sorted_order(values: np.ndarray, reverse: bool, ties: np.ndarray) -> np.ndarray:
    """Every row ordered by ``values`` (missing values last in either direction), ties in
    the order ``ties`` (a permutation of the rows, e.g. the natural order of the names).

    One stable argsort of values already in ``ties`` order (numpy puts NaN last, and -NaN
    is NaN): a filtered table takes its rows from it in order.
    """
    ranked = values[ties]
    return ties[np.argsort(-ranked if reverse else ranked, kind="stable")]


class SortActions:
    """Sort actions for a screen with reactives ``sort_key`` and ``sort_reverse``.

    The screen gives the table (:meth:`sort_table`) whose columns say how they sort
    (:attr:`~flaketui.app.widgets.task_table.Column.sort`, ``descending``); its
    watchers of ``sort_key`` and ``sort_reverse`` re-sort.
    """

    sort_key: str
    sort_reverse: bool
    sort_settling: bool = False
    """True while :meth:`action_sort_by` sets the direction before the key (one sort, not two)."""

    def sort_table(self) -> TaskTable:
        """The table that is sorted."""
        raise NotImplementedError

    def sort_keys(self) -> list[str]:
        """Keys of the sortable columns, in table order."""
        return [c.key for c in self.sort_table().columns if c.sort is not None]

    def descending_by_default(self, key: str) -> bool:
        """Whether column ``key`` first sorts largest first."""
        column = self.sort_table().column(key)
        return True if column is None else column.descending

    def column_sort_values(self, key: str, rows: int) -> np.ndarray:
        """Values to sort the ``rows`` data rows by for column ``key`` (floats; NaN sort last).

        A column not shown (say, a metric the run now shown lacks) sorts nothing: all NaN,
        so the rows fall back to the tiebreak.
        """
        column = self.sort_table().column(key)
        if column is None or column.sort is None:
            return np.full(rows, np.nan)
        return column.sort()

    def on_task_table_header_clicked(self, event: TaskTable.HeaderClicked) -> None:
        """A click on a column's header sorts by it (again: the other way)."""
        self.action_sort_by(event.key)

    def action_sort_by(self, key: str) -> None:
        """Sort by column ``key``; sorting by the same column again reverses the order."""
        if key == self.sort_key:
            self.sort_reverse = not self.sort_reverse
            return
        # The direction first, then the key: both through their watchers, so that a table
        # data-bound to them follows; a screen's direction watcher skips its sort while
        # :attr:`sort_settling` (the key's watcher then sorts once).
        self.sort_settling = True
        try:
            self.sort_reverse = self.descending_by_default(key)
        finally:
            self.sort_settling = False
        self.sort_key = key

    def action_sort_next(self) -> None:
        """Sort by the next column to the right (wraps around)."""
        keys = self.sort_keys()
        if not keys:
            return
        pos = keys.index(self.sort_key) if self.sort_key in keys else -1
        self.action_sort_by(keys[(pos + 1) % len(keys)])

    def action_sort_reverse(self) -> None:
        """Flip between ascending and descending."""
        self.sort_reverse = not self.sort_reverse
