"""Sorting shared by the screens that show a :class:`~flaketui.app.widgets.task_table.TaskTable`."""

from __future__ import annotations

import numpy as np


def sorted_rows(idx: np.ndarray, values: np.ndarray, reverse: bool, tiebreak: np.ndarray) -> np.ndarray:
    """``idx`` ordered by ``values`` (missing values last in either direction), ties by ``tiebreak``."""
    missing = np.isnan(values)
    signed = np.where(missing, 0.0, -values if reverse else values)
    return idx[np.lexsort((tiebreak, signed, missing))]


class SortActions:
    """Sort actions for a screen with reactives ``sort_key`` and ``sort_reverse``.

    The screen says which keys it has (:meth:`sort_keys`) and which read best
    largest first (:meth:`descending_by_default`); its watchers re-sort.
    """

    sort_key: str
    sort_reverse: bool

    def sort_keys(self) -> list[str]:
        """Keys of the sortable columns, in table order."""
        raise NotImplementedError

    def descending_by_default(self, key: str) -> bool:
        """Whether column ``key`` first sorts largest first."""
        raise NotImplementedError

    def action_sort_by(self, key: str) -> None:
        """Sort by column ``key``; sorting by the same column again reverses the order."""
        if key == self.sort_key:
            self.sort_reverse = not self.sort_reverse
            return
        self.sort_key = key
        self.sort_reverse = self.descending_by_default(key)

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
