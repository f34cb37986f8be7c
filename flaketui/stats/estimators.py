"""Per-task estimators: p̂ with its Wilson and Clopper-Pearson intervals, pass@k, pass^k and
its interval (exact or bootstrap), flakiness, the rule of three, and the z and t quantiles.

Every function takes numpy arrays of trial counts ``n`` and passes ``c`` (or
scalars) and works on all tasks at once. Pure numpy/scipy: no Textual, no Rich.
scipy is imported inside the functions that need it, so that opening a log
does not wait for it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from flaketui.stats.arrays import Floats, Ints

CONFIDENCE = 0.95
"""Confidence level of every interval flaketui reports."""


@dataclass(frozen=True)
class Interval:
    """A confidence interval ``[low, high]`` (arrays when computed for many tasks)."""

    low: Floats
    high: Floats


Z_95 = 1.9599639845400536
"""``statistics.NormalDist().inv_cdf(0.975)``, the z of :data:`CONFIDENCE`, as a literal: the
``statistics`` module's import (fractions, decimal, random) was 4 ms of every report's start."""


def z_value(confidence: float = CONFIDENCE) -> float:
    """Two-sided normal quantile: 1.959964 for 95% (``statistics.NormalDist().inv_cdf``, the
    inverse of the standard normal CDF by Wichura's algorithm AS 241)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence ({confidence}) must be between 0 and 1")
    if confidence == 0.95:
        return Z_95
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def t_value(df: float, confidence: float = CONFIDENCE) -> float:
    """Two-sided Student t quantile: the t with P(|T_df| ≤ t) = confidence (``scipy.stats.t.ppf(0.5
    + confidence / 2, df)``); the z of :func:`z_value` at df = inf.

    Parameters
    ----------
    df : float
        Degrees of freedom, > 0 (``inf``: the normal quantile).
    confidence : float
        Confidence level, 0.95 by default.

    Notes
    -----
    For whole df up to :data:`_T_SERIES_DF` the two-sided probability P(|T| ≤ t) is the
    finite trigonometric sum of Abramowitz & Stegun 26.7.3 (odd df) and 26.7.4 (even df),
    with θ = arctan(t/√df), and Newton's method (its derivative is twice the t density)
    solves it from the Cornish-Fisher start; beyond, the Cornish-Fisher expansion of
    26.7.5 to the 1/df⁵ term is exact to double precision. Both are pure Python, so a
    report's start need not import scipy; other df (not whole, CR2's) are Newton's method on
    the incomplete beta function (:func:`_t_value_real`), without scipy too.
    Cached per (df, confidence).

    References
    ----------
    .. [1] M. Abramowitz, I. A. Stegun, *Handbook of Mathematical Functions*, 1964,
       26.7.3-26.7.5.

    Examples
    --------
    >>> round(t_value(4), 6), round(t_value(29), 6)
    (2.776445, 2.04523)
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence ({confidence}) must be between 0 and 1")
    if not df > 0:
        raise ValueError(f"df ({df}) must be > 0")
    return _t_value(float(df), float(confidence))


_T_SERIES_DF = 300
"""Up to these degrees of freedom :func:`t_value` sums A&S 26.7.3/26.7.4; beyond, 26.7.5."""


@functools.lru_cache(maxsize=256)
def _t_value(df: float, confidence: float) -> float:
    if math.isinf(df):
        return z_value(confidence)
    if df != int(df):
        return _t_value_real(df, confidence)
    nu = int(df)
    if nu == 1:
        return math.tan(math.pi * confidence / 2)
    if nu == 2:
        return confidence * math.sqrt(2.0 / (1.0 - confidence * confidence))
    guess = _t_cornish_fisher(nu, z_value(confidence))
    if nu > _T_SERIES_DF:
        return guess
    # Newton on A(t) − confidence; A is concave for t > 0, so after the first step the
    # iterates rise to the root from below.
    log_norm = math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi)
    t = guess
    for _ in range(50):
        dens = math.exp(log_norm - (nu + 1) / 2 * math.log1p(t * t / nu))
        new = t - (_t_two_sided(t, nu) - confidence) / (2 * dens)
        if new <= 0:
            new = t / 2
        if abs(new - t) <= 1e-15 * t:
            return new
        t = new
    return t


def _t_value_real(nu: float, confidence: float) -> float:
    """The two-sided t quantile at a non-whole ν (CR2's Bell–McCaffrey degrees of freedom), without
    scipy: beyond :data:`_T_SERIES_DF` the Cornish-Fisher expansion (A&S 26.7.5, exact there to
    double precision); else Newton's method from it on P(|T_ν| ≤ t) = 1 − I_{ν/(ν + t²)}(ν/2, ½)
    (A&S 26.7.1 with 26.5.27; I the regularized incomplete beta function,
    :func:`flaketui.stats.special.betainc`), whose derivative is twice the t density, kept within
    the bracket its values have found (a step that leaves it bisects, or doubles while no upper
    end is known)."""
    from flaketui.stats.special import betainc

    guess = _t_cornish_fisher(nu, z_value(confidence))
    if nu > _T_SERIES_DF:
        return guess
    log_norm = math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi)
    lo, hi = 0.0, math.inf
    t = guess if guess > 0 else 1.0
    for _ in range(200):
        gap = 1.0 - float(betainc(nu / 2, 0.5, nu / (nu + t * t))[0]) - confidence
        if gap == 0:
            return t
        if gap < 0:
            lo = t
        else:
            hi = t
        dens = math.exp(log_norm - (nu + 1) / 2 * math.log1p(t * t / nu))
        new = t - gap / (2 * dens)
        if abs(new - t) <= 1e-13 * t:  # the probability's rounding (1e-16) moves t by about this much
            return new
        if not lo < new < hi:
            new = 2 * t if math.isinf(hi) else (lo + hi) / 2
        t = new
    return t


def _t_two_sided(t: float, nu: int) -> float:
    """P(|T_nu| ≤ t) by A&S 26.7.3 (odd nu) / 26.7.4 (even nu)."""
    theta = math.atan(t / math.sqrt(nu))
    s, c = math.sin(theta), math.cos(theta)
    cc = c * c
    total, term = 1.0, 1.0
    if nu % 2 == 0:  # sinθ (1 + ½cos²θ + (1·3)/(2·4)cos⁴θ + … + (1·3…(ν−3))/(2·4…(ν−2))cos^(ν−2)θ)
        for j in range(1, nu // 2):
            term *= cc * (2 * j - 1) / (2 * j)
            total += term
        return s * total
    # (2/π)(θ + sinθ (cosθ + (2/3)cos³θ + … + (2·4…(ν−3))/(1·3…(ν−2))cos^(ν−2)θ))
    for j in range(1, (nu - 1) // 2):
        term *= cc * (2 * j) / (2 * j + 1)
        total += term
    return 2 / math.pi * (theta + (s * c * total if nu > 1 else 0.0))


def _t_cornish_fisher(nu: float, x: float) -> float:
    """A&S 26.7.5: the t quantile as x + g₁(x)/ν + … + g₅(x)/ν⁵, x the normal quantile."""
    x2 = x * x
    g1 = x * (x2 + 1) / 4
    g2 = x * ((5 * x2 + 16) * x2 + 3) / 96
    g3 = x * (((3 * x2 + 19) * x2 + 17) * x2 - 15) / 384
    g4 = x * ((((79 * x2 + 776) * x2 + 1482) * x2 - 1920) * x2 - 945) / 92160
    g5 = x * (((((27 * x2 + 339) * x2 + 930) * x2 - 1782) * x2 - 765) * x2 + 17955) / 368640
    return x + (g1 + (g2 + (g3 + (g4 + g5 / nu) / nu) / nu) / nu) / nu


def median(values: ArrayLike) -> float:
    """The median of finite values (NaN for none), as :func:`numpy.median` gives it, by one
    partition: ``numpy.median``'s NaN check imports ``numpy.ma``, about 20 ms of a report's start."""
    x = np.asarray(values, dtype=np.float64).ravel()
    m = x.size
    if not m:
        return float("nan")
    lo, hi = (m - 1) // 2, m // 2
    part = np.partition(x, (lo, hi))
    return float((part[lo] + part[hi]) / 2)


def _counts(n: ArrayLike, c: ArrayLike) -> tuple[Floats, Floats]:
    n_arr = np.asarray(n, dtype=np.float64)
    c_arr = np.asarray(c, dtype=np.float64)
    if np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise ValueError("passes (c) must lie between 0 and the number of trials (n)")
    return n_arr, c_arr


def p_hat(n: ArrayLike, c: ArrayLike) -> Floats:
    """Observed pass rate c/n (NaN where n = 0)."""
    n_arr, c_arr = _counts(n, c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_arr > 0, c_arr / np.where(n_arr > 0, n_arr, 1), np.nan)


def wilson_interval(n: ArrayLike, c: ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """Wilson score interval for a binomial proportion.

    Parameters
    ----------
    n, c : array_like
        Trials and passes per task.
    confidence : float
        Confidence level, 0.95 by default.

    Returns
    -------
    Interval
        Bounds per task; NaN where n = 0.

    Notes
    -----
    Unlike the Wald interval p̂ ± z·SE it stays inside [0, 1] and keeps close to
    its nominal coverage for small n and p̂ near 0 or 1, which is the common case
    for agent tasks with 4-20 trials.

    References
    ----------
    .. [1] E. B. Wilson, "Probable inference, the law of succession, and
       statistical inference", Journal of the American Statistical Association
       22(158):209-212, 1927. doi:10.1080/01621459.1927.10502953

    Examples
    --------
    >>> ci = wilson_interval(49, 44)
    >>> round(float(ci.low), 3), round(float(ci.high), 3)
    (0.782, 0.956)
    """
    n_arr, c_arr = _counts(n, c)
    z = z_value(confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = c_arr / n_arr
        denom = 1 + z * z / n_arr
        centre = (p + z * z / (2 * n_arr)) / denom
        half = z * np.sqrt(p * (1 - p) / n_arr + z * z / (4 * n_arr * n_arr)) / denom
    low = np.where(n_arr > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n_arr > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    # At c = 0 and c = n the bounds are exactly 0 and 1; remove rounding noise.
    low = np.where(c_arr == 0, 0.0, low)
    high = np.where(c_arr == n_arr, 1.0, high)
    return Interval(np.where(n_arr > 0, low, np.nan), np.where(n_arr > 0, high, np.nan))


def _ratio_product(top: Floats, n: Floats, k: int) -> Floats:
    """prod_{i<k} (top - i) / (n - i): C(top, k)/C(n, k) without factorials.

    Factors past i = n are never used (the callers give NaN where k > n), so at most
    max(n) + 1 are formed: ``k = 10**20`` costs no more than ``k = max(n) + 1``."""
    k = min(k, int(n.max(initial=0)) + 1)
    i = np.arange(k, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = (top[..., None] - i) / (n[..., None] - i)
    ratios = np.clip(ratios, 0.0, None)
    return np.prod(ratios, axis=-1)


def pass_hat_k(n: ArrayLike, c: ArrayLike, k: int) -> Floats:
    """Unbiased estimate of pass^k, the chance that k independent trials all pass.

    ``pass^k = C(c, k) / C(n, k)``, computed as a product of k ratios.

    Parameters
    ----------
    n, c : array_like
        Trials and passes per task.
    k : int
        Number of trials that must all pass, k >= 1.

    Returns
    -------
    ndarray
        Per task; NaN where k > n.

    Notes
    -----
    Averaged over tasks this is τ-bench's reliability metric. It is never a
    mean pass rate raised to the power k: per task first, then the mean.

    References
    ----------
    .. [1] S. Yao, N. Shinn, P. Razavi, K. Narasimhan, "τ-bench: A Benchmark for
       Tool-Agent-User Interaction in Real-World Domains", arXiv:2406.12045, 2024.

    Examples
    --------
    >>> round(float(pass_hat_k(10, 8, 4)), 3)
    0.333
    """
    _check_k(k)
    n_arr, c_arr = _counts(n, c)
    out = _ratio_product(c_arr, n_arr, k)
    return np.where(n_arr >= k, out, np.nan)


def pass_at_k(n: ArrayLike, c: ArrayLike, k: int) -> Floats:
    """Unbiased estimate of pass@k, the chance that at least one of k trials passes.

    ``pass@k = 1 - C(n - c, k) / C(n, k)``, computed as a product of k ratios.

    Returns
    -------
    ndarray
        Per task; NaN where k > n.

    References
    ----------
    .. [1] M. Chen et al., "Evaluating Large Language Models Trained on Code",
       arXiv:2107.03374, 2021 (the numerically stable product form, Fig. 3).

    Examples
    --------
    >>> float(pass_at_k(10, 8, 4))
    1.0
    """
    _check_k(k)
    n_arr, c_arr = _counts(n, c)
    out = 1.0 - _ratio_product(n_arr - c_arr, n_arr, k)
    return np.where(n_arr >= k, out, np.nan)


PASSK_CI_METHODS = ("exact", "bootstrap")
"""How :func:`pass_hat_k_interval` bounds pass^k: ``exact`` (Clopper-Pearson bounds to the
power k, coverage at least the confidence level) or ``bootstrap`` (the percentile bootstrap,
which covers far less than its nominal level for p near 1: see its Notes)."""


def pass_hat_k_interval(
    n: ArrayLike, c: ArrayLike, k: int, confidence: float = CONFIDENCE, method: str = "exact"
) -> Interval:
    """Confidence interval for a task's pass^k = p^k.

    Parameters
    ----------
    n, c, k
        As in :func:`pass_hat_k`: trials and passes per task, and how many trials must all pass.
    confidence : float
        Confidence level, 0.95 by default.
    method : {"exact", "bootstrap"}
        ``exact`` (default): ``[L^k, U^k]`` with ``[L, U]`` the two-sided Clopper-Pearson
        interval for p. ``bootstrap``: the exact percentile bootstrap of the unbiased
        estimate C(c, k)/C(n, k).

    Returns
    -------
    Interval
        Per task; NaN where k > n.

    Notes
    -----
    *exact.* ``L = B⁻¹(α/2; c, n − c + 1)`` (0 at c = 0) and ``U = B⁻¹(1 − α/2; c + 1,
    n − c)`` (1 at c = n), B⁻¹ the beta quantile [1]_. As p ↦ p^k is increasing on [0, 1],
    ``L ≤ p ≤ U`` exactly when ``L^k ≤ p^k ≤ U^k``: the interval covers p^k whenever the
    Clopper-Pearson interval covers p, so its coverage is at least the confidence level for
    every p (conservative, as Clopper-Pearson is [2]_). Summed over the binomial outcomes,
    its coverage at n = 8, k = 4 and 95% is at least 0.95 for every p on a grid of 0.05 to
    0.99 (``tests/unit/test_intervals.py``). The bounds are of p^k; the point estimate
    C(c, k)/C(n, k) is unbiased for p^k but may fall just below ``L^k`` when c < k (it is 0
    there while L > 0).

    *bootstrap.* Resampling the task's n trials with replacement gives C* ~ Binomial(n, p̂)
    passes, and C(C*, k)/C(n, k) rises with C*, so the percentiles are the pass^k of the
    binomial quantiles of C*, computed from the distribution itself (no random draws) [3]_.
    It collapses to [1, 1] whenever every trial passed, so it misses p^k every time a task
    with p < 1 happens to pass all n trials: at n = 8, k = 4 and 95% its coverage is 0.53
    at p = 0.9, 0.33 at p = 0.95 and 0.08 at p = 0.99 (exact enumeration over c).

    Both are computed once per distinct (n, c) pair. The beta quantiles of small pairs are
    found here in pure Python (:func:`clopper_pearson`), sparing the report's start the
    import of scipy.

    References
    ----------
    .. [1] C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits
       illustrated in the case of the binomial", Biometrika 26(4):404-413, 1934.
       doi:10.1093/biomet/26.4.404
    .. [2] L. D. Brown, T. T. Cai, A. DasGupta, "Interval Estimation for a Binomial
       Proportion", Statistical Science 16(2):101-133, 2001. doi:10.1214/ss/1009213286
    .. [3] B. Efron, R. Tibshirani, "An Introduction to the Bootstrap",
       Chapman & Hall, 1993 (percentile interval, ch. 13).
    .. [4] S. Yao et al., "τ-bench", arXiv:2406.12045, 2024 (pass^k).

    Examples
    --------
    >>> ci = pass_hat_k_interval(12, 12, 5)  # L = 0.025^(1/12), so L^5 = 0.025^(5/12)
    >>> round(float(ci.low), 4), float(ci.high)
    (0.215, 1.0)
    >>> ci = pass_hat_k_interval(12, 12, 5, method="bootstrap")
    >>> float(ci.low), float(ci.high)
    (1.0, 1.0)
    """
    _check_k(k)
    if method not in PASSK_CI_METHODS:
        raise ValueError(f"method ({method!r}) must be one of {', '.join(PASSK_CI_METHODS)}")
    n_arr, c_arr = _counts(n, c)
    ok = n_arr >= k
    if method == "exact":
        cp = clopper_pearson(n_arr, c_arr, confidence)
        with np.errstate(invalid="ignore"):
            low, high = cp.low**k, cp.high**k
    else:
        alpha = 1 - confidence
        q_lo = binomial_quantile(n_arr, c_arr, alpha / 2)
        q_hi = binomial_quantile(n_arr, c_arr, 1 - alpha / 2)
        low = _ratio_product(q_lo, n_arr, k)
        high = _ratio_product(q_hi, n_arr, k)
    return Interval(np.where(ok, low, np.nan), np.where(ok, high, np.nan))


def clopper_pearson(n: ArrayLike, c: ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """Exact two-sided Clopper-Pearson interval for a binomial proportion, per task.

    ``L = B⁻¹(α/2; c, n − c + 1)``, ``U = B⁻¹(1 − α/2; c + 1, n − c)``, with L = 0 at
    c = 0 and U = 1 at c = n: the p at which P(X ≥ c) and P(X ≤ c) are α/2 [1]_ (the
    same as ``scipy.stats.binomtest(c, n).proportion_ci(method="exact")``).

    Returns
    -------
    Interval
        NaN where n = 0.

    Notes
    -----
    Computed once per distinct (n, c) pair. When the pairs are few and small the beta
    quantile is found here (:func:`_beta_ppf_int`: Newton's method on the log of the
    binomial tail, kept in a bracket), which spares importing scipy on the report path;
    otherwise scipy's ``betaincinv`` gives it.

    References
    ----------
    .. [1] C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits
       illustrated in the case of the binomial", Biometrika 26(4):404-413, 1934.
       doi:10.1093/biomet/26.4.404

    Examples
    --------
    >>> ci = clopper_pearson(10, 8)
    >>> round(float(ci.low), 4), round(float(ci.high), 4)
    (0.4439, 0.9748)
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence ({confidence}) must be between 0 and 1")
    n_arr, c_arr = _counts(n, c)
    shape = np.broadcast(n_arr, c_arr).shape
    n_arr, c_arr = np.broadcast_to(n_arr, shape), np.broadcast_to(c_arr, shape)
    low = np.full(shape, np.nan)
    high = np.full(shape, np.nan)
    if n_arr.size == 0:
        return Interval(low, high)
    alpha = 1 - confidence
    pairs, inverse = np.unique(np.stack([n_arr.ravel(), c_arr.ravel()], axis=1), axis=0, return_inverse=True)
    nn, cc = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    lo_u = np.where(nn > 0, 0.0, np.nan)
    hi_u = np.where(nn > 0, 1.0, np.nan)
    need_lo = (nn > 0) & (cc > 0)
    need_hi = (nn > 0) & (cc < nn)
    if int(np.sum(np.where(need_lo | need_hi, nn + 1, 0))) <= _PURE_BETA_TERMS:
        for i in np.flatnonzero(need_lo).tolist():
            lo_u[i] = _beta_ppf_int(int(cc[i]), int(nn[i] - cc[i] + 1), alpha / 2)
        for i in np.flatnonzero(need_hi).tolist():
            hi_u[i] = _beta_ppf_int(int(cc[i] + 1), int(nn[i] - cc[i]), 1 - alpha / 2)
    else:
        from scipy.special import betaincinv

        lo_u[need_lo] = betaincinv(cc[need_lo], nn[need_lo] - cc[need_lo] + 1, alpha / 2)
        hi_u[need_hi] = betaincinv(cc[need_hi] + 1, nn[need_hi] - cc[need_hi], 1 - alpha / 2)
    inv = np.ravel(inverse)
    low.ravel()[:] = lo_u[inv]
    high.ravel()[:] = hi_u[inv]
    return Interval(low, high)


_PURE_BETA_TERMS = 20_000
"""Up to this many binomial terms (Σ n + 1 over the distinct pairs), find the beta quantiles
in Python (about 7 µs a term, so at most some 0.14 s); beyond, scipy's ``betaincinv``, whose
import alone takes about 0.2 s."""


def _beta_ppf_int(a: int, b: int, q: float) -> float:
    """The q-quantile of Beta(a, b) for whole a, b ≥ 1: the x with I_x(a, b) = q.

    For whole a and b, I_x(a, b) = P(Binomial(a + b − 1, x) ≥ a) [1]_ (A&S 26.5.24), so
    the tail nearer q is summed term by term (exact log binomial coefficients from
    ``math.comb``), and Newton's method on its logarithm, whose derivative is the beta
    density over the tail, is kept inside a bracket that bisection shrinks whenever a step
    would leave it.

    References
    ----------
    .. [1] M. Abramowitz, I. A. Stegun, *Handbook of Mathematical Functions*, 1964, 26.5.24.
    """
    m = a + b - 1
    upper = q <= 0.5  # sum P(X >= a) when q is small, P(X < a) = 1 - q otherwise
    target = math.log(q if upper else 1 - q)
    logc = [math.log(math.comb(m, x)) for x in range(m + 1)]
    xs = range(a, m + 1) if upper else range(a)
    log_dens0 = math.log(a) + logc[a]  # the beta density is a·C(m, a)·x^(a−1)·(1 − x)^(m − a)
    lo, hi = 0.0, 1.0
    x = a / (a + b)
    for _ in range(200):
        lx, l1x = math.log(x), math.log1p(-x)
        terms = [logc[j] + j * lx + (m - j) * l1x for j in xs]
        top = max(terms)
        log_s = top + math.log(math.fsum(math.exp(t - top) for t in terms))
        f = log_s - target
        if f == 0:
            return x
        if (f > 0) == upper:  # the root lies below x
            hi = x
        else:
            lo = x
        slope = math.exp(log_dens0 + (a - 1) * lx + (m - a) * l1x - log_s)
        new = x - f / (slope if upper else -slope)
        if not lo < new < hi:
            new = 0.5 * (lo + hi)
        if abs(new - x) <= 4e-16 * x or hi - lo <= 4e-16 * hi:
            return new
        x = new
    return x


def binomial_quantile(n: Floats, c: Floats, q: float) -> Floats:
    """Smallest x with P(Binomial(n, c/n) <= x) >= q, per task (scipy ``binom.ppf``).

    Computed once per distinct (n, c) pair: a suite of 100k tasks has few. When
    the pairs are few and small the CDF is summed here from the pmf in log space
    (``math.lgamma``), which spares importing scipy (0.15 s) on the report path;
    otherwise scipy's ``bdtr`` (the regularised incomplete beta) evaluates it.
    """
    out = np.zeros(n.shape, dtype=np.float64)
    if n.size == 0:
        return out
    n_int, c_int = n.ravel().astype(np.int64), c.ravel().astype(np.int64)
    width = int(n_int.max()) + 1
    keys, inverse = np.unique(n_int * width + c_int, return_inverse=True)
    nn, cc = keys // width, keys % width
    if int(np.sum(nn + 1)) <= _PURE_CDF_TERMS:
        values = np.array([_quantile_small(a, b, q) for a, b in zip(nn.tolist(), cc.tolist(),
                                                                      strict=True)], dtype=np.float64)
    else:
        values = _quantile_bdtr(nn, cc, q)
    out.ravel()[:] = values[np.ravel(inverse)]
    return out


_PURE_CDF_TERMS = 200_000
"""Up to this many pmf terms over all distinct (n, c) pairs, sum the CDF in Python."""


def _quantile_small(n: int, c: int, q: float) -> float:
    """:func:`binomial_quantile` for one (n, c), summing the pmf exp(log C(n, x) + x log p
    + (n − x) log(1 − p)) term by term."""
    if n <= 0 or c <= 0:
        return 0.0
    if c >= n:
        return float(n)
    p = c / n
    lp, lq = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    cdf = 0.0
    for x in range(n):
        cdf += math.exp(base - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * lp + (n - x) * lq)
        # 1e-12 guards against the CDF landing a hair under q through rounding.
        if cdf >= q - 1e-12:
            return float(x)
    return float(n)


def _quantile_bdtr(n: Ints, c: Ints, q: float) -> Floats:
    """:func:`binomial_quantile` with scipy's ``bdtr``, on a grid 0..max(n) in slices."""
    from scipy.special import bdtr

    out = np.zeros(n.shape, dtype=np.float64)
    p = np.where(n > 0, c / np.where(n > 0, n, 1), 0.0)
    top = int(n.max())
    step = max(1, 4_000_000 // (top + 1))
    xs = np.arange(top + 1, dtype=np.float64)
    for s in range(0, n.size, step):
        nn = n[s : s + step]
        pp = p[s : s + step]
        cdf = bdtr(xs[None, :], nn[:, None], pp[:, None])
        cdf = np.where(xs[None, :] >= nn[:, None], 1.0, cdf)
        # 1e-12 guards against the CDF landing a hair under q through rounding.
        hit = cdf >= q - 1e-12
        out[s : s + step] = np.argmax(hit, axis=1)
    return out


def flakiness(n: ArrayLike, c: ArrayLike) -> Floats:
    """Flakiness 4·p̂·(1 − p̂): 0 for a task that always passes or always fails, 1 at p̂ = 0.5.

    It is the Bernoulli variance p(1 − p) scaled to [0, 1].
    """
    p = p_hat(n, c)
    return 4 * p * (1 - p)


STABLE_PASS = "stable-pass"
STABLE_FAIL = "stable-fail"
FLAKY = "flaky"
NO_TRIALS = "no-trials"
UNREPEATED = "unrepeated"
"""A task with a single non-errored trial: one outcome says nothing about whether it repeats."""


def rule_of_three(n: ArrayLike, confidence: float = CONFIDENCE) -> Floats:
    """Upper bound on an event's rate after n trials without it: 1 − (1 − confidence)^(1/n).

    At 95% this is about 3/n (the "rule of three"): 0 failures in 1,500 trials
    bound the failure rate below 0.001995. It is the exact one-sided
    Clopper-Pearson bound for zero events.

    References
    ----------
    .. [1] J. A. Hanley, A. Lippman-Hand, "If nothing goes wrong, is everything
       all right? Interpreting zero numerators", JAMA 249(13):1743-1745, 1983.

    Examples
    --------
    >>> round(float(rule_of_three(1500)), 6)
    0.001995
    """
    n_arr = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(n_arr > 0, 1 - (1 - confidence) ** (1 / np.where(n_arr > 0, n_arr, 1)), 1.0)


def _check_k(k: int) -> None:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k ({k!r}) must be a whole number >= 1")
