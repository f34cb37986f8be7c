"""Graded scores: a trial's numeric outcome (Harbor's reward, Inspect's score, lm-eval's
metric, τ²'s reward, a JSON Lines ``score``), averaged per task and over the suite.

Pass/fail stays a threshold on the score; these figures keep what the threshold throws
away (rewards 0.55 and 0.91 both fail, yet differ). A run shows them only when it is
*graded*: some trial's score is neither 0 nor 1 (:func:`is_graded`); a run of pass/fail
outcomes alone (or 0/1 rewards, whose mean score is p̂) shows none of them.

Uncertainty of the suite figure is over tasks, not trials, as for pass@1: the per-task
mean scores go through the same :func:`~flaketui.stats.suite.mean_estimate` (clustered
when tasks share a group). Pure numpy; scipy inside the functions that need it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from flaketui.stats.arrays import Bools, Floats, Ints
from flaketui.stats.estimators import CONFIDENCE, Interval

EPS = 1e-9
"""Two scores of one task closer than this are the same score (no score flakiness)."""


def counted_scores(score: ArrayLike, errored: ArrayLike, errored_as: str) -> Floats:
    """The score each trial counts with in a mean score (NaN: left out): the one statement
    of how errored and unscored trials enter it.

    - ``errored_as == "apart"``: errored trials are left out of n, so out of the mean too
      (scored or not).
    - otherwise (errored trials count in n: ``fail``, or a harness's own convention): an
      errored trial keeps its score when it has one (Harbor: a timeout the verifier still
      scored) and scores 0 when it has none (Harbor's mean counts a trial without a reward
      as 0, ``math.fsum`` over every trial).
    - A trial that did not error and has no score (a pass/fail outcome in a log that scores
      others) is left out.
    """
    x = np.array(score, dtype=np.float64)
    bad = np.asarray(errored, dtype=bool)
    if errored_as == "apart":
        x[bad] = np.nan
    else:
        x[bad & np.isnan(x)] = 0.0
    return x


def is_graded(score: ArrayLike) -> bool:
    """Whether some score is partial credit (neither 0 nor 1, NaN aside): what makes a run's
    mean score say more than its pass rate."""
    d = np.asarray(score, dtype=np.float64) - 0.5  # 0 and 1 are 0.5 away; NaN compares false
    np.abs(d, out=d)  # in place: one temporary the size of the scores, not two
    return bool(np.any(d < 0.5) or np.any(d > 0.5))


def score_range(score: ArrayLike) -> tuple[float, float]:
    """The range the scores are bounded by: [0, 1], widened to the scores seen outside it
    (an lm-eval metric or a reward of -1), for the bounded-score interval."""
    x = np.asarray(score, dtype=np.float64)
    x = x[~np.isnan(x)]
    if not x.size:
        return 0.0, 1.0
    return min(0.0, float(x.min())), max(1.0, float(x.max()))


def mean_score_interval(n: ArrayLike, total: ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """Interval for the mean of n scores in [0, 1] that sum to ``total``: the
    Clopper-Pearson beta bounds at the fractional total.

    Parameters
    ----------
    n : array_like
        Scored trials per task (NaN bounds where 0).
    total : array_like
        Sum of each task's scores, each score in [0, 1].
    confidence : float
        Confidence level, 0.95 by default.

    Notes
    -----
    low = B⁻¹(α/2; s, n − s + 1) (0 when s = 0), high = B⁻¹(1 − α/2; s + 1, n − s) (1 when
    s = n), B⁻¹ the beta quantile (``scipy.special.betaincinv``): the exact binomial
    interval of Clopper and Pearson [1]_ with the real total s in place of a count, and the
    same interval when every score is 0 or 1. Among the laws on [0, 1] with mean μ the
    Bernoulli(μ) is the largest in convex order (Hoeffding [2]_, Theorem 3: E f(S) for
    convex f is largest when each term is 0 or 1), so the scores' total is less spread than
    the binomial total the bounds were made for. A t interval on 3 to 10 scores covers as
    little as 27% where scores pile up at 0 or 1 (zero width when they agree); this one
    measures at least 98% over the partial-credit laws of ``benchmarks/bench_score_calibration.py`` (the table
    in ``docs/calibration.md``), at the price of width where scores are spread and
    unimodal.

    References
    ----------
    .. [1] C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits
       illustrated in the case of the binomial", Biometrika 26(4):404-413, 1934.
       doi:10.1093/biomet/26.4.404
    .. [2] W. Hoeffding, "Probability inequalities for sums of bounded random variables",
       J. Amer. Statist. Assoc. 58(301):13-30, 1963. doi:10.1080/01621459.1963.10500830

    Examples
    --------
    >>> ci = mean_score_interval([3], [1.556])
    >>> round(float(ci.low[0]), 4), round(float(ci.high[0]), 4)
    (0.0437, 0.9659)
    """
    from scipy.special import betaincinv

    n_f = np.atleast_1d(np.asarray(n, dtype=np.float64))
    s = np.clip(np.atleast_1d(np.asarray(total, dtype=np.float64)), 0.0, n_f)
    alpha = 1.0 - confidence
    # The total on a grid of 1/GRID, down for the low bound and up for the high one (a wider
    # interval: never less coverage), so that tasks share their bounds' beta quantiles: a
    # million tasks of five scores have at most 5·GRID + 1 totals, not a million
    # (betaincinv costs ~2 µs a call). Totals on the grid (0.55 + 0.91 + 0.098) are exact.
    scaled = s * GRID
    near = np.abs(scaled - np.round(scaled)) < 1e-6
    down = np.where(near, np.round(scaled), np.floor(scaled)) / GRID
    up = np.where(near, np.round(scaled), np.ceil(scaled)) / GRID
    low = _unique_apply(n_f, down, lambda m, t: np.where(
        t > 0, betaincinv(np.maximum(t, EPS), m - t + 1, alpha / 2), 0.0))
    high = _unique_apply(n_f, up, lambda m, t: np.where(
        t < m, betaincinv(t + 1, np.maximum(m - t, EPS), 1 - alpha / 2), 1.0))
    none = ~(n_f > 0)
    low[none] = np.nan
    high[none] = np.nan
    return Interval(low, high)


GRID = 10_000
"""A task's score total is taken on a grid of 1/GRID for its interval (outward: conservative)."""


def _unique_apply(n: Floats, t: Floats,
                  f: Callable[[Floats, Floats], Floats]) -> Floats:
    """``f(n, t)`` elementwise, computed once per distinct (n, t) pair (``t`` on the grid of
    1/:data:`GRID`: one int64 key a pair)."""
    ok = np.isfinite(n) & np.isfinite(t)
    if n.size < 64 or not ok.all():
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(f(n, t), dtype=np.float64)
    steps = np.round(t * GRID).astype(np.int64)
    key = n.astype(np.int64) * (int(steps.max()) + 1) + steps
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.asarray(f(n[first], t[first]), dtype=np.float64)
    return values[inverse.ravel()]


@dataclass(frozen=True)
class ScoreStats:
    """Per-task score figures of one run, aligned with its tasks (NaN where a task has no
    counted score)."""

    scored: Ints
    """Trials counted in each task's mean score (:func:`counted_scores`)."""
    mean_score: Floats
    mean_score_ci: Interval
    """:func:`mean_score_interval`, on the scores' range (:func:`score_range`)."""
    score_sd: Floats
    """Sample SD (ddof = 1) of the task's counted scores; NaN below two."""
    score_flaky: Bools
    """The task's scores differ across trials (their SD above :data:`EPS`)."""
    within_task_share: float = float("nan")
    """The run's share of score variance within tasks (:func:`within_task_share`), from
    every counted trial of the run these figures were computed for."""
    bounds: tuple[float, float] = (0.0, 1.0)
    """The range the interval assumed (:func:`score_range`)."""

    def take(self, idx: NDArray[np.integer]) -> ScoreStats:
        """These figures for the tasks at ``idx`` only, in that order (the run's share kept)."""
        return replace(self, scored=self.scored[idx], mean_score=self.mean_score[idx],
                       mean_score_ci=Interval(self.mean_score_ci.low[idx], self.mean_score_ci.high[idx]),
                       score_sd=self.score_sd[idx], score_flaky=self.score_flaky[idx])


def task_scores(score: ArrayLike, errored: ArrayLike, bounds: ArrayLike, errored_as: str,
                confidence: float = CONFIDENCE) -> ScoreStats:
    """Per task, the mean score, its interval, the SD across trials and score flakiness.

    Parameters
    ----------
    score, errored : array_like
        Each trial's score (NaN: none) and whether it errored, in the run's row order.
    bounds : array_like
        Task ``i``'s rows are ``bounds[i]:bounds[i + 1]``.
    errored_as : str
        How errored trials count (:func:`counted_scores`).

    Notes
    -----
    Vectorised by task with ``numpy.bincount``; the SD is two-pass (each score less its
    task's mean) for accuracy.
    """
    b = np.asarray(bounds, dtype=np.int64)
    tasks = b.size - 1
    x = counted_scores(score, errored, errored_as)
    seg = np.repeat(np.arange(tasks), np.diff(b))
    ok = ~np.isnan(x)
    xs, ss = x[ok], seg[ok]
    m = np.bincount(ss, minlength=tasks).astype(np.int64)
    total = np.bincount(ss, weights=xs, minlength=tasks)
    # Scores near the float range (1e308 and -1e308) overflow a sum or a square: the figure is
    # then inf or NaN, shown as such, and the interval, which needs a finite range, is NaN.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = total / m
        dev = np.bincount(ss, weights=(xs - mean[ss]) ** 2, minlength=tasks)
        sd = np.where(m > 1, np.sqrt(dev / (m - 1)), np.nan)
        lo, hi = score_range(xs)
        width = hi - lo
        finite = math.isfinite(width)
        ci = mean_score_interval(m, (total - m * lo) / width, confidence) if finite else None
        interval = (Interval(lo + width * ci.low, lo + width * ci.high) if ci is not None
                    else Interval(np.full(tasks, np.nan), np.full(tasks, np.nan)))
        flaky = (m > 1) & (np.nan_to_num(sd, posinf=1.0) > EPS)  # scores that differ have an SD, equal ones none
        return ScoreStats(m, mean, interval, sd, flaky, within_task_share(xs, ss), (lo, hi))


def within_task_share(values: ArrayLike, segment: ArrayLike) -> float:
    """The share of score variance within tasks, 1 − ICC(1), from one-way ANOVA variance
    components.

    Parameters
    ----------
    values : array_like
        Trial scores (NaN left out).
    segment : array_like
        Each score's task.

    Notes
    -----
    With a tasks, N scores, n_i per task: MSB = Σ n_i (x̄_i − x̄)²/(a − 1), MSW =
    Σ Σ (x_ij − x̄_i)²/(N − a), n₀ = (N − Σ n_i²/N)/(a − 1); the ANOVA estimates of the
    variance components are σ²_w = MSW and σ²_b = max(0, (MSB − MSW)/n₀), and the share
    within is σ²_w/(σ²_b + σ²_w) (Searle, Casella & McCulloch [1]_, section 3.6, for unequal
    n_i; the negative estimate truncated at 0). 1: tasks differ no more than trials of one
    task do; 0: every task always gets the same score. NaN with fewer than two tasks, no
    task of two scores, or no variance at all.

    References
    ----------
    .. [1] S. R. Searle, G. Casella, C. E. McCulloch, *Variance Components*, Wiley, 1992,
       chapter 3 (one-way classification, ANOVA estimation, unbalanced data).

    Examples
    --------
    >>> round(within_task_share([0.0, 0.2, 0.8, 1.0], [0, 0, 1, 1]), 4)
    0.0606
    """
    x = np.asarray(values, dtype=np.float64)
    seg = np.asarray(segment, dtype=np.int64)
    ok = ~np.isnan(x)
    if not ok.all():
        x, seg = x[ok], seg[ok]
    if not seg.size:
        return float("nan")
    n_i = np.bincount(seg).astype(np.float64)
    if not n_i.all():  # tasks without a score: numbered away (no sort)
        seg = (np.cumsum(n_i > 0) - 1)[seg]
        n_i = n_i[n_i > 0]
    a, big_n = n_i.size, x.size
    if a < 2 or big_n <= a:
        return float("nan")
    means = np.bincount(seg, weights=x, minlength=a) / n_i
    grand = float(x.mean())
    msb = float(np.sum(n_i * (means - grand) ** 2)) / (a - 1)
    msw = float(np.sum((x - means[seg]) ** 2)) / (big_n - a)
    n0 = (big_n - float(np.sum(n_i**2)) / big_n) / (a - 1)
    between = max(0.0, (msb - msw) / n0)
    whole = between + msw
    return msw / whole if whole > 0 else float("nan")
