"""pass@k and pass^k as curves over k, and the spread of p̂ over tasks.

The curve of a suite is the mean over tasks of the per-task unbiased estimates
at each k, never a mean p̂ raised to the power k, and over one set of tasks at
every k: those with at least the largest k shown. A task with fewer trials is
left out of the whole curve (and counted), never out of its last points only,
so the curve never jumps because its denominator changed. Pure numpy: no
Textual, no Rich.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from flaketui.stats.arrays import Floats, Ints
from flaketui.stats.estimators import pass_at_k, pass_hat_k
from flaketui.stats.suite import count_pairs

MAX_POINTS = 40
"""At most this many values of k are evaluated (evenly spaced) for a curve."""


@dataclass(frozen=True)
class KCurve:
    """pass@k and pass^k at each k in ``ks`` (NaN where no task has k trials)."""

    ks: Ints
    pass_at: Floats
    pass_hat: Floats
    tasks: Ints
    """Tasks the curve averages over, per k: the same at every k (those with at least the
    largest k, ``ks[-1]``, trials)."""
    left_out: int = 0
    """Tasks with a trial but fewer than ``ks[-1]``: left out of every point."""


def k_values(k_max: int, points: int = MAX_POINTS, include: int | None = None) -> Ints:
    """1..k_max, thinned to at most ``points`` evenly spaced values (always 1 and k_max, and
    ``include`` when it is in 1..k_max: the k the user chose is a point of the curve)."""
    if k_max < 1:
        return np.empty(0, dtype=np.int64)
    if k_max <= points:
        return np.arange(1, k_max + 1, dtype=np.int64)
    ks = np.round(np.linspace(1, k_max, points)).astype(np.int64)
    if include is not None and 1 <= include <= k_max:
        ks = np.append(ks, include)
    return np.unique(ks)


def curve_top(n: ArrayLike, include: int | None = None) -> int:
    """The largest k a curve shows by default: the trials every task with a trial has, or the
    chosen k ``include`` when it is larger (capped at the largest n); 0 without trials.

    >>> curve_top([5, 5, 4, 0], include=5), curve_top([8, 9], include=5), curve_top([3], include=5)
    (5, 8, 3)
    """
    n_arr = np.atleast_1d(np.asarray(n, dtype=np.int64))
    n_arr = n_arr[n_arr > 0]
    if not n_arr.size:
        return 0
    return min(int(n_arr.max()), max(int(n_arr.min()), include or 0))


def k_curve(n: ArrayLike, c: ArrayLike, k_max: int | None = None, *, include: int | None = None) -> KCurve:
    """Suite (or single-task) curves of pass@k (Chen et al. 2021) and pass^k (Yao et al. 2024),
    over the one set of tasks with at least ``k_max`` trials.

    Parameters
    ----------
    n, c : array_like
        Trials and passes per task (scalars for one task).
    k_max : int, optional
        Largest k; default :func:`curve_top` (every task's trials, or the chosen k when larger).
        Capped at the largest n.
    include : int, optional
        A k that is always a point of the curve when it is in range (the chosen k), even
        where a long range is thinned.

    Returns
    -------
    KCurve
        Task-averaged estimates per k.

    References
    ----------
    .. [1] M. Chen et al., arXiv:2107.03374, 2021 (pass@k).
    .. [2] S. Yao et al., "τ-bench", arXiv:2406.12045, 2024 (pass^k).
    """
    n_arr = np.atleast_1d(np.asarray(n, dtype=np.int64))
    c_arr = np.atleast_1d(np.asarray(c, dtype=np.int64))
    top = int(n_arr.max()) if n_arr.size else 0
    last = curve_top(n_arr, include) if k_max is None else min(k_max, top)
    ks = k_values(last, include=include)
    at = np.full(ks.shape, np.nan)
    hat = np.full(ks.shape, np.nan)
    # each estimate once per distinct (n, c) pair, weighted by its tasks (a million tasks of
    # a few trials have a handful of pairs): the same mean over tasks
    un, uc, inv = count_pairs(n_arr, c_arr)
    weight = np.bincount(inv, minlength=len(un)).astype(np.float64)
    ok = un >= max(last, 1)  # one set of tasks for every k
    used = int(weight[ok].sum())
    un_f, uc_f, w = un[ok].astype(np.float64), uc[ok].astype(np.float64), weight[ok]
    if used:
        for i, k in enumerate(ks.tolist()):
            at[i] = float(w @ pass_at_k(un_f, uc_f, k)) / used
            hat[i] = float(w @ pass_hat_k(un_f, uc_f, k)) / used
    left_out = int(np.sum((n_arr > 0) & (n_arr < last)))
    return KCurve(ks, at, hat, np.full(ks.shape, used, dtype=np.int64), left_out)


def histogram(values: ArrayLike, bins: int = 10) -> Ints:
    """Counts of values in ``bins`` equal bins over [0, 1] (1.0 falls in the last; NaN left out)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    idx = np.clip((v * bins).astype(np.int64), 0, bins - 1)
    return np.bincount(idx, minlength=bins).astype(np.int64)
