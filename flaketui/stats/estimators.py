"""Per-task estimators: p̂ with its Wilson interval, pass@k, pass^k, its exact
bootstrap interval, flakiness and the rule of three.

Every function takes numpy arrays of trial counts ``n`` and passes ``c`` (or
scalars) and works on all tasks at once. Pure numpy/scipy: no Textual, no Rich.
scipy is imported inside the functions that need it, so that opening a log
does not wait for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

CONFIDENCE = 0.95
"""Confidence level of every interval flaketui reports."""


@dataclass(frozen=True)
class Interval:
    """A confidence interval ``[low, high]`` (arrays when computed for many tasks)."""

    low: NDArray[np.float64]
    high: NDArray[np.float64]


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


def _counts(n: ArrayLike, c: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    n_arr = np.asarray(n, dtype=np.float64)
    c_arr = np.asarray(c, dtype=np.float64)
    if np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise ValueError("passes (c) must lie between 0 and the number of trials (n)")
    return n_arr, c_arr


def p_hat(n: ArrayLike, c: ArrayLike) -> NDArray[np.float64]:
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


def _ratio_product(top: NDArray[np.float64], n: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """prod_{i<k} (top - i) / (n - i): C(top, k)/C(n, k) without factorials.

    Factors past i = n are never used (the callers give NaN where k > n), so at most
    max(n) + 1 are formed: ``k = 10**20`` costs no more than ``k = max(n) + 1``."""
    k = min(k, int(n.max(initial=0)) + 1)
    i = np.arange(k, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = (top[..., None] - i) / (n[..., None] - i)
    ratios = np.clip(ratios, 0.0, None)
    return np.prod(ratios, axis=-1)


def pass_hat_k(n: ArrayLike, c: ArrayLike, k: int) -> NDArray[np.float64]:
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


def pass_at_k(n: ArrayLike, c: ArrayLike, k: int) -> NDArray[np.float64]:
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


def pass_hat_k_interval(
    n: ArrayLike, c: ArrayLike, k: int, confidence: float = CONFIDENCE
) -> Interval:
    """Exact percentile-bootstrap interval for a task's pass^k.

    Resampling the task's n trials with replacement gives C* ~ Binomial(n, p̂)
    passes, and pass^k = C(C*, k)/C(n, k) rises with C*, so the bootstrap
    percentiles are the pass^k of the binomial quantiles of C*. They are
    computed from the distribution itself: deterministic, no random draws.

    Returns
    -------
    Interval
        Per task; NaN where k > n. Degenerate ([1, 1] or [0, 0]) when every
        trial passed or failed: use :func:`rule_of_three` there.

    References
    ----------
    .. [1] B. Efron, R. Tibshirani, "An Introduction to the Bootstrap",
       Chapman & Hall, 1993 (percentile interval, ch. 13).
    .. [2] S. Yao et al., "τ-bench", arXiv:2406.12045, 2024 (pass^k).
    """
    _check_k(k)
    n_arr, c_arr = _counts(n, c)
    alpha = 1 - confidence
    q_lo = binomial_quantile(n_arr, c_arr, alpha / 2)
    q_hi = binomial_quantile(n_arr, c_arr, 1 - alpha / 2)
    low = _ratio_product(q_lo, n_arr, k)
    high = _ratio_product(q_hi, n_arr, k)
    ok = n_arr >= k
    return Interval(np.where(ok, low, np.nan), np.where(ok, high, np.nan))


def binomial_quantile(n: NDArray[np.float64], c: NDArray[np.float64], q: float) -> NDArray[np.float64]:
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


def _quantile_bdtr(n: NDArray[np.int64], c: NDArray[np.int64], q: float) -> NDArray[np.float64]:
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


def flakiness(n: ArrayLike, c: ArrayLike) -> NDArray[np.float64]:
    """Flakiness 4·p̂·(1 − p̂): 0 for a task that always passes or always fails, 1 at p̂ = 0.5.

    It is the Bernoulli variance p(1 − p) scaled to [0, 1].
    """
    p = p_hat(n, c)
    return 4 * p * (1 - p)


STABLE_PASS = "stable-pass"
STABLE_FAIL = "stable-fail"
FLAKY = "flaky"
NO_TRIALS = "no-trials"


def classify(n: ArrayLike, c: ArrayLike) -> list[str]:
    """``stable-pass`` (c = n), ``stable-fail`` (c = 0), else ``flaky``; ``no-trials`` at n = 0."""
    n_arr, c_arr = _counts(n, c)
    labels = (NO_TRIALS, STABLE_PASS, STABLE_FAIL, FLAKY)
    code = np.select([n_arr == 0, c_arr == n_arr, c_arr == 0], [0, 1, 2], default=3)
    return list(map(labels.__getitem__, np.ravel(code).tolist()))


def rule_of_three(n: ArrayLike, confidence: float = CONFIDENCE) -> NDArray[np.float64]:
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
