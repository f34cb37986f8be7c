"""Precision of one task's pass rate: the rule of three, the Wilson width, and decisions.

Per task: the clean trials that would bound a failure (or pass) rate below a
target (rule of three, a fixed-n bound), the trials that would narrow the
Wilson interval under a target width, and whether the task is already
*decided* stable-pass, stable-fail or flaky. Decisions use a confidence
sequence (Robbins' Beta(1, 1) mixture), not a fixed-n interval, because users
run ``plan`` again after every batch of trials and stop once a task is
decided: a fixed-n interval looked at again and again is wrong far more often
than its nominal level. Pure numpy (and scipy.special, imported when used): no Textual,
no Rich.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from flaketui.stats.arrays import Floats, Ints
from flaketui.stats.estimators import (
    CONFIDENCE,
    FLAKY,
    NO_TRIALS,
    STABLE_FAIL,
    STABLE_PASS,
    Interval,
    rule_of_three,
    z_value,
)

UNDECIDED = "undecided"
"""Decision of a task whose confidence sequence straddles a boundary of the three zones."""

PEEKING = "decisions use a confidence sequence (Robbins' mixture): valid however often you look"
"""What every plan output says about its decisions."""

_BISECTIONS = 60
"""Halvings of [0, p̂] and [p̂, 1] per bound: 2⁻⁶⁰ ≈ 1e-18, far below any rate shown."""

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


def _clean_shortfall(n: ArrayLike, c: ArrayLike, need: float) -> Floats:
    """max(0, need − n) per task whose trials all passed or all failed, NaN for the rest.

    Both :func:`more_clean_trials` and :func:`more_trials_to_decide` count further clean
    trials against a total that a one-sided task needs; a task with both passes and
    failures (or no trial) has no such total."""
    n_arr = np.asarray(n, dtype=np.float64)
    c_arr = np.asarray(c, dtype=np.float64)
    one_sided = (n_arr > 0) & ((c_arr == 0) | (c_arr == n_arr))
    return np.where(one_sided, np.maximum(0.0, need - n_arr), np.nan)


def more_clean_trials(
    n: ArrayLike, c: ArrayLike, target: float, confidence: float = CONFIDENCE
) -> Floats:
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
    return _clean_shortfall(n, c, trials_to_bound(target, confidence))


def wilson_width(n: ArrayLike, p: ArrayLike, confidence: float = CONFIDENCE) -> Floats:
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
) -> Ints:
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


def confidence_sequence(n: ArrayLike, c: ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """Robbins' Beta(1, 1)-mixture confidence sequence for a pass rate after n trials, c passes.

    The set {p : M_n(p) < 1/α}, α = 1 − ``confidence``, where

    ``M_n(p) = B(c + 1, n − c + 1) / (p^c (1 − p)^(n − c))``

    is the likelihood of the trials under a uniform prior on the pass rate
    divided by their likelihood under p.

    Parameters
    ----------
    n, c : array_like
        Trials and passes per task (whole numbers, 0 ≤ c ≤ n).
    confidence : float
        1 − α, 0.95 by default.

    Returns
    -------
    Interval
        Bounds per task: [0, 1] where n = 0; the lower bound is 0 where c = 0
        and the upper bound 1 where c = n.

    Notes
    -----
    Under a true rate p, M_n(p) is a nonnegative martingale with M_0 = 1 (a
    mixture of likelihood ratios), so Ville's inequality gives
    P(∃ n : M_n(p) ≥ 1/α) ≤ α: the interval covers p at every n at once, with
    probability at least 1 − α. A decision taken when the interval first
    leaves a zone boundary behind is therefore valid however often the trials
    are looked at, and whenever the user stops. A fixed-n interval (Wilson) is
    narrower at any one n but not valid under such peeking.

    log M_n(p) is convex in p with its minimum, at most 0, at p̂ = c/n (the
    mixture integral is at most the maximal likelihood), so the set is an
    interval containing p̂. Each bound is the root of
    log M_n(p) = log(1/α) on one side of p̂, found by bisection in log space
    (60 halvings, vectorised over the distinct (n, c) pairs); the bound
    returned is the side of the root outside the set, so the interval errs
    wide. At c = n the lower bound has the closed form (α/(n + 1))^(1/n).

    References
    ----------
    .. [1] H. Robbins, "Statistical methods related to the law of the iterated
       logarithm", Annals of Mathematical Statistics 41(5):1397-1409, 1970.
       doi:10.1214/aoms/1177696786
    .. [2] S. R. Howard, A. Ramdas, J. McAuliffe, J. Sekhon, "Time-uniform,
       nonparametric, nonasymptotic confidence sequences", Annals of
       Statistics 49(2):1055-1080, 2021. doi:10.1214/20-AOS1991

    Examples
    --------
    >>> ci = confidence_sequence([12, 69, 0], [12, 69, 0])
    >>> [round(float(x), 4) for x in ci.low], ci.high.tolist()
    ([0.6291, 0.9003, 0.0], [1.0, 1.0, 1.0])
    """
    # scipy is imported where it is used: the commands that never decide start without it.
    from scipy.special import betaln, xlog1py, xlogy

    if not 0 < confidence < 1:
        raise ValueError(f"confidence ({confidence}) must be between 0 and 1")
    n_arr = np.asarray(n, dtype=np.float64)
    c_arr = np.asarray(c, dtype=np.float64)
    shape = np.broadcast_shapes(n_arr.shape, c_arr.shape)
    n_flat = np.broadcast_to(n_arr, shape).ravel()
    c_flat = np.broadcast_to(c_arr, shape).ravel()
    if np.any(c_flat < 0) or np.any(c_flat > n_flat) or np.any(np.isnan(n_flat + c_flat)):
        raise ValueError("passes (c) must lie between 0 and the number of trials (n)")
    # Tasks share few (n, c) pairs: solve each pair once.
    pairs, inverse = np.unique(np.stack([n_flat, c_flat], axis=1), axis=0, return_inverse=True)
    un, uc = pairs[:, 0], pairs[:, 1]
    threshold = -math.log1p(-confidence)  # log(1/α)
    log_b = betaln(uc + 1, un - uc + 1)

    def excess(p: Floats) -> Floats:
        """log M_n(p) − log(1/α); at or above 0 outside the sequence."""
        out: Floats = log_b - xlogy(uc, p) - xlog1py(un - uc, -p) - threshold
        return out

    with np.errstate(divide="ignore", invalid="ignore"):
        mle = np.where(un > 0, uc / np.where(un > 0, un, 1), 0.5)
        # Lower bound: log M falls from +inf at p = 0 (when c > 0) to below 0 at p̂.
        lo, hi = np.zeros_like(mle), mle.copy()
        for _ in range(_BISECTIONS):
            mid = (lo + hi) / 2
            out = excess(mid) >= 0
            lo, hi = np.where(out, mid, lo), np.where(out, hi, mid)
        lower = np.where((uc == 0) | (un == 0), 0.0, lo)
        # Upper bound: log M rises from below 0 at p̂ to +inf at p = 1 (when c < n).
        lo, hi = mle.copy(), np.ones_like(mle)
        for _ in range(_BISECTIONS):
            mid = (lo + hi) / 2
            out = excess(mid) >= 0
            lo, hi = np.where(out, lo, mid), np.where(out, mid, hi)
        upper = np.where((uc == un) | (un == 0), 1.0, hi)
    low = lower[inverse.ravel()].reshape(shape)
    high = upper[inverse.ravel()].reshape(shape)
    return Interval(low, high)


def clean_trials_to_decide(margin: float = 0.1, confidence: float = CONFIDENCE) -> int:
    """Trials, all passing (or all failing), at which a task is decided under the confidence sequence.

    The smallest n with (α/(n + 1))^(1/n) ≥ 1 − m, the lower bound of
    :func:`confidence_sequence` at n of n passes: n·(−ln(1 − m)) − ln(n + 1)
    ≥ ln(1/α). By symmetry n of n failures is decided stable-fail at the same n.

    Parameters
    ----------
    margin : float
        Width m of the stable zones of :func:`decide`.
    confidence : float
        1 − α of the confidence sequence.

    Notes
    -----
    g(n) = n·(−ln(1 − m)) − ln(n + 1) is convex with g(0) = 0, so it is at most
    0 before its minimum and rises after it: the answer is found by doubling
    then bisecting from the minimum on. At 95% and m = 0.1 it is 69 trials
    (the fixed-n Wilson interval needed 35, but is not valid when looked at
    after every batch).

    References
    ----------
    .. [1] H. Robbins, Annals of Mathematical Statistics 41(5):1397-1409, 1970.
    .. [2] S. R. Howard, A. Ramdas, J. McAuliffe, J. Sekhon, Annals of
       Statistics 49(2):1055-1080, 2021. doi:10.1214/20-AOS1991

    Examples
    --------
    >>> clean_trials_to_decide()
    69
    """
    if not 0 < margin < 0.5:
        raise ValueError(f"margin ({margin}) must be between 0 and 0.5")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence ({confidence}) must be between 0 and 1")
    rate = -math.log1p(-margin)
    threshold = -math.log1p(-confidence)

    def decided(m: int) -> bool:
        # A tiny tolerance, as in decide(): a bound computed as 0.8999999 counts as 0.9.
        return m * rate - math.log1p(m) >= threshold - 1e-12

    lo = max(0, math.floor(1 / rate - 1))  # at or before the minimum of g: never decided
    hi = max(1, lo)
    while not decided(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if decided(mid) else (mid, hi)
    return hi


def more_trials_to_decide(
    n: ArrayLike, c: ArrayLike, margin: float = 0.1, confidence: float = CONFIDENCE
) -> Floats:
    """Further clean trials until a task that passed (or failed) every trial is decided.

    max(0, :func:`clean_trials_to_decide` − n) for a task whose trials all
    passed (it becomes stable-pass) or all failed (stable-fail).

    Returns
    -------
    ndarray
        Per task; NaN for a task with both passes and failures, or without trials.

    References
    ----------
    .. [1] S. R. Howard, A. Ramdas, J. McAuliffe, J. Sekhon, Annals of
       Statistics 49(2):1055-1080, 2021. doi:10.1214/20-AOS1991

    Examples
    --------
    >>> more_trials_to_decide([12, 12, 80], [12, 6, 0]).tolist()
    [57.0, nan, 0.0]
    """
    return _clean_shortfall(n, c, clean_trials_to_decide(margin, confidence))


def decide(
    n: ArrayLike, c: ArrayLike, margin: float = 0.1, confidence: float = CONFIDENCE
) -> list[str]:
    """Whether each task is decided stable-pass, stable-fail or flaky, or is undecided.

    The pass rates [0, 1] fall in three zones: stable-fail [0, m], flaky
    [m, 1 − m] and stable-pass [1 − m, 1], with m = ``margin``. A task is
    decided when its confidence sequence (:func:`confidence_sequence`) at
    ``confidence`` lies entirely inside one zone:

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
    The confidence sequence covers the true rate at every n at once, so a
    user who runs the plan after every batch and stops at the first decision
    is wrong with probability at most 1 − ``confidence`` (Ville's
    inequality). The fixed-n Wilson interval used before decided a clean
    task stable-pass from 35 trials on; looked at after every 5 trials up to
    200, it called a task that fails 10.5% of the time stable-pass with
    probability 6.5% (exact, propagating the binomial distribution of the
    passes from look to look; 4.8% up to 100). The confidence sequence needs
    69 clean trials (:func:`clean_trials_to_decide`) and brings that
    probability to 0.10% (``benchmarks/bench_peeking.py`` measures both). The
    sequence is :func:`confidence_sequence`'s: Robbins' mixture (Annals of Mathematical
    Statistics 41(5), 1970), after Howard et al. (Annals of Statistics 49(2), 2021).

    Examples
    --------
    >>> decide([12, 69, 60, 12], [12, 69, 30, 10])
    ['undecided', 'stable-pass', 'flaky', 'undecided']
    """
    if not 0 < margin < 0.5:
        raise ValueError(f"margin ({margin}) must be between 0 and 0.5")
    n_arr = np.atleast_1d(np.asarray(n, dtype=np.float64))
    c_arr = np.atleast_1d(np.asarray(c, dtype=np.float64))
    if np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise ValueError("passes (c) must lie between 0 and the number of trials (n)")
    cs = confidence_sequence(n_arr, c_arr, confidence)
    lo, hi = np.atleast_1d(cs.low), np.atleast_1d(cs.high)
    # A tiny tolerance so that a bound computed as 0.8999999 counts as 0.9.
    eps = 1e-12
    zones = [n_arr == 0, lo >= 1 - margin - eps, hi <= margin + eps,
             (lo >= margin - eps) & (hi <= 1 - margin + eps)]
    out: list[str] = np.select(zones, [NO_TRIALS, STABLE_PASS, STABLE_FAIL, FLAKY], UNDECIDED).tolist()
    return out
