"""Precision of one task's pass rate: the rule of three, the Wilson width, and decisions.

Per task: the clean trials that would bound a failure (or pass) rate below a
target (rule of three), the trials that would narrow the Wilson interval under
a target width, and whether the task is already *decided* stable-pass,
stable-fail or flaky. Pure numpy: no Textual, no Rich.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from flaketui.stats.estimators import (
    CONFIDENCE,
    FLAKY,
    NO_TRIALS,
    STABLE_FAIL,
    STABLE_PASS,
    rule_of_three,
    wilson_interval,
    z_value,
)

UNDECIDED = "undecided"
"""Decision of a task whose Wilson interval straddles a boundary of the three zones."""

DESIGN_NOT_TESTS = (
    "a failure rate of one in a million needs about {n:,} clean trials to bound "
    "(rule of three): such claims must come from design (guards, permissions, "
    "human review), not from tests"
)
"""The plain statement about tiny failure rates, with the exact trial count filled in."""


def trials_to_bound(target: float, confidence: float = CONFIDENCE) -> int:
    """Clean trials needed for the rule of three to bound a rate at or below ``target``.

    The smallest n with 1 − (1 − confidence)^(1/n) ≤ target, that is
    n = ⌈ln(1 − confidence) / ln(1 − target)⌉.

    Parameters
    ----------
    target : float
        The rate to bound, 0 < target < 1 (e.g. 0.01 for one in a hundred).
    confidence : float
        One-sided confidence of the bound, 0.95 by default.

    Returns
    -------
    int
        Trials without a single failure (or, for a pass rate, without a pass).

    Notes
    -----
    With no event in n independent trials, the exact one-sided
    Clopper-Pearson upper bound is 1 − α^(1/n) ≈ −ln(α)/n, which is ≈ 3/n at
    95% (−ln 0.05 = 2.996). So a 1% rate needs 299 clean trials, 0.2% needs
    1,497 and one in a million needs 2,995,731: far more than any eval can
    run, which is why such claims must come from design, not from tests.

    References
    ----------
    .. [1] J. A. Hanley, A. Lippman-Hand, "If nothing goes wrong, is everything
       all right? Interpreting zero numerators", JAMA 249(13):1743-1745, 1983.
       doi:10.1001/jama.1983.03330370053031

    Examples
    --------
    >>> trials_to_bound(0.01)
    299
    >>> trials_to_bound(1e-6)
    2995731
    """
    if not 0 < target < 1:
        raise ValueError(f"target ({target}) must be between 0 and 1")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence ({confidence}) must be between 0 and 1")
    # log1p keeps ln(1 - target) exact for tiny targets such as 1e-6.
    n = max(1, math.ceil(math.log(1 - confidence) / math.log1p(-target)))
    # Guard the ceiling against rounding at an exact integer.
    while float(rule_of_three(n, confidence)) > target:
        n += 1
    while n > 1 and float(rule_of_three(n - 1, confidence)) <= target:
        n -= 1
    return n


def more_clean_trials(
    n: ArrayLike, c: ArrayLike, target: float, confidence: float = CONFIDENCE
) -> NDArray[np.float64]:
    """Further clean trials that would bound a task's failure (or pass) rate below ``target``.

    For a task that passed every trial the rule of three bounds its failure
    rate; for one that failed every trial, its pass rate. The answer is
    max(0, :func:`trials_to_bound` − n).

    Returns
    -------
    ndarray
        Per task; NaN for a task with both passes and failures (it has failed,
        the rule of three does not apply) or without trials.

    References
    ----------
    .. [1] J. A. Hanley, A. Lippman-Hand, JAMA 249(13):1743-1745, 1983.

    Examples
    --------
    >>> more_clean_trials([12, 12, 300], [12, 6, 300], 0.01).tolist()
    [287.0, nan, 0.0]
    """
    n_arr = np.asarray(n, dtype=np.float64)
    c_arr = np.asarray(c, dtype=np.float64)
    need = trials_to_bound(target, confidence)
    one_sided = (n_arr > 0) & ((c_arr == 0) | (c_arr == n_arr))
    return np.where(one_sided, np.maximum(0.0, need - n_arr), np.nan)


def wilson_width(n: ArrayLike, p: ArrayLike, confidence: float = CONFIDENCE) -> NDArray[np.float64]:
    """Width of the Wilson interval after n trials at an observed pass rate p.

    ``2 z √(p(1−p)/n + z²/(4n²)) / (1 + z²/n)``; at p = 0 or 1 this is
    z²/(n + z²). p may be any value in [0, 1] (the passes p·n need not be
    whole), which is what a plan assumes: further trials keep the rate seen.

    Returns
    -------
    ndarray
        Per task; 1.0 where n = 0.

    Notes
    -----
    The width falls strictly as n grows for any fixed p: its square is
    proportional to (p(1−p)n + z²/4)/(n + z²)², whose derivative in n has the
    sign of −p(1−p)n + z²(p(1−p) − ½) < 0.

    References
    ----------
    .. [1] E. B. Wilson, "Probable inference, the law of succession, and
       statistical inference", JASA 22(158):209-212, 1927.
       doi:10.1080/01621459.1927.10502953

    Examples
    --------
    >>> round(float(wilson_width(12, 1.0)), 4)
    0.2425
    """
    z = z_value(confidence)
    n_arr = np.asarray(n, dtype=np.float64)
    p_arr = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = z * np.sqrt(p_arr * (1 - p_arr) / n_arr + z * z / (4 * n_arr * n_arr))
        width = 2 * half / (1 + z * z / n_arr)
    return np.where(n_arr > 0, width, 1.0)


def trials_for_width(
    p: ArrayLike, width: float, confidence: float = CONFIDENCE
) -> NDArray[np.int64]:
    """Smallest n whose Wilson interval at pass rate p is no wider than ``width``.

    Parameters
    ----------
    p : array_like
        The pass rate each task is assumed to keep (its p̂; use 0.5, the worst
        case, for a task without trials).
    width : float
        Target total width of the interval, 0 < width ≤ 1.

    Returns
    -------
    ndarray of int
        Total trials (not further trials) per task.

    Notes
    -----
    Found by a bisection over whole n on :func:`wilson_width`, which falls
    strictly with n. At p = 0.5 and 95% a width of 0.1 needs 381 trials
    (the Wald rule (2·1.96·0.5/0.1)² = 385 is close); at p = 1 it needs 35.

    References
    ----------
    .. [1] E. B. Wilson, JASA 22(158):209-212, 1927.

    Examples
    --------
    >>> trials_for_width([0.5, 1.0], 0.1).tolist()
    [381, 35]
    """
    if not 0 < width <= 1:
        raise ValueError(f"width ({width}) must be above 0 and at most 1")
    p_arr = np.atleast_1d(np.asarray(p, dtype=np.float64))
    if np.any(np.isnan(p_arr)):
        raise ValueError("p must not be NaN (use 0.5 for a task without trials)")
    z = z_value(confidence)
    # Width <= z/sqrt(n) (it is z/sqrt(n+z^2)·... at most), so n = (z/width)^2 + 1 suffices.
    hi = np.full(p_arr.shape, math.ceil((z / width) ** 2) + 1, dtype=np.int64)
    lo = np.zeros(p_arr.shape, dtype=np.int64)  # width(0) = 1 >= any target: lo never fits
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        fits = wilson_width(mid, p_arr, confidence) <= width
        hi = np.where(fits, mid, hi)
        lo = np.where(fits, lo, mid)
    return hi.reshape(np.shape(p))


def decide(
    n: ArrayLike, c: ArrayLike, margin: float = 0.1, confidence: float = CONFIDENCE
) -> list[str]:
    """Whether each task is decided stable-pass, stable-fail or flaky, or is undecided.

    The pass rates [0, 1] fall in three zones: stable-fail [0, m], flaky
    [m, 1 − m] and stable-pass [1 − m, 1], with m = ``margin``. A task is
    decided when its Wilson interval at ``confidence`` lies entirely inside
    one zone:

    - ``stable-pass``: lower bound ≥ 1 − m (it passes at least 1 − m of the time);
    - ``stable-fail``: upper bound ≤ m;
    - ``flaky``: m ≤ lower bound and upper bound ≤ 1 − m (it fails at least m
      of the time and passes at least m: fix it, more trials only say how flaky);
    - ``undecided``: the interval crosses a zone boundary;
    - ``no-trials``: no non-errored trial.

    Parameters
    ----------
    n, c : array_like
        Trials and passes per task.
    margin : float
        Width m of the stable zones, 0 < m < 0.5 (default 0.1).

    Notes
    -----
    With every trial passing, the Wilson lower bound is n/(n + z²), so a
    clean task is decided stable-pass at 95% and m = 0.1 from 35 trials on
    (n ≥ 9z² = 34.6). 12 of 12 is *not* decided: its interval [0.76, 1]
    still allows a task that fails one time in five.

    References
    ----------
    .. [1] E. B. Wilson, JASA 22(158):209-212, 1927.

    Examples
    --------
    >>> decide([12, 35, 40, 12], [12, 35, 20, 10])
    ['undecided', 'stable-pass', 'flaky', 'undecided']
    """
    if not 0 < margin < 0.5:
        raise ValueError(f"margin ({margin}) must be between 0 and 0.5")
    n_arr = np.asarray(n, dtype=np.float64)
    ci = wilson_interval(n_arr, c, confidence)
    lo, hi = np.atleast_1d(ci.low), np.atleast_1d(ci.high)
    # A tiny tolerance so that a bound computed as 0.8999999 counts as 0.9.
    eps = 1e-12
    with np.errstate(invalid="ignore"):
        zones = [np.atleast_1d(n_arr) == 0, lo >= 1 - margin - eps, hi <= margin + eps,
                 (lo >= margin - eps) & (hi <= 1 - margin + eps)]
    out: list[str] = np.select(zones, [NO_TRIALS, STABLE_PASS, STABLE_FAIL, FLAKY], UNDECIDED).tolist()
    return out
