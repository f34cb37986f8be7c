"""Exact two-sided p-values in integer arithmetic: the sign test and Fisher's 2×2 test.

scipy gives both (``binomtest``, ``fisher_exact``), but importing ``scipy.stats``
costs about half a second, longer than ``report`` takes on a small log. The
counts of an eval comparison are small integers, so the probabilities are sums
of binomial coefficients that Python computes exactly (``math.comb`` on
integers, one correctly rounded division at the end). Past a size budget the
functions hand over to scipy, imported there and only there. Tests pin both
paths to scipy.
"""

from __future__ import annotations

from math import comb

SIGN_TEST_EXACT_MAX = 20_000
"""Up to this many changed tasks the sign test is summed exactly here."""

FISHER_EXACT_MAX_N = 5_000
"""Up to this many trials in a 2×2 table (both runs) Fisher's test is summed exactly here."""


def sign_test_pvalue(fixed: int, broken: int) -> float:
    """Two-sided p-value of ``fixed`` successes in ``fixed + broken`` Binomial(·, 1/2) draws.

    Notes
    -----
    The null distribution is symmetric, so the two-sided p-value (the
    probability of an outcome no more likely than the one seen, as
    ``scipy.stats.binomtest`` defines it) is 2·P(X ≤ min(fixed, broken)),
    capped at 1: Σ_{i ≤ m} C(n, i) / 2^(n−1).

    References
    ----------
    .. [1] W. J. Conover, *Practical Nonparametric Statistics*, 3rd ed., Wiley,
       1999, section 3.4 (the sign test).
    .. [2] scipy.stats.binomtest.

    Examples
    --------
    >>> round(sign_test_pvalue(7, 4), 4)
    0.5488
    """
    n = fixed + broken
    if n == 0:
        return 1.0
    m = min(fixed, broken)
    if 2 * m >= n:
        return 1.0
    if n > SIGN_TEST_EXACT_MAX:
        from scipy.stats import binomtest

        return float(binomtest(fixed, n, 0.5).pvalue)
    term, total = 1, 1  # C(n, 0)
    for i in range(m):
        term = term * (n - i) // (i + 1)
        total += term
    return min(1.0, total / (1 << (n - 1)))


def fisher_pvalue(passes_a: int, n_a: int, passes_b: int, n_b: int) -> float:
    """Fisher's exact two-sided p-value of A's passes/trials against B's.

    Notes
    -----
    Given both runs' trial counts and the total passes K, A's passes follow the
    hypergeometric law P(x) = C(K, x)·C(N − K, n_a − x) / C(N, n_a) under "same
    pass rate". The two-sided p-value sums P over the tables no more likely
    than the one seen (Fisher 1935; the definition of
    ``scipy.stats.fisher_exact`` and R's ``fisher.test``). With integer weights
    the comparison "no more likely" is exact, so no tolerance is needed. A
    table whose margins admit one table only (no trial in a run, or every trial
    passed or every one failed in both) has p = 1.

    References
    ----------
    .. [1] R. A. Fisher, *The Design of Experiments*, Oliver & Boyd, 1935.
    .. [2] A. Agresti, "A Survey of Exact Inference for Contingency Tables",
       Statistical Science 7(1):131-153, 1992.

    Examples
    --------
    >>> round(fisher_pvalue(8, 10, 1, 6), 6)
    0.034965
    """
    n = n_a + n_b
    k = passes_a + passes_b
    if n_a == 0 or n_b == 0 or k == 0 or k == n:
        return 1.0
    if n > FISHER_EXACT_MAX_N:
        from scipy.stats import fisher_exact

        table = [[passes_a, n_a - passes_a], [passes_b, n_b - passes_b]]
        return float(fisher_exact(table).pvalue)
    lo, hi = max(0, n_a - (n - k)), min(k, n_a)
    weights = [comb(k, x) * comb(n - k, n_a - x) for x in range(lo, hi + 1)]
    seen = weights[passes_a - lo]
    tail = sum(w for w in weights if w <= seen)
    return min(1.0, tail / comb(n, n_a))
