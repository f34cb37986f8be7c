"""Allocating a budget of further trials where they shrink the suite's variance most.

The variance coefficient of a task's pass^k (delta method at the Wilson
centre), and a greedy allocation of a budget: risk minimums first, then each
trial to the task whose variance term falls most. Pure numpy: no Textual, no Rich.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from flaketui.stats.arrays import Floats, Ints
from flaketui.stats.estimators import CONFIDENCE, z_value
from flaketui.stats.special import lbeta, log_choose


def shrunk_rate(n: ArrayLike, c: ArrayLike, confidence: float = CONFIDENCE) -> Floats:
    """The centre of the Wilson interval, (c + z²/2)/(n + z²): never 0 or 1.

    Used where a plug-in p̂ of 0 or 1 would claim a variance of zero (a task
    that passed 12 of 12 is not known to pass forever).

    References
    ----------
    .. [1] A. Agresti, B. A. Coull, "Approximate is better than 'exact' for
       interval estimation of binomial proportions", The American
       Statistician 52(2):119-126, 1998. doi:10.1080/00031305.1998.10480550

    Examples
    --------
    >>> round(float(shrunk_rate(12, 12)), 4)
    0.8788
    """
    z2 = z_value(confidence) ** 2
    n_arr = np.asarray(n, dtype=np.float64)
    c_arr = np.asarray(c, dtype=np.float64)
    return (c_arr + z2 / 2) / (n_arr + z2)


def pass_hat_k_variance_coef(
    n: ArrayLike, c: ArrayLike, k: int, confidence: float = CONFIDENCE
) -> Floats:
    """The a in Var(pass^k estimate) ≈ a / n, by the delta method at the shrunk rate.

    ``a = k² p̃^(2k−2) · p̃(1 − p̃)`` with p̃ from :func:`shrunk_rate`:
    the derivative of p^k squared times the Bernoulli variance.

    Notes
    -----
    The delta method gives Var(g(p̂)) ≈ g′(p)² p(1 − p)/n for g(p) = p^k. It
    is evaluated at the Wilson centre rather than at p̂ because at p̂ = 0 or 1
    the plug-in variance is zero, which would claim a task that passed 12 of
    12 needs no further trial. The unbiased pass^k estimator C(c,k)/C(n,k)
    has the same first-order variance.

    References
    ----------
    .. [1] G. W. Oehlert, "A note on the delta method", The American
       Statistician 46(1):27-29, 1992. doi:10.1080/00031305.1992.10475842
    .. [2] S. Yao et al., "τ-bench", arXiv:2406.12045, 2024 (pass^k).
    .. [3] A. Agresti, B. A. Coull, The American Statistician 52(2):119-126, 1998.
    """
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k ({k!r}) must be a whole number >= 1")
    p = shrunk_rate(n, c, confidence)
    return k * k * p ** (2 * k - 2) * p * (1 - p)


@dataclass(frozen=True)
class Allocation:
    """Extra trials per unit (a task of a run) and how the budget was spent."""

    extra: Ints
    topup: Ints
    """The part of ``extra`` given to reach a risk minimum."""
    budget: int
    spent: int
    reason: str
    """Why part of the budget is left, or empty when all of it was spent."""


def _gain(a: Floats, m: Floats) -> Floats:
    """Variance removed by the (m+1)-th trial: a/m − a/(m+1) = a/(m(m+1))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(m > 0, a / (m * (m + 1)), np.inf)


def _steps_at_least(a: Floats, m0: Floats, cap: Floats,
                    lam: float) -> Floats:
    """Per unit, how many next steps from m0 have gain ≥ lam (at most cap)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # a/(m(m+1)) >= lam  <=>  m <= (−1 + √(1 + 4a/lam))/2
        m_max = np.floor((-1 + np.sqrt(1 + 4 * a / lam)) / 2)
    m_max = np.nan_to_num(m_max, nan=0.0, posinf=1e18)
    # Correct the float rounding of the closed form by one step either way.
    m_max = np.where(_gain(a, m_max + 1) >= lam, m_max + 1, m_max)
    m_max = np.where((m_max >= 1) & (_gain(a, m_max) < lam), m_max - 1, m_max)
    steps = np.clip(m_max - m0 + 1, 0, cap)
    return np.where(a > 0, steps, 0.0)


def allocate(
    n: ArrayLike,
    a: ArrayLike,
    budget: int,
    eligible: ArrayLike,
    cap: ArrayLike | None = None,
    minimum: ArrayLike | None = None,
) -> Allocation:
    """Spend ``budget`` further trials to shrink Σ a_i / n_i most.

    Parameters
    ----------
    n : array_like of int
        Trials each unit has now.
    a : array_like of float
        Variance coefficients: unit i adds a_i / n_i to the variance being
        shrunk (:func:`pass_hat_k_variance_coef` divided by T² for a suite mean).
    budget : int
        Further trials to spend, ≥ 0.
    eligible : array_like of bool
        Units that may receive trials beyond their minimum (undecided ones).
    cap : array_like of int, optional
        Most further trials a unit may get beyond its minimum (e.g. until its
        Wilson interval reaches a target width). Default: no cap.
    minimum : array_like of int, optional
        Trials each unit must have (a risk tier's minimum n). Reaching them
        comes first, decided or not, the largest shortfall first.

    Returns
    -------
    Allocation
        ``extra`` sums to ``budget`` unless every eligible unit reached its cap
        (then ``reason`` says so).

    Notes
    -----
    After the minimums, each trial goes to the unit whose variance term falls
    most: a_i/m − a_i/(m + 1). Each term is convex and decreasing in m, so
    this greedy choice is optimal for the separable objective (Fox 1966;
    Ibaraki & Katoh 1988, ch. 4). For large budgets a threshold on the gain
    is found by bisection first, which gives the same allocation as trial by
    trial; ties go to the earlier unit.

    References
    ----------
    .. [1] B. Fox, "Discrete optimization via marginal analysis", Management
       Science 13(3):210-216, 1966. doi:10.1287/mnsc.13.3.210
    .. [2] T. Ibaraki, N. Katoh, "Resource Allocation Problems: Algorithmic
       Approaches", MIT Press, 1988.

    Examples
    --------
    >>> allocate([10, 10], [4.0, 3.0], 3, [True, True]).extra.tolist()
    [2, 1]
    """
    if not isinstance(budget, (int, np.integer)) or isinstance(budget, bool) or budget < 0:
        raise ValueError(f"budget ({budget!r}) must be a whole number >= 0")
    n_arr = np.asarray(n, dtype=np.int64)
    a_arr = np.asarray(a, dtype=np.float64)
    elig = np.asarray(eligible, dtype=bool)
    units = n_arr.shape[0]
    no_cap = np.iinfo(np.int64).max // 4
    cap_arr = np.full(units, no_cap) if cap is None else np.asarray(cap, np.int64)
    min_arr = np.zeros(units, np.int64) if minimum is None else np.asarray(minimum, np.int64)
    if np.any(n_arr < 0) or np.any(cap_arr < 0) or np.any(min_arr < 0):
        raise ValueError("trials, caps and minimums must be >= 0")

    # 1. Risk minimums: one trial at a time to the largest shortfall (earlier unit on ties).
    topup, left, spent_all = _minimums(n_arr, min_arr, int(budget))
    if spent_all is not None:
        return spent_all

    # 2. Greedy on the variance, among eligible units below their cap.
    m0 = (n_arr + topup).astype(np.float64)
    room = np.where(elig & (a_arr > 0), cap_arr, 0).astype(np.float64)
    if float(room.sum()) <= left:
        extra = room.astype(np.int64)
    else:
        extra = _greedy(a_arr, m0, room, left)
    total = topup + extra
    spent = int(total.sum())
    reason = ""
    if spent < budget:
        reason = (
            f"{budget - spent:,} of {budget:,} trials left unspent: every other task is decided, "
            "has no uncertainty left to reduce, or reaches the target width with the planned trials"
        )
    return Allocation(total, topup, int(budget), spent, reason)


def _minimums(n: Ints, minimum: Ints, budget: int
              ) -> tuple[Ints, int, Allocation | None]:
    """The trials that bring each unit to its risk minimum, and the budget left after them; when the
    minimums take the whole budget, the allocation that levels the shortfalls (else None)."""
    short = np.maximum(0, minimum - n)
    if int(short.sum()) > budget:
        topup = _level_shortfalls(short, budget)
        return topup, 0, Allocation(topup, topup.copy(), budget, budget, "")
    return short.astype(np.int64), budget - int(short.sum()), None


def _level_shortfalls(short: Ints, left: int) -> Ints:
    """``left`` trials, one at a time to the largest shortfall (ties: earlier unit), ``left`` < Σ short.

    The trials taken one by one are the ``left`` largest (shortfall, −unit) steps, so the
    result is a level L: every shortfall above L is cut to L, and the trials still left go
    one each to the first units whose shortfall is at least L.
    """
    lo, hi = 0, int(short.max())  # above(hi) = 0 <= left < above(0) = Σ short
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if int(np.maximum(0, short - mid).sum()) <= left:
            hi = mid
        else:
            lo = mid
    topup = np.maximum(0, short - hi)
    at_level = np.flatnonzero(short >= hi)
    topup[at_level[: left - int(topup.sum())]] += 1
    return topup.astype(np.int64)


def _greedy(a: Floats, m0: Floats, room: Floats,
            left: int) -> Ints:
    """The ``left`` largest gains over all units (ties: earlier unit), ``left`` < Σ room."""
    # Bulk: every step whose gain is at least a threshold found by bisection (log scale)
    # with steps(hi) <= left < steps(lo); then the rest one by one from a heap.
    open_ = room > 0
    finite = open_ & (m0 > 0)
    extra = np.zeros(a.shape, np.int64)
    if finite.any():
        hi = float(np.max(_gain(a[finite], m0[finite]))) * 2
        lo = float(np.min(_gain(a[finite], m0[finite] + room[finite] - 1))) / 2
        lo = max(lo, 1e-300)
        if float(_steps_at_least(a, m0, room, hi).sum()) <= left:
            for _ in range(2000):
                mid = math.sqrt(lo * hi)
                if not lo < mid < hi or hi / lo < 1 + 1e-12:
                    break
                if float(_steps_at_least(a, m0, room, mid).sum()) <= left:
                    hi = mid
                else:
                    lo = mid
            extra = _steps_at_least(a, m0, room, hi).astype(np.int64)
    rest = left - int(extra.sum())
    # The heap needs only the units whose next gain is among the ``rest`` largest: the rest
    # are the ``rest`` largest steps, and a unit's next step is its largest one.
    gain = _gain(a, m0 + extra)
    units = np.flatnonzero(room > extra)
    if 0 < rest < units.size and not np.isnan(gain[units]).any():
        kth = np.partition(gain[units], units.size - rest)[units.size - rest]
        units = units[gain[units] >= kth]
    heap = list(zip((-gain[units]).tolist(), units.tolist(), strict=True))
    heapq.heapify(heap)
    for _ in range(rest):
        _, i = heapq.heappop(heap)
        extra[i] += 1
        if room[i] > extra[i]:
            heapq.heappush(heap, (-float(a[i] / ((m0[i] + extra[i]) * (m0[i] + extra[i] + 1))), i))
    return extra


CLASS_HORIZON = 64
"""Further trials per task the class-driven allocation looks ahead (its curves' length): enough for a
clean task at a few trials to reach the 36 that call it stable at the default cap."""


def undecided_chance(n: ArrayLike, c: ArrayLike, alpha: ArrayLike, beta: ArrayLike, cap: float,
                     horizon: int = CLASS_HORIZON) -> Floats:
    """The chance a task's class is still ``undetermined`` after m = 0..``horizon`` more trials, per task.

    With the task's posterior Beta(α, β) of its pass rate (the empirical-Bayes posterior,
    :func:`flaketui.stats.empirical_bayes.flaky_posterior`), m more trials bring y passes with
    the beta-binomial predictive law; the class after them is
    :func:`~flaketui.stats.classes.evidence_classes` of (n + m, c + y). The chance of
    ``undetermined`` is the preposterior risk of leaving the task unclassified (Raiffa and
    Schlaifer 1961): the trials that lower it most are those most likely to change the task's
    class.

    Returns
    -------
    ndarray
        Shape (tasks, horizon + 1); 0 for a task already decided.

    References
    ----------
    .. [1] H. Raiffa, R. Schlaifer, *Applied Statistical Decision Theory*, Harvard, 1961
       (preposterior analysis).
    .. [2] J. O. Berger, *Statistical Decision Theory and Bayesian Analysis*, 2nd ed.,
       Springer, 1985, §4.4 (the beta-binomial predictive law).
    """
    from flaketui.stats.classes import UNDETERMINED, evidence_classes

    n_arr = np.atleast_1d(np.asarray(n, dtype=np.int64))
    c_arr = np.atleast_1d(np.asarray(c, dtype=np.int64))
    a = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    b = np.atleast_1d(np.asarray(beta, dtype=np.float64))
    keys = np.stack([n_arr, c_arr, a, b], axis=1)
    pairs, inverse = np.unique(keys, axis=0, return_inverse=True)
    un, uc, ua, ub = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64), pairs[:, 2], pairs[:, 3]
    top = int(un.max()) + horizon if un.size else horizon
    # Whether (N, C) is undetermined, for every N <= top: one table of classes.
    grid_n, grid_c = np.meshgrid(np.arange(top + 1), np.arange(top + 1), indexing="ij")
    ok = grid_c <= grid_n
    table = np.zeros((top + 1, top + 1), dtype=bool)
    table[ok] = np.asarray(evidence_classes(grid_n[ok], grid_c[ok], cap), dtype=object) == UNDETERMINED
    m = np.arange(horizon + 1, dtype=np.float64)
    mm, yy = np.meshgrid(m, m, indexing="ij")
    valid = yy <= mm
    y_ok = np.where(valid, yy, 0.0)
    choose = log_choose(np.where(valid, mm, 0.0), y_ok)
    post_a = ua[:, None, None] + y_ok[None]
    post_b = ub[:, None, None] + np.where(valid, mm - yy, 0.0)[None]
    pmf = np.where(valid[None], np.exp(choose[None] + lbeta(post_a, post_b) - lbeta(ua, ub)[:, None, None]), 0.0)
    big_n = un[:, None, None] + mm.astype(np.int64)[None]
    big_c = uc[:, None, None] + y_ok.astype(np.int64)[None]
    still = table[big_n, np.minimum(big_c, big_n)] & valid[None]
    out = (pmf * still).sum(axis=2)
    return out[np.ravel(inverse)]


def allocate_classes(
    n: ArrayLike,
    c: ArrayLike,
    alpha: ArrayLike,
    beta: ArrayLike,
    budget: int,
    eligible: ArrayLike,
    flaky_cap: float,
    cap: ArrayLike | None = None,
    minimum: ArrayLike | None = None,
    batch: int | ArrayLike | None = None,
) -> Allocation:
    """Spend ``budget`` further trials where they are most likely to decide a task's class.

    Risk minimums first (as :func:`allocate`); then, among the ``eligible`` units (those the
    confidence sequence has not decided: a decided task gets no trial beyond its minimum,
    however often the plan is rerun, which is the anytime-valid stop), trials go greedily by
    the fall per trial of each unit's chance of staying ``undetermined``
    (:func:`undecided_chance`, under its empirical-Bayes posterior Beta(α, β)), looking ahead
    up to :data:`CLASS_HORIZON` trials: a clean task gains nothing from one more trial and
    much from thirty (36 clean trials make it stable at the default cap), so the gain per
    trial is taken over the best number of trials ahead. ``cap`` bounds a unit's trials
    beyond its minimum; ``batch`` the trials one plan gives a unit (one number, or one a unit; the plan is rerun after
    them: a clean task that fails early then drops back, where thirty trials at once would
    have been spent whatever came).

    The allocation looks at the data, so the suite's p̂ and pass^k over all trials are not
    those of a fixed design; the trials each task had before the plan's are (the note the
    plan prints says so).

    References
    ----------
    .. [1] H. Raiffa, R. Schlaifer, *Applied Statistical Decision Theory*, 1961.
    .. [2] P. I. Frazier, W. B. Powell, S. Dayanik, "A knowledge-gradient policy for
       sequential information collection", SIAM J. Control Optim. 47(5):2410-2439,
       2008 (greedy allocation by the value of information).

    Examples
    --------
    A task at 3 of 5 is decided flaky within a few trials; a clean one needs thirty:

    >>> allocate_classes([5, 5], [3, 5], [3.2, 5.2], [2.2, 0.2], 40, [True] * 2, 0.36).extra.tolist()
    [9, 31]
    """
    if not isinstance(budget, (int, np.integer)) or isinstance(budget, bool) or budget < 0:
        raise ValueError(f"budget ({budget!r}) must be a whole number >= 0")
    n_arr = np.asarray(n, dtype=np.int64)
    elig = np.asarray(eligible, dtype=bool)
    units = n_arr.shape[0]
    cap_arr = np.full(units, CLASS_HORIZON) if cap is None else np.minimum(np.asarray(cap, np.int64), CLASS_HORIZON)
    min_arr = np.zeros(units, np.int64) if minimum is None else np.asarray(minimum, np.int64)
    topup, left, spent_all = _minimums(n_arr, min_arr, int(budget))
    if spent_all is not None:
        return spent_all
    room = np.where(elig, cap_arr, 0).astype(np.int64)
    extra = np.zeros(units, np.int64)
    todo = np.flatnonzero(room > 0)
    if left and todo.size:
        risk = undecided_chance(n_arr[todo], np.asarray(c, np.int64)[todo], np.asarray(alpha, np.float64)[todo],
                                np.asarray(beta, np.float64)[todo], flaky_cap)
        steps = np.arange(1, CLASS_HORIZON + 1, dtype=np.float64)
        limit = (np.full(todo.size, CLASS_HORIZON) if batch is None else
                 np.maximum(1, np.broadcast_to(np.asarray(batch, np.int64), (units,))[todo]))

        def best(j: int) -> tuple[float, int]:
            """The largest fall of the chance per trial from unit todo[j]'s trials so far, and its step."""
            at = int(extra[todo[j]])
            reach = int(room[todo[j]]) - at
            if reach <= 0:
                return 0.0, 0
            fall = (risk[j, at] - risk[j, at + 1 : at + 1 + reach]) / steps[:reach]
            k = int(np.argmax(fall))
            return float(fall[k]), k + 1

        heap = [(-rate, j, s) for j in range(todo.size) for rate, s in [best(j)] if s and rate > 1e-12]
        heapq.heapify(heap)
        while left and heap:
            _, j, s = heapq.heappop(heap)
            give = min(s, left, int(limit[j]) - int(extra[todo[j]]))
            extra[todo[j]] += give
            left -= give
            if extra[todo[j]] >= limit[j]:
                continue
            rate, s = best(j)
            if s and rate > 1e-12:
                heapq.heappush(heap, (-rate, j, s))
    total = topup + extra
    spent = int(total.sum())
    reason = ""
    if spent < budget:
        reason = (f"{budget - spent:,} of {budget:,} trials left unspent: more trials would not change any "
                  "other task's class (decided, or beyond the look-ahead)")
    return Allocation(total, topup, int(budget), spent, reason)
