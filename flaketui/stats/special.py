"""The special functions the statistics need on the report path, vectorised and without scipy.

log Γ, log B(a, b) and the regularised incomplete beta function I_x(a, b), over arrays. Importing
``scipy.special`` takes longer than a small report, and the arrays here are small (the distinct
(n, c) pairs of a suite, a grid of counts, one degrees-of-freedom value), so log Γ is
``math.lgamma`` element by element and I_x(a, b) a continued fraction in numpy. Tests pin each to
``scipy.special`` (``gammaln``, ``betaln``, ``betainc``).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from flaketui.stats.arrays import Floats

_LGAMMA = np.frompyfunc(math.lgamma, 1, 1)


def lgamma(x: ArrayLike) -> Floats:
    """log Γ(x) per element (``scipy.special.gammaln``), by ``math.lgamma``.

    Examples
    --------
    >>> lgamma([1.0, 5.0]).round(6).tolist()
    [0.0, 3.178054]
    """
    return np.asarray(_LGAMMA(np.asarray(x, dtype=np.float64)), dtype=np.float64)


def lbeta(a: ArrayLike, b: ArrayLike) -> Floats:
    """log B(a, b) = log Γ(a) + log Γ(b) − log Γ(a + b) per element (``scipy.special.betaln``).

    Examples
    --------
    >>> round(float(np.exp(lbeta(2.0, 3.0))), 12)  # B(2, 3) = 1!·2!/4! = 1/12
    0.083333333333
    """
    a_arr = np.asarray(a, dtype=np.float64)
    b_arr = np.asarray(b, dtype=np.float64)
    return lgamma(a_arr) + lgamma(b_arr) - lgamma(a_arr + b_arr)


def log_choose(n: ArrayLike, k: ArrayLike) -> Floats:
    """log C(n, k) = log Γ(n + 1) − log Γ(k + 1) − log Γ(n − k + 1) per element, 0 ≤ k ≤ n."""
    n_arr = np.asarray(n, dtype=np.float64)
    k_arr = np.asarray(k, dtype=np.float64)
    return lgamma(n_arr + 1) - lgamma(k_arr + 1) - lgamma(n_arr - k_arr + 1)


def betainc(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> Floats:
    """The regularised incomplete beta function I_x(a, b), per element of ``a``, ``b`` and ``x``
    broadcast together (``scipy.special.betainc``); at least one dimension.

    Lentz's continued fraction (DLMF 8.17.22), evaluated at x where x < (a + 1)/(a + b + 2) and
    through I_x(a, b) = 1 − I_{1−x}(b, a) elsewhere, where it converges fast.

    References
    ----------
    .. [1] NIST Digital Library of Mathematical Functions, §8.17(v), eq. 8.17.22.
    .. [2] W. H. Press et al., *Numerical Recipes*, 3rd ed., Cambridge, 2007, §6.4 (``betacf``).

    Examples
    --------
    >>> round(float(betainc(2.0, 3.0, 0.4)[0]), 6)
    0.5248
    """
    a_arr, b_arr, x_arr = np.broadcast_arrays(np.atleast_1d(np.asarray(a, dtype=np.float64)),
                                              np.asarray(b, dtype=np.float64), np.asarray(x, dtype=np.float64))
    low, high = x_arr <= 0, x_arr >= 1
    inside = np.clip(x_arr, 1e-300, 1 - 1e-16)
    flip = inside >= (a_arr + 1) / (a_arr + b_arr + 2)
    aa, bb = np.where(flip, b_arr, a_arr), np.where(flip, a_arr, b_arr)
    xx = np.where(flip, 1 - inside, inside)
    log_front = lgamma(aa + bb) - lgamma(aa) - lgamma(bb) + aa * np.log(xx) + bb * np.log1p(-xx)
    tiny = 1e-300
    qab, qap, qam = aa + bb, aa + 1, aa - 1
    cc = np.ones_like(aa)
    d = 1 - qab * xx / qap
    d = 1 / np.where(np.abs(d) < tiny, tiny, d)
    h = d.copy()
    for m in range(1, 400):
        m2 = 2 * m
        num = m * (bb - m) * xx / ((qam + m2) * (aa + m2))
        d = 1 + num * d
        d = 1 / np.where(np.abs(d) < tiny, tiny, d)
        cc = 1 + num / cc
        cc = np.where(np.abs(cc) < tiny, tiny, cc)
        h = h * d * cc
        num = -(aa + m) * (qab + m) * xx / ((aa + m2) * (qap + m2))
        d = 1 + num * d
        d = 1 / np.where(np.abs(d) < tiny, tiny, d)
        cc = 1 + num / cc
        cc = np.where(np.abs(cc) < tiny, tiny, cc)
        delta = d * cc
        h = h * delta
        if np.all(np.abs(delta - 1) < 1e-15):
            break
    value = np.exp(log_front) * h / aa
    out = np.clip(np.where(flip, 1 - value, value), 0.0, 1.0)
    return np.where(low, 0.0, np.where(high, 1.0, out))
