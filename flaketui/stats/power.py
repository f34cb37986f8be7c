"""Sample sizes: tasks needed to tell two pass rates apart, independent or paired.

The independent design (two models on separate task samples) and the paired
design (both models on the same tasks, sized from how often they disagree).
Pure numpy: no Textual, no Rich.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from flaketui.model import RunOutcomes


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

