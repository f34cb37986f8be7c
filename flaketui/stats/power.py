"""Sample sizes: tasks needed to tell two pass rates apart, independent or paired.

The independent design (two models on separate task samples); the paired
design analysed as it is run, a mean of per-task p̂ differences over K trials
per task (Miller's split of its variance into a between-task and a
within-task part); and McNemar's design, the paired analysis of one trial per
task, sized from how often the two models disagree. Pure numpy: no Textual,
no Rich.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from flaketui.model import RunOutcomes
from flaketui.stats.estimators import median


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


def z_sum(power: float, alpha: float) -> float:
    """z_{α/2} + z_β of the sample-size formulas; ``ValueError`` if power or alpha is not in (0, 1).

    Two-sided level α and power 1 − β (Chow, Shao & Wang 2008, §4.2; see
    :func:`tasks_independent`).
    """
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
    zs = z_sum(power, alpha)
    delta = p2 - p1
    if delta == 0:
        return SampleSize(None, p1, p2, power, alpha, "independent", note="no difference to detect")
    n = zs * zs * (p1 * (1 - p1) + p2 * (1 - p2)) / (delta * delta)
    return SampleSize(math.ceil(n - 1e-9), p1, p2, power, alpha, "independent")


def tasks_paired(
    discordance: float, difference: float, power: float = 0.8, alpha: float = 0.05,
    p1: float = float("nan"),
) -> SampleSize:
    """Task pairs needed to detect a difference by McNemar's test: one trial per task.

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
    tasks per model for 85% vs 90% in the independent design. It sizes the
    analysis of one trial per task; with K trials per task and a comparison
    of mean p̂ differences, :func:`tasks_paired_means` is the figure.

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
    zs = z_sum(power, alpha)
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
class VarianceSplit:
    """The two parts of the variance of a per-task difference p̂_B − p̂_A (Miller 2024)."""

    between: float
    """σ²_between: variance over tasks of the true differences p_B − p_A (≥ 0)."""
    within: float
    """σ²_within: E[p_A(1 − p_A) + p_B(1 − p_B)], one trial's binomial variance of a difference."""
    k: int
    """Trials per task now (the median over tasks of the fewer trials of the two runs)."""
    tasks: int
    """Tasks the parts were estimated from (at least two trials in each run used)."""
    source: str
    """``two runs`` (both parts estimated) or ``one run`` (σ²_between assumed: an upper bound)."""
    note: str = ""
    """The assumption made, when there was one."""


ONE_RUN_ASSUMPTION = (
    "one run loaded: the second model is assumed to have this run's per-task variances and "
    "per-task pass rates unrelated to this run's (σ²_between = twice this run's between-task "
    "variance), an upper bound; the lower bound assumes the same difference on every task "
    "(σ²_between = 0); load a second run of the same tasks to estimate σ²_between"
)
"""The assumption of :func:`variance_split` with one run."""


def variance_split(a: RunOutcomes, b: RunOutcomes | None = None) -> VarianceSplit:
    """Estimate σ²_between and σ²_within of the paired analysis from loaded runs.

    With two runs, over the common tasks with at least two trials in each:
    the within part is the mean of p̂_A(1 − p̂_A)·n_A/(n_A − 1) +
    p̂_B(1 − p̂_B)·n_B/(n_B − 1), and the between part is the sample variance of
    d_i = p̂_B,i − p̂_A,i less the mean of its binomial part
    p̂_A(1 − p̂_A)/(n_A − 1) + p̂_B(1 − p̂_B)/(n_B − 1), floored at 0. With one
    run, the within part is twice that run's mean of p̂(1 − p̂)·n/(n − 1) and
    the between part twice the run's between-task variance of the true rates
    (the variance of p̂ less the mean of p̂(1 − p̂)/(n − 1), floored at 0): the
    variance of p_B − p_A when the second model's per-task rates are drawn
    like these but unrelated to them. Paired models are positively related in
    practice, so this is an upper bound; σ²_between = 0 (the same difference
    on every task) gives the lower one (:data:`ONE_RUN_ASSUMPTION`).

    Notes
    -----
    p̂(1 − p̂)·n/(n − 1) is unbiased for p(1 − p) (the n/(n − 1) correction of
    the sample variance of n Bernoulli trials), so p̂(1 − p̂)/(n − 1) is
    unbiased for Var(p̂) = p(1 − p)/n. The variance of the observed d_i over
    tasks is σ²_between plus the mean within-task variance (law of total
    variance), so their difference estimates σ²_between without bias; it can
    come out negative by chance, hence the floor. Tasks with one trial in a
    run cannot carry the correction and are left out.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024, §§ 3-5 (the
       variance of a mean over questions with several answers each, the
       paired difference and its power).
    """
    if b is None:
        ok = a.n >= 2
        n = a.n[ok].astype(np.float64)
        p = a.passes[ok] / n if ok.any() else np.array([])
        k = int(median(n)) if n.size else 0
        if n.size < 2:
            return VarianceSplit(float("nan"), float("nan"), k, int(n.size), "one run",
                                 "fewer than two tasks with two or more trials")
        noise = p * (1 - p) / (n - 1)
        within = float(2 * np.mean(noise * n))
        between = 2 * max(0.0, float(np.var(p, ddof=1) - np.mean(noise)))
        return VarianceSplit(between, within, k, int(n.size), "one run", ONE_RUN_ASSUMPTION)
    index_b = {t: i for i, t in enumerate(b.tasks)}
    rows = [(i, j) for i, t in enumerate(a.tasks)
            if (j := index_b.get(t)) is not None and a.n[i] >= 2 and b.n[j] >= 2]
    if len(rows) < 2:
        return VarianceSplit(float("nan"), float("nan"), 0, len(rows), "two runs",
                             "fewer than two common tasks with two or more trials in each run")
    ia, ib = (np.array(x, dtype=np.int64) for x in zip(*rows, strict=True))
    na, nb = a.n[ia].astype(np.float64), b.n[ib].astype(np.float64)
    pa, pb = a.passes[ia] / na, b.passes[ib] / nb
    var_a, var_b = pa * (1 - pa) / (na - 1), pb * (1 - pb) / (nb - 1)
    within = float(np.mean(var_a * na + var_b * nb))
    between = max(0.0, float(np.var(pb - pa, ddof=1) - np.mean(var_a + var_b)))
    return VarianceSplit(between, within, int(median(np.minimum(na, nb))), len(rows), "two runs")


@dataclass(frozen=True)
class MeanDifferenceSize:
    """Tasks needed to detect a difference of mean per-task p̂ over K trials per task."""

    tasks: int | None
    """Tasks (each run by both models) at ``k`` trials per task; None if no difference or no estimate."""
    k: int
    difference: float
    between: float
    within: float
    power: float
    alpha: float
    by_k: tuple[tuple[int, int], ...] = ()
    """(K, tasks needed at K trials per task) for a few K: what raising K buys."""
    floor: int | None = None
    """Tasks needed however many trials per task (K → ∞: the between part alone)."""
    design: str = "paired-means"
    note: str = ""


def tasks_paired_means(
    between: float, within: float, k: int, difference: float, power: float = 0.8,
    alpha: float = 0.05, ks: tuple[int, ...] | None = None, note: str = "",
) -> MeanDifferenceSize:
    """Tasks needed for a paired comparison of mean p̂ differences with K trials per task.

    ``T = (z_{1−α/2} + z_power)² (σ²_between + σ²_within / K) / δ²``, rounded up
    (and at least 2, the fewest a paired t-test takes).

    Parameters
    ----------
    between : float
        σ²_between, the variance over tasks of the true differences p_B − p_A.
    within : float
        σ²_within = E[p_A(1 − p_A) + p_B(1 − p_B)]: K trials per task and model
        give p̂_B − p̂_A a binomial variance of σ²_within / K.
    k : int
        Trials per task and model.
    difference : float
        δ, the difference of mean pass rates to detect.
    ks : tuple of int, optional
        Other K to size for (default 1, K, 2K and 4K).

    Notes
    -----
    Both models run the same T tasks, K trials each, and the analysis is a
    paired test of the mean over tasks of p̂_B − p̂_A. Its variance is
    Var(d̄) = (σ²_between + σ²_within/K)/T: raising K only shrinks the second
    part, so however many trials per task the suite needs
    (z_{1−α/2} + z_power)² σ²_between / δ² tasks (``floor``). The normal
    approximation is used for the test statistic, as in Miller's power
    section; with tens of tasks or more a paired t-test has the same power to
    within a point or two.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024 (§ 4, paired
       differences; § 5, power analysis; the split of the variance into
       between- and within-question parts).

    Examples
    --------
    >>> tasks_paired_means(0.01, 0.4, 5, 0.05).tasks
    283
    """
    if k < 1:
        raise ValueError(f"k ({k}) must be >= 1")
    if not -1 <= difference <= 1:
        raise ValueError(f"difference ({difference}) must be between -1 and 1")
    zs = z_sum(power, alpha)
    ks = ks if ks is not None else tuple(sorted({1, k, 2 * k, 4 * k}))
    if difference == 0 or not (math.isfinite(between) and math.isfinite(within)):
        why = "no difference to detect" if difference == 0 else (note or "no variance estimate")
        return MeanDifferenceSize(None, k, difference, between, within, power, alpha, note=why)
    if between < 0 or within < 0:
        raise ValueError(f"variances ({between}, {within}) must be >= 0")
    d2 = difference * difference

    def need(trials: float) -> int:
        return max(2, math.ceil(zs * zs * (between + within / trials) / d2 - 1e-9))

    floor = max(2, math.ceil(zs * zs * between / d2 - 1e-9))
    return MeanDifferenceSize(need(k), k, difference, between, within, power, alpha,
                              tuple((x, need(x)) for x in ks), floor, note=note)
