"""A column's values made once per distinct value: a per-task column holds few distinct
values (they follow from the counts), so each is formatted (or made a JSON object) once
and each task keeps the index of its own (:class:`Coded`).

Used for the JSON columns (:func:`flaketui.output.columns.floats`, ``intervals``: equal
values share one object) and for the text and CSV cells (:mod:`flaketui.output.cells`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Coded:
    """A column's cells as its distinct values and, per task, the index of its value."""

    texts: list[Any]
    codes: np.ndarray

    def cells(self) -> list[Any]:
        """Every task's cell (tasks with equal values share one object)."""
        return list(map(self.texts.__getitem__, self.codes.tolist()))


def coded_each(values: Any, one: Callable[[float], Any]) -> Coded:
    """``one(x)`` for each float of ``values``, called once per distinct value."""
    arr = np.asarray(values, dtype=np.float64).ravel()
    if negative_zero(arr):  # np.unique takes -0.0 for 0.0; formats and JSON tell them apart
        return Coded([one(x) for x in arr.tolist()], np.arange(arr.size))
    uniq, inv = np.unique(arr, return_inverse=True)  # NaNs collapse into one
    return Coded([one(x) for x in uniq.tolist()], inv.ravel())


def coded_pairs(first: Any, second: Any, one: Callable[[float, float], Any], empty: Any) -> Coded:
    """``one(a, b)`` of each pair of floats (``empty`` where either is NaN), once per distinct
    pair (an interval's bounds; a bound and a flag)."""
    lo = np.asarray(first, dtype=np.float64).ravel()
    hi = np.asarray(second, dtype=np.float64).ravel()
    if negative_zero(lo) or negative_zero(hi):
        return Coded([empty if a != a or b != b else one(a, b) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)],
                     np.arange(lo.size))
    low, low_at = np.unique(lo, return_inverse=True)  # each side's distinct values (NaNs as one),
    high, high_at = np.unique(hi, return_inverse=True)  # then the distinct pairs of them
    pairs, inv = np.unique(low_at.ravel() * len(high) + high_at.ravel(), return_inverse=True)
    firsts, seconds = low[pairs // len(high)].tolist(), high[pairs % len(high)].tolist()
    return Coded([empty if a != a or b != b else one(a, b) for a, b in zip(firsts, seconds, strict=True)], inv.ravel())


def negative_zero(arr: np.ndarray) -> bool:
    """Whether ``arr`` holds a -0.0 (which :func:`numpy.unique` would merge with 0.0)."""
    return bool((np.signbit(arr) & (arr == 0)).any())
