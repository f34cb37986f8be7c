"""Planning the next run: how many trials and tasks are enough, and where to spend them.

Per task: the rule-of-three bound and the clean trials that would bound a
failure rate below a target, the trials that would narrow the Wilson interval
under a target width, and whether the task is already *decided*. Per suite:
the tasks needed to detect a difference (independent and paired designs), a
projection of pass@k and pass^k beyond the measured trials, and a greedy
allocation of a budget of further trials that shrinks the variance of the
suite's pass^k most. Risk tiers give tagged or previously flaky tasks a higher
minimum number of trials.

Pure numpy/scipy: no Textual, no Rich. The only input/output is
:func:`read_task_extras`, which reads one trial per task back from disk to
find its tags.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from flaketui.model import RunOutcomes, TrialLog
from flaketui.stats.estimators import (
    CONFIDENCE,
    FLAKY,
    NO_TRIALS,
    STABLE_FAIL,
    STABLE_PASS,
    classify,
    p_hat,
    pass_hat_k,
    rule_of_three,
    wilson_interval,
    z_value,
)
from flaketui.stats.suite import MeanEstimate, default_k, summarise, task_stats

UNDECIDED = "undecided"
"""Decision of a task whose Wilson interval straddles a boundary of the three zones."""

HIGH, LOW = "high", "low"
"""Risk tiers: ``high`` (tagged high-risk or write, or flaky before) and ``low`` (the rest)."""

DEFAULT_RISK_TAGS = ("high-risk", "write")
"""Tags (in a trial's ``tags`` or ``risk`` field) that put a task in the high tier."""

LOW_TEMPERATURE = 0.3
"""At or below this sampling temperature trials are nearly identical (see :func:`projection`)."""

DESIGN_NOT_TESTS = (
    "a failure rate of one in a million needs about {n:,} clean trials to bound "
    "(rule of three): such claims must come from design (guards, permissions, "
    "human review), not from tests"
)
"""The plain statement about tiny failure rates, with the exact trial count filled in."""

INDEPENDENCE_CAVEAT = (
    "projections assume independent trials: at low temperature trials are nearly "
    "identical, extra samples help little, and pass@k is overstated"
)
"""The caveat shown with every projection of pass@k and pass^k."""


# --- per task -----------------------------------------------------------------


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
    out: list[str] = []
    # A tiny tolerance so that a bound computed as 0.8999999 counts as 0.9.
    eps = 1e-12
    for nn, a, b in zip(np.atleast_1d(n_arr).tolist(), lo.tolist(), hi.tolist(), strict=True):
        if nn == 0:
            out.append(NO_TRIALS)
        elif a >= 1 - margin - eps:
            out.append(STABLE_PASS)
        elif b <= margin + eps:
            out.append(STABLE_FAIL)
        elif a >= margin - eps and b <= 1 - margin + eps:
            out.append(FLAKY)
        else:
            out.append(UNDECIDED)
    return out


def shrunk_rate(n: ArrayLike, c: ArrayLike, confidence: float = CONFIDENCE) -> NDArray[np.float64]:
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
) -> NDArray[np.float64]:
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


# --- per suite and per comparison ---------------------------------------------


@dataclass(frozen=True)
class SampleSize:
    """Tasks needed to detect a difference, and the inputs that gave it."""

    tasks: int | None
    """Tasks per model (independent) or task pairs (paired); None if no difference."""
    p1: float
    p2: float
    power: float
    alpha: float
    design: str
    """``independent`` or ``paired``."""
    discordance: float | None = None
    """ψ, the paired design's chance that the two models disagree on a task."""
    note: str = ""


def _z_sum(power: float, alpha: float) -> float:
    if not 0 < power < 1:
        raise ValueError(f"power ({power}) must be between 0 and 1")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha ({alpha}) must be between 0 and 1")
    nd = NormalDist()
    return nd.inv_cdf(1 - alpha / 2) + nd.inv_cdf(power)


def tasks_independent(p1: float, p2: float, power: float = 0.8, alpha: float = 0.05) -> SampleSize:
    """Tasks per model to tell pass rates p1 and p2 apart with independent samples.

    ``n = (z_{α/2} + z_β)² (p1(1 − p1) + p2(1 − p2)) / (p1 − p2)²``, rounded up.

    Parameters
    ----------
    p1, p2 : float
        The two pass rates, in [0, 1].
    power : float
        1 − β, the chance of detecting the difference when it is real (0.8).
    alpha : float
        Two-sided significance level (0.05).

    Notes
    -----
    The normal-approximation formula for comparing two independent binomial
    proportions, with the unpooled variance under both hypotheses and without
    continuity correction (Chow, Shao & Wang 2008, §4.2). 85% vs 90% at 80%
    power and 5% needs 683 tasks per model. Fleiss et al. (2003, eq. 4.14
    without the correction term) use the pooled variance 2p̄(1 − p̄) under H0
    and give 686 (as does statsmodels' ``power_proportions_2indep``). If both
    models run the same tasks, the paired design (:func:`tasks_paired`) needs
    far fewer.

    References
    ----------
    .. [1] J. L. Fleiss, B. Levin, M. C. Paik, "Statistical Methods for Rates
       and Proportions", 3rd ed., Wiley, 2003, ch. 4. doi:10.1002/0471445428
    .. [2] S.-C. Chow, J. Shao, H. Wang, "Sample Size Calculations in Clinical
       Research", 2nd ed., Chapman & Hall/CRC, 2008, §4.2.

    Examples
    --------
    >>> tasks_independent(0.85, 0.90).tasks
    683
    """
    for name, value in (("p1", p1), ("p2", p2)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} ({value}) must be between 0 and 1")
    zs = _z_sum(power, alpha)
    delta = p2 - p1
    if delta == 0:
        return SampleSize(None, p1, p2, power, alpha, "independent", note="no difference to detect")
    n = zs * zs * (p1 * (1 - p1) + p2 * (1 - p2)) / (delta * delta)
    return SampleSize(math.ceil(n - 1e-9), p1, p2, power, alpha, "independent")


def tasks_paired(
    discordance: float, difference: float, power: float = 0.8, alpha: float = 0.05,
    p1: float = float("nan"),
) -> SampleSize:
    """Task pairs needed to detect a difference when both models run the same tasks.

    ``n = (z_{α/2} √ψ + z_β √(ψ − δ²))² / δ²``, rounded up, where ψ is the
    discordance rate (the chance the two models disagree on a task) and δ
    the difference of pass rates.

    Parameters
    ----------
    discordance : float
        ψ = P(A passes, B fails) + P(A fails, B passes), 0 ≤ ψ ≤ 1.
    difference : float
        δ = p2 − p1. ψ must be at least |δ|; a smaller ψ is raised to |δ|
        (all disagreements in one direction) and a note says so.
    p1 : float, optional
        The first pass rate, only recorded in the result.

    Notes
    -----
    Connor's sample size for McNemar's test of paired proportions: under
    H0 the difference of discordant proportions has variance ψ/n, under H1
    (ψ − δ²)/n. The fewer tasks on which the models disagree, the fewer tasks
    are needed: with ψ = 0.1, detecting δ = 0.05 needs 312 pairs, against 683
    tasks per model for 85% vs 90% in the independent design.

    References
    ----------
    .. [1] R. J. Connor, "Sample size for testing differences in proportions
       for the paired-sample design", Biometrics 43(1):207-211, 1987.
       doi:10.2307/2531961
    .. [2] J. M. Lachin, "Power and sample size evaluation for the McNemar
       test with application to matched case-control studies", Statistics in
       Medicine 11(9):1239-1251, 1992. doi:10.1002/sim.4780110908

    Examples
    --------
    >>> tasks_paired(0.1, 0.05).tasks
    312
    """
    if not 0 <= discordance <= 1:
        raise ValueError(f"discordance ({discordance}) must be between 0 and 1")
    if not -1 <= difference <= 1:
        raise ValueError(f"difference ({difference}) must be between -1 and 1")
    zs_alpha = NormalDist().inv_cdf(1 - alpha / 2)
    zs = _z_sum(power, alpha)
    z_beta = zs - zs_alpha
    p2 = p1 + difference if p1 == p1 else float("nan")
    if difference == 0:
        return SampleSize(None, p1, p2, power, alpha, "paired", discordance,
                          "no difference to detect")
    note = ""
    psi = discordance
    if psi < abs(difference):
        psi = abs(difference)
        note = (f"the discordance {discordance:.3f} is below the difference {abs(difference):.3f}; "
                f"used {psi:.3f} (every disagreement in one direction)")
    d2 = difference * difference
    n = (zs_alpha * math.sqrt(psi) + z_beta * math.sqrt(max(0.0, psi - d2))) ** 2 / d2
    return SampleSize(math.ceil(n - 1e-9), p1, p2, power, alpha, "paired", psi, note)


@dataclass(frozen=True)
class Discordance:
    """How often two runs disagree on a task, from their per-task pass rates."""

    run_a: str
    run_b: str
    tasks: int
    """Common tasks with trials in both runs."""
    pass_a: float
    pass_b: float
    discordance: float
    """ψ: mean over tasks of p_a(1 − p_b) + p_b(1 − p_a)."""
    difference: float
    """δ = pass_b − pass_a."""


def discordance(a: RunOutcomes, b: RunOutcomes) -> Discordance:
    """Discordance rate of two runs over their common tasks.

    For a task with pass rates p_a and p_b, one trial of each disagrees with
    probability p_a(1 − p_b) + p_b(1 − p_a) (trials independent given the
    task). ψ is its mean over tasks; δ the mean of p_b − p_a. Since each
    task's disagreement is at least |p_b − p_a|, ψ ≥ |δ| always.

    References
    ----------
    .. [1] R. J. Connor, Biometrics 43(1):207-211, 1987 (ψ, the discordant
       proportion of the paired design).
    """
    index_b = {t: i for i, t in enumerate(b.tasks)}
    pa, pb = [], []
    for i, t in enumerate(a.tasks):
        j = index_b.get(t)
        if j is not None and a.n[i] > 0 and b.n[j] > 0:
            pa.append(a.passes[i] / a.n[i])
            pb.append(b.passes[j] / b.n[j])
    if not pa:
        return Discordance(a.run, b.run, 0, float("nan"), float("nan"), float("nan"), float("nan"))
    x, y = np.array(pa), np.array(pb)
    return Discordance(
        a.run, b.run, int(x.size), float(x.mean()), float(y.mean()),
        float(np.mean(x * (1 - y) + y * (1 - x))), float(np.mean(y - x)),
    )


@dataclass(frozen=True)
class ProjectionRow:
    """Suite pass@k and pass^k at one k, measured and projected."""

    k: int
    measured_pass_at_k: float
    """Unbiased estimate over tasks with at least k trials (NaN when none)."""
    measured_pass_hat_k: float
    measured_tasks: int
    pass_at_k: float
    """Projected under independence: mean of 1 − (1 − p̂)^k."""
    pass_hat_k: float
    """Projected under independence: mean of p̂^k."""
    pass_hat_k_low: float
    """Mean of (Wilson lower bound)^k: each task at its pessimistic pass rate."""


def projection(
    n: ArrayLike, c: ArrayLike, ks: Iterable[int], confidence: float = CONFIDENCE
) -> list[ProjectionRow]:
    """Project suite pass@k and pass^k to k beyond the trials measured.

    Per task, under independent trials with pass rate p̂: pass@k = 1 − (1 − p̂)^k
    and pass^k = p̂^k; the suite figure is the mean over tasks (never a mean
    rate raised to the power k). ``pass_hat_k_low`` puts every task at the
    lower bound of its Wilson interval instead, so a task seen passing 12 of
    12 is not projected to pass forever.

    Notes
    -----
    Independence is the whole assumption. At low temperature trials are
    nearly identical, so pass@k barely rises above pass@1 and the projected
    pass@k is too high; pass^k is then closer to pass@1 than to p̂^k.

    References
    ----------
    .. [1] M. Chen et al., "Evaluating Large Language Models Trained on
       Code", arXiv:2107.03374, 2021 (pass@k).
    .. [2] S. Yao, N. Shinn, P. Razavi, K. Narasimhan, "τ-bench: A Benchmark
       for Tool-Agent-User Interaction in Real-World Domains",
       arXiv:2406.12045, 2024 (pass^k).

    Examples
    --------
    >>> row = projection([10, 10], [10, 5], [2])[0]
    >>> round(row.pass_hat_k, 3), round(row.pass_at_k, 3)
    (0.625, 0.875)
    """
    from flaketui.stats.estimators import pass_at_k

    n_arr = np.asarray(n, dtype=np.float64)
    c_arr = np.asarray(c, dtype=np.float64)
    has = n_arr > 0
    p = p_hat(n_arr, c_arr)[has]
    low = wilson_interval(n_arr, c_arr, confidence).low[has]
    rows = []
    for k in sorted(set(int(x) for x in ks)):
        if k < 1:
            raise ValueError(f"k ({k}) must be >= 1")
        enough = has & (n_arr >= k)
        if enough.any():
            m_at = float(np.mean(pass_at_k(n_arr[enough], c_arr[enough], k)))
            m_hat = float(np.mean(pass_hat_k(n_arr[enough], c_arr[enough], k)))
        else:
            m_at = m_hat = float("nan")
        if p.size:
            proj_at = float(np.mean(1 - (1 - p) ** k))
            proj_hat = float(np.mean(p**k))
            proj_low = float(np.mean(low**k))
        else:
            proj_at = proj_hat = proj_low = float("nan")
        rows.append(ProjectionRow(k, m_at, m_hat, int(enough.sum()), proj_at, proj_hat, proj_low))
    return rows


# --- risk tiers -----------------------------------------------------------------


def tags_of(extra: Mapping[str, Any]) -> set[str]:
    """Lower-case tags of a trial's extra fields: ``tags`` / ``tag`` / ``risk`` (string or list).

    Examples
    --------
    >>> sorted(tags_of({"tags": ["Write", "db"], "risk": "high-risk"}))
    ['db', 'high-risk', 'write']
    """
    out: set[str] = set()
    for name in ("tags", "tag", "risk"):
        value = extra.get(name)
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, str) and v.strip():
                out.add(v.strip().lower())
    return out


@dataclass(frozen=True)
class TaskExtras:
    """What a plan reads from one trial of each task: its tags and temperature."""

    tags: frozenset[str] = frozenset()
    temperature: float | None = None


def read_task_extras(log: TrialLog, outcomes: RunOutcomes) -> dict[str, TaskExtras]:
    """Tags and temperature of each task of a run, from its first trial on disk.

    The loader keeps extra fields only on disk, so one trial per task is read
    back (:func:`flaketui.loading.read_trial`). A trial that can no longer be
    read counts as untagged.
    """
    from flaketui.loading import read_trial

    out: dict[str, TaskExtras] = {}
    for i, task in enumerate(outcomes.tasks):
        rows = outcomes.task_rows(i)
        if rows.size == 0:
            continue
        try:
            extra = read_trial(log, int(rows[0])).extra
        except (OSError, ValueError, KeyError):
            out[task] = TaskExtras()
            continue
        temp = extra.get("temperature")
        value = None
        if isinstance(temp, (int, float)) and not isinstance(temp, bool) and math.isfinite(temp):
            value = float(temp)
        out[task] = TaskExtras(frozenset(tags_of(extra)), value)
    return out


# --- allocation -----------------------------------------------------------------


@dataclass(frozen=True)
class Allocation:
    """Extra trials per unit (a task of a run) and how the budget was spent."""

    extra: NDArray[np.int64]
    topup: NDArray[np.int64]
    """The part of ``extra`` given to reach a risk minimum."""
    budget: int
    spent: int
    reason: str
    """Why part of the budget is left, or empty when all of it was spent."""


def _gain(a: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    """Variance removed by the (m+1)-th trial: a/m − a/(m+1) = a/(m(m+1))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(m > 0, a / (m * (m + 1)), np.inf)


def _steps_at_least(a: NDArray[np.float64], m0: NDArray[np.float64], cap: NDArray[np.float64],
                    lam: float) -> NDArray[np.float64]:
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
    short = np.maximum(0, min_arr - n_arr)
    left = int(budget)
    if int(short.sum()) > left:
        topup = np.zeros(units, np.int64)
        heap = [(-int(s), i) for i, s in enumerate(short.tolist()) if s > 0]
        heapq.heapify(heap)
        for _ in range(left):
            s, i = heapq.heappop(heap)
            topup[i] += 1
            if s + 1 < 0:
                heapq.heappush(heap, (s + 1, i))
        return Allocation(topup, topup.copy(), int(budget), int(budget), "")
    topup = short.astype(np.int64)
    left -= int(short.sum())

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


def _greedy(a: NDArray[np.float64], m0: NDArray[np.float64], room: NDArray[np.float64],
            left: int) -> NDArray[np.int64]:
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
    heap = [(-float(g), i) for i, g in enumerate(_gain(a, m0 + extra).tolist())
            if room[i] > extra[i]]
    heapq.heapify(heap)
    for _ in range(rest):
        _, i = heapq.heappop(heap)
        extra[i] += 1
        if room[i] > extra[i]:
            heapq.heappush(heap, (-float(a[i] / ((m0[i] + extra[i]) * (m0[i] + extra[i] + 1))), i))
    return extra


# --- the whole plan ---------------------------------------------------------------


@dataclass(frozen=True)
class PlanOptions:
    """Every knob of a plan, with the defaults of ``flaketui plan``."""

    budget: int = 0
    k: int | None = None
    """k of the suite pass^k whose variance is shrunk; default the smallest trial count."""
    confidence: float = CONFIDENCE
    margin: float = 0.1
    """Width of the stable zones of :func:`decide`."""
    target_width: float = 0.1
    """Wilson width a task needs no more than; also the cap of its further trials."""
    bound_target: float = 0.01
    """Failure rate the rule of three should bound for clean tasks."""
    min_trials: int = 10
    """Minimum n of the high tier (tagged high-risk or write, or flaky before)."""
    low_min_trials: int = 3
    """Minimum n of the low tier (read-only, stable)."""
    risk_tags: tuple[str, ...] = DEFAULT_RISK_TAGS
    power: float = 0.8
    alpha: float = 0.05
    effect: float = 0.05
    """Difference of pass rates the sample-size figures are for."""
    horizons: tuple[int, ...] = (1, 2, 5, 10, 20, 50, 100)
    """k values of the pass@k / pass^k projection (k itself is added)."""

    def check(self) -> None:
        """Raise ``ValueError`` naming the first bad option."""
        if not isinstance(self.budget, int) or self.budget < 0:
            raise ValueError(f"budget ({self.budget}) must be a whole number >= 0")
        if self.k is not None and self.k < 1:
            raise ValueError(f"k ({self.k}) must be >= 1")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence ({self.confidence}) must be between 0 and 1")
        if not 0 < self.margin < 0.5:
            raise ValueError(f"margin ({self.margin}) must be between 0 and 0.5")
        if not 0 < self.target_width <= 1:
            raise ValueError(f"target width ({self.target_width}) must be above 0 and at most 1")
        if not 0 < self.bound_target < 1:
            raise ValueError(f"bound target ({self.bound_target}) must be between 0 and 1")
        if self.min_trials < 0 or self.low_min_trials < 0:
            raise ValueError("minimum trials must be >= 0")
        if not 0 < self.effect < 1:
            raise ValueError(f"effect ({self.effect}) must be between 0 and 1")
        _z_sum(self.power, self.alpha)


@dataclass(frozen=True)
class TaskPlan:
    """One task of a run in a plan: its figures and its share of the budget."""

    run: str
    task: str
    n: int
    passes: int
    p_hat: float
    ci: tuple[float, float]
    width: float
    decision: str
    """stable-pass, stable-fail, flaky, undecided or no-trials (:func:`decide`)."""
    rule_of_three: float | None
    """Bound on the failure rate (all passed) or pass rate (all failed); None otherwise."""
    more_clean: int | None
    """Further clean trials to bound that rate below the bound target; None if flaky."""
    trials_for_width: int
    """Total trials for a Wilson interval no wider than the target width."""
    tier: str
    tier_reason: str
    minimum: int
    extra: int
    why: str


@dataclass(frozen=True)
class RunPlan:
    """A run's tasks in a plan and its suite figures."""

    run: str
    k: int
    tasks: list[TaskPlan]
    pass_hat_k: MeanEstimate
    se_now: float
    """Measurement part of the SE of suite pass^k now: √(Σ a_i/n_i)/T (delta method)."""
    se_after: float
    """The same after the planned trials, if each task keeps its rate."""
    projection: list[ProjectionRow]
    temperature: float | None
    """Median sampling temperature of the run's trials, if the log records one."""

    def counts(self) -> dict[str, int]:
        """Tasks per decision."""
        out: dict[str, int] = {}
        for t in self.tasks:
            out[t.decision] = out.get(t.decision, 0) + 1
        return out


@dataclass(frozen=True)
class Plan:
    """A whole plan: runs, budget spent, sample sizes and caveats."""

    options: PlanOptions
    k: int
    runs: list[RunPlan]
    budget: int
    spent: int
    reason: str
    independent: SampleSize
    """Tasks per model to detect ``effect`` around the first run's pass@1."""
    comparison: Discordance | None
    """The discordance of the first two runs (planned first, then ``others``)."""
    paired: SampleSize | None
    """Pairs to detect ``effect`` with the observed discordance."""
    observed_independent: SampleSize | None
    """Tasks per model to detect the observed difference of the two runs."""
    observed_paired: SampleSize | None
    million: int
    """Clean trials to bound a one-in-a-million rate (≈ 3 million)."""
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[dict[str, Any]]:
        """The rerun plan for a harness: one entry per task given trials."""
        return [
            {"run": t.run, "task": t.task, "extra_trials": t.extra, "why": t.why}
            for r in self.runs for t in r.tasks if t.extra > 0
        ]


def _tier(extras: TaskExtras, flaky_before: list[str], risk_tags: Sequence[str]) -> tuple[str, str]:
    hit = sorted(extras.tags & {t.lower() for t in risk_tags})
    if hit:
        return HIGH, "tagged " + ", ".join(hit)
    if flaky_before:
        return HIGH, "flaky before in " + ", ".join(flaky_before)
    return LOW, "read-only, stable"


def make_plan(
    outcomes: Sequence[RunOutcomes],
    options: PlanOptions,
    extras: Mapping[tuple[str, str], TaskExtras] | None = None,
    others: Sequence[RunOutcomes] = (),
) -> Plan:
    """Plan the next run of every run in ``outcomes`` with one shared budget.

    Parameters
    ----------
    outcomes : sequence of RunOutcomes
        The runs to plan (their tasks are the units that receive trials).
    options : PlanOptions
        Budget, k, thresholds and tiers.
    extras : mapping, optional
        (run, task) → :class:`TaskExtras` (tags, temperature) read from the log.
    others : sequence of RunOutcomes, optional
        Other loaded runs, not planned: a task flaky in one of them was "flaky
        before"; and when only one run is planned, the first of them is the
        second run of the paired sample size.

    Notes
    -----
    The objective is the sum over runs of the variance of the run's suite
    pass^k from finite trials: Σ_r (1/T_r²) Σ_i a_i/n_i with a_i from
    :func:`pass_hat_k_variance_coef`. Tasks decided by :func:`decide` get no
    trial beyond their risk minimum; an undecided task gets at most the
    trials that bring its Wilson interval to the target width.
    """
    options.check()
    if not outcomes:
        raise ValueError("no run to plan")
    extras = extras or {}
    k = options.k or default_k(outcomes)
    conf = options.confidence
    flaky_in: dict[str, list[str]] = {}
    for o in [*outcomes, *others]:
        for t, cls in zip(o.tasks, classify(o.n, o.passes), strict=True):
            if cls == FLAKY:
                flaky_in.setdefault(t, []).append(o.run)

    # Per-unit arrays over every (run, task), in run order then task order.
    unit_n, unit_c, unit_w, unit_min, unit_elig, unit_cap = [], [], [], [], [], []
    per_run: list[dict[str, Any]] = []
    for o in outcomes:
        n, c = o.n.astype(np.int64), o.passes.astype(np.int64)
        t_count = max(1, int(np.sum(n > 0)))
        phat = p_hat(n, c)
        ci = wilson_interval(n, c, conf)
        decisions = decide(n, c, options.margin, conf)
        width_now = np.where(n > 0, ci.high - ci.low, 1.0)
        need_w = trials_for_width(np.where(n > 0, np.nan_to_num(phat, nan=0.5), 0.5),
                                  options.target_width, conf)
        r3 = rule_of_three(n, conf)
        clean = more_clean_trials(n, c, options.bound_target, conf)
        tiers = [
            _tier(extras.get((o.run, t), TaskExtras()), flaky_in.get(t, []), options.risk_tags)
            for t in o.tasks
        ]
        minimum = np.array(
            [max(options.min_trials if tier == HIGH else options.low_min_trials, 1)
             for tier, _ in tiers], dtype=np.int64)
        eligible = np.array([d in (UNDECIDED, NO_TRIALS) for d in decisions])
        # allocate() caps the trials beyond the risk minimum, so count from max(n, minimum).
        cap = np.maximum(0, need_w - np.maximum(n, minimum))
        unit_n.append(n)
        unit_c.append(c)
        unit_w.append(np.full(n.shape, 1.0 / t_count**2))
        unit_min.append(minimum)
        unit_elig.append(eligible)
        unit_cap.append(cap)
        temps = [e.temperature for t in o.tasks
                 if (e := extras.get((o.run, t))) is not None and e.temperature is not None]
        per_run.append(dict(outcome=o, phat=phat, ci=ci, decisions=decisions, width=width_now,
                            need_w=need_w, r3=r3, clean=clean, tiers=tiers, minimum=minimum,
                            temperature=float(np.median(temps)) if temps else None))
    n_all = np.concatenate(unit_n)
    c_all = np.concatenate(unit_c)
    a_all = pass_hat_k_variance_coef(n_all, c_all, k, conf) * np.concatenate(unit_w)
    alloc = allocate(n_all, a_all, options.budget, np.concatenate(unit_elig),
                     np.concatenate(unit_cap), np.concatenate(unit_min))

    runs: list[RunPlan] = []
    start = 0
    for info in per_run:
        o = info["outcome"]
        size = len(o.tasks)
        extra = alloc.extra[start : start + size]
        topup = alloc.topup[start : start + size]
        a_run = a_all[start : start + size]
        start += size
        rows: list[TaskPlan] = []
        for i, task in enumerate(o.tasks):
            n_i, c_i = int(o.n[i]), int(o.passes[i])
            tier, tier_reason = info["tiers"][i]
            decision = info["decisions"][i]
            one_sided = n_i > 0 and (c_i == 0 or c_i == n_i)
            rows.append(TaskPlan(
                run=o.run, task=task, n=n_i, passes=c_i,
                p_hat=float(info["phat"][i]),
                ci=(float(info["ci"].low[i]), float(info["ci"].high[i])),
                width=float(info["width"][i]),
                decision=decision,
                rule_of_three=float(info["r3"][i]) if one_sided else None,
                more_clean=int(info["clean"][i]) if one_sided else None,
                trials_for_width=int(info["need_w"][i]),
                tier=tier, tier_reason=tier_reason, minimum=int(info["minimum"][i]),
                extra=int(extra[i]),
                why=_why(decision, int(extra[i]), int(topup[i]), tier_reason,
                         int(info["minimum"][i]), float(info["phat"][i]),
                         info["ci"].low[i], info["ci"].high[i], k,
                         options.budget, n_i >= int(info["need_w"][i])),
            ))
        stats = task_stats(o, k)
        summary = summarise(stats)
        n_now = o.n.astype(np.float64)
        has = n_now > 0
        se_now = float(np.sqrt(np.sum(a_run[has] / n_now[has]))) if has.any() else float("nan")
        n_after = n_now + extra
        has_after = n_after > 0
        se_after = (float(np.sqrt(np.sum(a_run[has_after] / n_after[has_after])))
                    if has_after.any() else float("nan"))
        horizons = sorted(set(options.horizons) | {k})
        runs.append(RunPlan(
            run=o.run, k=k, tasks=rows, pass_hat_k=summary.pass_hat_k,
            se_now=se_now, se_after=se_after,
            projection=projection(o.n, o.passes, horizons, conf),
            temperature=info["temperature"],
        ))

    first = outcomes[0]
    has1 = first.n > 0
    p1 = float(np.mean(first.passes[has1] / first.n[has1])) if has1.any() else 0.5
    p2 = p1 + options.effect if p1 + options.effect <= 1 else p1 - options.effect
    independent = tasks_independent(p1, p2, options.power, options.alpha)
    comparison = paired = obs_ind = obs_paired = None
    pair = [*outcomes, *others][:2]
    if len(pair) == 2:
        comparison = discordance(pair[0], pair[1])
        if comparison.tasks:
            paired = tasks_paired(comparison.discordance, p2 - p1, options.power, options.alpha, p1)
            obs_ind = tasks_independent(comparison.pass_a, comparison.pass_b, options.power,
                                        options.alpha)
            obs_paired = tasks_paired(comparison.discordance, comparison.difference,
                                      options.power, options.alpha, comparison.pass_a)
    million = trials_to_bound(1e-6, conf)
    notes = [DESIGN_NOT_TESTS.format(n=million), INDEPENDENCE_CAVEAT]
    for r in runs:
        if r.temperature is not None and r.temperature <= LOW_TEMPERATURE:
            notes.append(
                f"run {r.run} was sampled at temperature {r.temperature:g}: its trials are "
                "probably near copies of each other, so more of them will add little"
            )
    if alloc.reason:
        notes.append(alloc.reason)
    return Plan(options=options, k=k, runs=runs, budget=alloc.budget, spent=alloc.spent,
                reason=alloc.reason, independent=independent, comparison=comparison,
                paired=paired, observed_independent=obs_ind, observed_paired=obs_paired,
                million=million, notes=notes)


def _why(decision: str, extra: int, topup: int, tier_reason: str, minimum: int, p: float,
         low: float, high: float, k: int, budget: int, precise: bool) -> str:
    """A one-line reason for a task's share of the budget (or for none)."""
    parts = []
    if topup:
        parts.append(f"{tier_reason}: minimum {minimum} trials")
    greedy = extra - topup
    if greedy:
        if decision == NO_TRIALS:
            parts.append("no non-errored trial yet")
        else:
            parts.append(f"undecided, p̂ {p:.3f} [{low:.2f}, {high:.2f}]: "
                         f"largest cut in the variance of suite pass^{k}")
    if parts:
        return "; ".join(parts)
    if decision in (STABLE_PASS, STABLE_FAIL):
        return f"decided {decision}"
    if decision == FLAKY:
        return "decided flaky: fix it, more trials only say how flaky"
    if precise:
        return "target width reached"
    if budget == 0:
        return "no budget given"
    return f"none: cuts the variance of suite pass^{k} less than the tasks given trials"
