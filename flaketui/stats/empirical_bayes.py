"""Empirical Bayes over a suite's tasks: how likely each task is to be flaky, and how many are.

With three to ten trials a task's own interval rarely decides it (a task must
pass every one of :func:`~flaketui.stats.classes.stable_after` trials before its
exact interval calls it stable), but the suite as a whole says a lot: if most tasks pass or fail nearly
always, a task that passed 4 of 5 is more likely a stable task that failed once
than a flaky one. The pass rates of the tasks are taken as draws from a
Beta(a, b) prior fitted to the suite by marginal likelihood (the beta-binomial
model), and each task's posterior gives P(flakiness > cap) and its posterior mean
flakiness; their sum over tasks is the suite's expected number of truly flaky
tasks, with a Poisson-binomial interval.

Pure numpy: the marginal likelihood of whole-number counts is a sum of logs (with
Stirling's series for long tasks, no gamma function), the incomplete beta function is a continued fraction
(:func:`flaketui.stats.special.betainc`), and
the Poisson-binomial law comes from its characteristic function. Tests pin
each to ``scipy.stats.betabinom`` with ``scipy.optimize``, ``scipy.special.betainc``
and a brute-force convolution; scipy is not imported here because importing it
takes longer than a small report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from flaketui.stats.arrays import Floats, Ints
from flaketui.stats.classes import DEFAULT_FLAKY_CAP, cap_rates
from flaketui.stats.estimators import CONFIDENCE
from flaketui.stats.special import betainc, log_choose

MIN_TASKS_TO_FIT = 10
"""Fewer tasks with two or more trials than this do not tell a prior's spread: Jeffreys' Beta(½, ½)
is used instead (and said)."""

JEFFREYS = (0.5, 0.5)

_S_RANGE = (0.02, 1e4)
"""Bounds of the prior's a + b: a suite whose tasks all pass or all fail every trial pushes the
fit to a boundary (its likelihood rises without end as a + b → 0 or the mean → 0 or 1)."""
_MEAN_RANGE = (1e-4, 1 - 1e-4)


@dataclass(frozen=True)
class BetaPrior:
    """The Beta(a, b) prior of the tasks' pass rates (:func:`fit_prior`)."""

    a: float
    b: float
    fitted: bool
    """False: too few tasks with repeated trials, Jeffreys' prior instead."""
    log_likelihood: float = float("nan")
    """The beta-binomial log marginal likelihood at (a, b), binomial coefficients included."""
    symmetric: bool = False
    """The symmetric fit Beta(a, a), the best fit not rejecting it (:func:`fit_prior`)."""

    @property
    def mean(self) -> float:
        return self.a / (self.a + self.b)


@dataclass(frozen=True)
class FlakyPosterior:
    """Each task's posterior under the fitted prior, and the suite's expected flaky count."""

    prior: BetaPrior
    cap: float
    p_flaky: Floats
    """P(flakiness > cap | the task's trials); NaN for a task without trials."""
    flakiness: Floats
    """Posterior mean of 4p(1 − p); NaN for a task without trials."""
    expected: float
    """Σ P(flaky) over the tasks with trials: the expected number of truly flaky tasks."""
    interval: tuple[int, int]
    """Its 95% interval: the 2.5% and 97.5% quantiles of the Poisson-binomial count."""


def _histograms(n: Ints, c: Ints, w: Floats
                ) -> tuple[Floats, Floats, Floats]:
    """S_a[j] = Σ w·[c > j], S_b[j] = Σ w·[n − c > j], S_n[j] = Σ w·[n > j], j = 0..max n − 1."""
    top = int(n.max()) if n.size else 0

    def above(x: Ints) -> Floats:
        counts = np.bincount(x, weights=w, minlength=top + 1)
        return counts[::-1].cumsum()[::-1][1:]  # Σ w·[x ≥ j + 1]

    return above(c), above(n - c), above(n)


def log_marginal(a: ArrayLike, b: ArrayLike, n: ArrayLike, c: ArrayLike) -> Floats:
    """Σ over tasks of log BetaBinom(c; n, a, b), without the binomial coefficients (they do not
    depend on a, b), for every (a, b) given (arrays broadcast).

    For whole-number counts B(c + a, n − c + b)/B(a, b) = Π_{j<c}(a + j) Π_{j<n−c}(b + j) / Π_{j<n}(a + b + j),
    so the log-likelihood is Σ_j S_a[j] log(a + j) + S_b[j] log(b + j) − S_n[j] log(a + b + j) with the
    counts S of :func:`_histograms` (Minka 2000, eq. 54; Skellam 1948).
    """
    n_arr = np.asarray(n, dtype=np.int64).ravel()
    c_arr = np.asarray(c, dtype=np.int64).ravel()
    s_a, s_b, s_n = _histograms(n_arr, c_arr, np.ones(n_arr.shape))
    return _loglik(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), s_a, s_b, s_n)


def _loglik(a: Floats, b: Floats, s_a: Floats, s_b: Floats,
            s_n: Floats) -> Floats:
    j = np.arange(s_n.size, dtype=np.float64)
    a_, b_ = np.asarray(a)[..., None], np.asarray(b)[..., None]
    return np.asarray((s_a * np.log(a_ + j) + s_b * np.log(b_ + j) - s_n * np.log(a_ + b_ + j)).sum(axis=-1))


_STIRLING_SHIFT = 10
"""log Γ is taken by Stirling's series from this argument up (error below 1e-13 there)."""


def _stirling_lgamma(z: Floats) -> Floats:
    """log Γ(z) for z ≥ :data:`_STIRLING_SHIFT` by Stirling's series to the z^(−7) term (DLMF 5.11.1)."""
    r = 1 / z
    r2 = r * r
    series = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 / 1680)))
    return (z - 0.5) * np.log(z) - z + 0.5 * np.log(2 * np.pi) + series


def log_rising(x: Floats, m: int) -> Floats:
    """log of the rising factorial x(x + 1)…(x + m − 1), for x > 0 and a whole m ≥ 0.

    A sum of logs for m below :data:`_STIRLING_SHIFT`, else log Γ(x + m) − log Γ(x) with
    log Γ(x) = log Γ(x + s) − Σ_{j<s} log(x + j) and Stirling's series at x + s and x + m: the
    time and memory do not grow with m (a task of 20,000 trials or k in the billions stays a
    few grid-sized arrays). At m in the billions the logs' rounding leaves a relative error near 1e-5
    in a ratio of two such factorials."""
    shift = min(m, _STIRLING_SHIFT)
    head = np.zeros_like(x)
    for j in range(shift):
        head += np.log(x + j)
    if m <= _STIRLING_SHIFT:
        return head
    return head + _stirling_lgamma(x + m) - _stirling_lgamma(x + _STIRLING_SHIFT)


def _pairs_loglik(a: Floats, b: Floats, pairs: Ints,
                  counts: Ints) -> Floats:
    """:func:`_loglik` summed over the distinct (n, c) pairs with :func:`log_rising`:
    Σ w·[log a^(c) + log b^(n−c) − log (a + b)^(n)], x^(m) the rising factorial."""
    ll = np.zeros(np.broadcast(a, b).shape)
    for (nn, cc), w in zip(pairs.tolist(), np.asarray(counts).tolist(), strict=True):
        ll += w * (log_rising(a, cc) + log_rising(b, nn - cc) - log_rising(a + b, nn))
    return ll


def fit_prior(n: ArrayLike, c: ArrayLike, weights: ArrayLike | None = None,
              symmetric_unless_rejected: bool = False) -> BetaPrior:
    """The Beta(a, b) prior of the pass rates that maximises the suite's beta-binomial likelihood.

    Parameters
    ----------
    n, c : array_like
        Trials and passes per task (tasks without trials are left out).
    weights : array_like, optional
        How many tasks have each (n, c), when ``n`` and ``c`` are distinct pairs.
    symmetric_unless_rejected : bool
        Fit the symmetric prior Beta(a, a) too and return it unless the likelihood-ratio test
        rejects it at 5% (:data:`SYMMETRY_TEST`): what :func:`flaky_posterior` ranks tasks with.

    Notes
    -----
    Maximised over the mean μ = a/(a + b) (logit scale) and the size a + b (log
    scale) by a grid search refined four times around the best point, each
    grid 41 × 41: the likelihood of a beta-binomial suite can be flat along a
    ridge and peaks on a boundary when every task passed or failed all its trials,
    where a gradient method wanders. A task with one trial tells only the
    mean; fewer than :data:`MIN_TASKS_TO_FIT` tasks with two or more trials
    cannot tell the spread, and Jeffreys' Beta(½, ½) is used instead.

    Why the symmetric prior when the data cannot reject it: with few trials, a suite whose
    stable tasks sit as much near 0 as near 1 has its fitted mean pulled off ½ by chance,
    towards the side whose stable tasks happened to fail or pass once more often. That
    side's mixed tasks (c = 1 against c = n − 1) then get the larger P(flaky) and rank first,
    although they are the ones more likely to be stable: at n = 3 the empirical-Bayes
    ranking's precision at the true count fell below that of ranking by p̂
    (``docs/calibration.md``, Classes). The restricted fit (Wilks' likelihood-ratio test,
    χ²(1)) gives c and n − c the same chance unless the suite shows its tilt.

    References
    ----------
    .. [1] J. G. Skellam, "A probability distribution derived from the binomial
       distribution by regarding the probability of success as variable between
       the sets of trials", J. R. Statist. Soc. B 10(2):257-261, 1948.
    .. [2] T. P. Minka, "Estimating a Dirichlet distribution", technical report,
       2000 (the count-histogram form of the likelihood).
    .. [3] B. Efron, *Large-Scale Inference*, Cambridge, 2010, ch. 1 and 11
       (empirical Bayes).
    .. [4] S. S. Wilks, "The large-sample distribution of the likelihood ratio for testing
       composite hypotheses", Ann. Math. Statist. 9(1):60-62, 1938.
       doi:10.1214/aoms/1177732360

    Examples
    --------
    >>> prior = fit_prior([5] * 40, [5] * 18 + [0] * 18 + [2, 3, 3, 2])
    >>> prior.fitted, prior.a < 1 and prior.b < 1
    (True, True)
    """
    n_arr = np.asarray(n, dtype=np.int64).ravel()
    c_arr = np.asarray(c, dtype=np.int64).ravel()
    w_arr = np.ones(n_arr.shape, dtype=np.int64) if weights is None else np.asarray(weights, dtype=np.int64).ravel()
    keep = n_arr > 0
    n_arr, c_arr, w_arr = n_arr[keep], c_arr[keep], w_arr[keep]
    if int(np.sum(w_arr[n_arr >= 2])) < MIN_TASKS_TO_FIT:
        return BetaPrior(*JEFFREYS, fitted=False)
    if weights is None:
        pairs, counts = np.unique(np.stack([n_arr, c_arr], axis=1), axis=0, return_counts=True)
    else:
        pairs, counts = np.stack([n_arr, c_arr], axis=1), w_arr
    s_a, s_b, s_n = _histograms(pairs[:, 0], pairs[:, 1], counts.astype(np.float64))
    # The histogram form costs a grid of logs per trial of the longest task; the pairs form about
    # twenty per distinct (n, c): a task of 20,000 trials made the first take seconds and a gigabyte.
    if s_n.size <= 20 * len(pairs):
        def loglik(a_: Floats, b_: Floats) -> Floats:
            return _loglik(a_, b_, s_a, s_b, s_n)
    else:
        def loglik(a_: Floats, b_: Floats) -> Floats:
            return _pairs_loglik(a_, b_, pairs, counts)
    a, b = _fit(loglik, symmetric=False)
    symmetric = False
    if symmetric_unless_rejected:
        a_s, b_s = _fit(loglik, symmetric=True)
        drop = float(loglik(np.asarray(a), np.asarray(b)) - loglik(np.asarray(a_s), np.asarray(b_s)))
        if drop < SYMMETRY_TEST:
            a, b, symmetric = a_s, b_s, True
    choose = float(np.sum(counts * log_choose(pairs[:, 0], pairs[:, 1])))
    return BetaPrior(a, b, fitted=True,
                     log_likelihood=float(loglik(np.asarray(a), np.asarray(b))) + choose,
                     symmetric=symmetric)


SYMMETRY_TEST = 1.920729410347062
"""Half the 95% quantile of χ²(1) (3.841…/2): a symmetric prior (mean ½) whose log-likelihood is
less than this below the best fit's is not rejected by the likelihood-ratio test (Wilks)."""


def _fit(loglik: Callable[[Floats, Floats], Floats],
         symmetric: bool) -> tuple[float, float]:
    """The (a, b) of largest likelihood ``loglik`` on the grid search of :func:`fit_prior` (Notes);
    with ``symmetric``, over the size a + b alone at the mean ½."""
    lo_m, hi_m = (0.0, 0.0) if symmetric else tuple(math.log(x / (1 - x)) for x in _MEAN_RANGE)
    lo_s, hi_s = (math.log(x) for x in _S_RANGE)
    best = (0.0, 0.0)
    size = 41
    for _ in range(5):
        ms = np.linspace(lo_m, hi_m, 1 if symmetric else size)
        ss = np.linspace(lo_s, hi_s, size)
        mu = 1 / (1 + np.exp(-ms))[:, None]
        s = np.exp(ss)[None, :]
        ll = loglik(mu * s, (1 - mu) * s)
        i, k = np.unravel_index(int(np.argmax(ll)), ll.shape)
        best = (float(ms[i]), float(ss[k]))
        step_m, step_s = (hi_m - lo_m) / (size - 1), (hi_s - lo_s) / (size - 1)
        lo_m, hi_m = max(lo_m, best[0] - 2 * step_m), min(hi_m, best[0] + 2 * step_m)
        lo_s, hi_s = max(lo_s, best[1] - 2 * step_s), min(hi_s, best[1] + 2 * step_s)
    mu_b = 1 / (1 + math.exp(-best[0]))
    size_b = math.exp(best[1])
    return mu_b * size_b, (1 - mu_b) * size_b


def poisson_binomial(p: ArrayLike) -> Floats:
    """The law of the number of successes among independent trials with chances ``p``: P(K = 0..T).

    From its characteristic function by the discrete Fourier transform (Hong's DFT-CF):
    P(K = k) = (1/(T + 1)) Σ_l exp(−iωlk) Π_j (1 − p_j + p_j exp(iωl)), ω = 2π/(T + 1). The
    product is taken over the distinct chances, each raised to its count, so a suite of many
    tasks with few distinct (n, c) pairs costs little.

    References
    ----------
    .. [1] Y. Hong, "On computing the distribution function for the Poisson
       binomial distribution", Computational Statistics & Data Analysis
       59:41-51, 2013. doi:10.1016/j.csda.2012.10.006

    Examples
    --------
    >>> poisson_binomial([0.5, 0.5]).round(6).tolist()
    [0.25, 0.5, 0.25]
    """
    p_arr = np.asarray(p, dtype=np.float64).ravel()
    t = p_arr.size
    if t == 0:
        return np.ones(1)
    values, counts = np.unique(p_arr, return_counts=True)
    z = np.exp(2j * np.pi * np.arange(t + 1) / (t + 1))
    log_phi = np.zeros(t + 1, dtype=np.complex128)
    with np.errstate(divide="ignore"):
        for v, m in zip(values.tolist(), counts.tolist(), strict=True):
            log_phi += m * np.log(1 - v + v * z)
    phi = np.exp(log_phi)
    pmf = np.real(np.fft.fft(phi)) / (t + 1)
    pmf = np.clip(pmf, 0.0, None)
    return pmf / pmf.sum()


EXACT_COUNT_MAX = 5_000
"""Up to this many tasks the flaky count's law is computed exactly (:func:`poisson_binomial`); beyond,
the refined normal approximation, whose error is far below one task there."""


def count_interval(chances: Floats, confidence: float = CONFIDENCE,
                   weights: Ints | None = None) -> tuple[int, int]:
    """The central ``confidence`` range of the number of successes among trials with ``chances``.

    The 1 − α/2 and α/2 quantiles of the Poisson-binomial law: exact up to
    :data:`EXACT_COUNT_MAX` trials, beyond by the refined normal approximation
    G(x) = Φ(x) + γ(1 − x²)φ(x)/6 at x = (k + ½ − μ)/σ with the law's skewness γ
    (Volkova 1996), which Hong (2013) finds accurate to ~1e-4 and better with more trials.

    References
    ----------
    .. [1] Y. Hong, Computational Statistics & Data Analysis 59:41-51, 2013, §2.
    .. [2] A. Y. Volkova, "A refinement of the central limit theorem for sums of
       independent random indicators", Theory Probab. Appl. 40(4):791-794, 1996.

    Examples
    --------
    >>> count_interval(np.full(100, 0.5))
    (40, 60)
    """
    chances = np.asarray(chances, dtype=np.float64)
    w = np.ones(chances.shape) if weights is None else np.asarray(weights, dtype=np.float64)
    tail = (1 - confidence) / 2
    size = int(w.sum())
    if size <= EXACT_COUNT_MAX:
        cdf = np.cumsum(poisson_binomial(np.repeat(chances, w.astype(np.int64))))
    else:
        mu = float(np.sum(w * chances))
        var = float(np.sum(w * chances * (1 - chances)))
        if var <= 0:
            return round(mu), round(mu)
        sd = math.sqrt(var)
        gamma = float(np.sum(w * chances * (1 - chances) * (1 - 2 * chances))) / sd**3
        lo_k, hi_k = max(0, int(mu - 10 * sd) - 1), min(size, int(mu + 10 * sd) + 2)
        k = np.arange(lo_k, hi_k + 1, dtype=np.float64)
        x = (k + 0.5 - mu) / sd
        phi = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
        big_phi = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
        cdf_part = np.clip(big_phi + gamma * (1 - x * x) * phi / 6, 0.0, 1.0)
        low = lo_k + int(np.searchsorted(np.maximum.accumulate(cdf_part), tail - 1e-12, side="left"))
        high = lo_k + int(np.searchsorted(np.maximum.accumulate(cdf_part), 1 - tail - 1e-12, side="left"))
        return low, min(high, size)
    low = int(np.searchsorted(cdf, tail - 1e-12, side="left"))
    high = int(np.searchsorted(cdf, 1 - tail - 1e-12, side="left"))
    return low, min(high, size)


def flaky_posterior(n: ArrayLike, c: ArrayLike, cap: float = DEFAULT_FLAKY_CAP,
                    prior: BetaPrior | None = None, confidence: float = CONFIDENCE,
                    weights: ArrayLike | None = None) -> FlakyPosterior:
    """Each task's posterior P(flakiness > cap) and mean flakiness under the suite's fitted prior.

    With the prior Beta(a, b) (:func:`fit_prior`, the symmetric fit unless the suite rejects it)
    a task with c passes in n
    trials has the posterior Beta(a + c, b + n − c); flakiness exceeds the cap
    exactly when p_lo < p < p_hi (:func:`~flaketui.stats.classes.cap_rates`), so
    P(flaky) = I_{p_hi}(a + c, b + n − c) − I_{p_lo}(a + c, b + n − c), and the
    posterior mean of 4p(1 − p) is 4αβ / ((α + β)(α + β + 1)) with α = a + c,
    β = b + n − c. The expected number of truly flaky tasks is Σ P(flaky); its
    interval is the central ``confidence`` range of the Poisson-binomial count
    with those chances (tasks independent given the prior; the prior's own
    uncertainty is not in it). Under a symmetric prior (a = b) the band is symmetric about ½, so a
    task's figures are those of its mirror image (n − c passes), and are computed from it: the two
    tie exactly, rather than in all but the last bit (which ordered a ranking by P(flaky) by rounding
    where the observed flakiness ties them). With ``weights``, ``n`` and ``c`` are distinct (n, c) pairs and
    ``weights`` how many tasks have each (the arrays returned are then per pair).

    References
    ----------
    .. [1] B. Efron, C. Morris, "Data analysis using Stein's estimator and its
       generalizations", JASA 70(350):311-319, 1975.
    .. [2] A. Gelman et al., *Bayesian Data Analysis*, 3rd ed., CRC, 2013, §5.3
       (the beta-binomial hierarchy).
    .. [3] Y. Hong, Computational Statistics & Data Analysis 59:41-51, 2013.
    """
    p_lo, p_hi = cap_rates(cap)
    n_arr = np.atleast_1d(np.asarray(n, dtype=np.int64))
    c_arr = np.atleast_1d(np.asarray(c, dtype=np.int64))
    w_arr = None if weights is None else np.atleast_1d(np.asarray(weights, dtype=np.int64))
    prior = prior or fit_prior(n_arr, c_arr, w_arr, symmetric_unless_rejected=True)
    p_flaky = np.full(n_arr.shape, np.nan)
    mean_f = np.full(n_arr.shape, np.nan)
    has = n_arr > 0
    if has.any():
        if w_arr is None:
            pairs, inverse = np.unique(np.stack([n_arr[has], c_arr[has]], axis=1), axis=0, return_inverse=True)
        else:
            pairs, inverse = np.stack([n_arr[has], c_arr[has]], axis=1), np.arange(int(has.sum()))
        passes = pairs[:, 1]
        if prior.a == prior.b:  # mirror images (c and n − c) tie exactly, as their 4p̂(1 − p̂) does
            passes = np.minimum(passes, pairs[:, 0] - passes)
        alpha = prior.a + passes
        beta = prior.b + pairs[:, 0] - passes
        prob = np.clip(betainc(alpha, beta, p_hi) - betainc(alpha, beta, p_lo), 0.0, 1.0)
        total = alpha + beta
        p_flaky[has] = prob[np.ravel(inverse)]
        mean_f[has] = (4 * alpha * beta / (total * (total + 1)))[np.ravel(inverse)]
    chances = p_flaky[has]
    counts = None if w_arr is None else w_arr[has]
    expected = float(chances.sum() if counts is None else np.sum(chances * counts))
    return FlakyPosterior(prior=prior, cap=cap, p_flaky=p_flaky, flakiness=mean_f, expected=expected,
                          interval=count_interval(chances, confidence, counts))

