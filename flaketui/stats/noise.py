"""The noise floor: how small a change a comparison (or a suite of this size) could tell from noise.

A paired comparison that finds nothing says little unless it says what it could have found.
The variance of a mean of per-task differences splits, after Miller (2024), into a part from
the tasks (how much the true change varies from task to task, σ²_between) and a part from the
trials (each task's binomial noise, σ²_within / K); the minimum detectable effect at power
1 − β and two-sided level α is (z_{1−α/2} + z_{1−β})·√Var(d̄) (the sample-size formula of
:func:`flaketui.stats.power.tasks_paired_means` solved for δ). Pure numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from flaketui.stats.arrays import Floats
from flaketui.stats.estimators import median, z_value

if TYPE_CHECKING:
    from flaketui.stats.paired import PairedComparison

POWER = 0.8
"""The power the minimum detectable effect is stated at."""

Z_POWER = 0.8416212335729143
"""z_{0.8}, the standard normal's 80% quantile (``statistics.NormalDist().inv_cdf(0.8)``)."""

TARGET = 0.05
"""The change the report sizes the suite for ("0.05 needs 216 tasks or K = 12")."""


@dataclass(frozen=True)
class CompareNoise:
    """The noise of one paired comparison: SE, minimum detectable effect, signal-to-noise."""

    se: float
    """The standard error of the mean difference (the interval's)."""
    mde: float
    """The smallest true mean difference this design detects with probability ``power`` at ``alpha``."""
    snr: float
    """The observed mean difference over its SE (NaN when the SE is 0 or undefined)."""
    between: float
    """σ²_between: variance over tasks of the true differences (floored at 0)."""
    within: float
    """The mean binomial variance of a task's difference at this design's trial counts."""
    tasks: int
    trials: float
    """Median trials per task (the fewer of the two runs)."""
    power: float = POWER
    alpha: float = 0.05


def z_sum(power: float, alpha: float) -> float:
    """z_{1−α/2} + z_power, as :func:`flaketui.stats.power.z_sum` (pinned to it in the tests), from
    the two-sided quantiles of :func:`~flaketui.stats.estimators.z_value`: a report does not import
    :mod:`statistics`."""
    if not 0 < power < 1:
        raise ValueError(f"power ({power}) must be between 0 and 1")
    if power == POWER:
        z_power = Z_POWER
    else:
        z_power = z_value(2 * power - 1) if power >= 0.5 else -z_value(1 - 2 * power)
    return z_value(1 - alpha) + z_power


def _unbiased_binomial_variance(n: Floats, c: Floats,
                                pooled: float) -> Floats:
    """Per task, an unbiased estimate of Var(p̂) = p(1 − p)/n: p̂(1 − p̂)/(n − 1) where n ≥ 2;
    with one trial, the pooled rate's p̄(1 − p̄)/n (no within-task estimate exists)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = c / n
        own = p * (1 - p) / (n - 1)
    return np.where(n >= 2, own, pooled * (1 - pooled) / np.maximum(n, 1))


def difference_variance(n_a: NDArray[np.integer], c_a: NDArray[np.integer], n_b: NDArray[np.integer],
                        c_b: NDArray[np.integer]) -> tuple[float, float, int]:
    """Miller's split of the variance of a per-task difference p̂_B − p̂_A over the tasks with a
    trial in both runs: (σ²_between, the mean within-task variance at these trial counts, tasks).

    Notes
    -----
    Var(d_i) = σ²_between + p_A(1 − p_A)/n_A + p_B(1 − p_B)/n_B (law of total variance); the
    within part is estimated without bias by p̂(1 − p̂)/(n − 1) per run (the pooled rate's
    p̄(1 − p̄)/n for a task with one trial), and σ²_between by the sample variance of the d_i
    less that mean, floored at 0 (Miller 2024, §§ 3–5; :func:`flaketui.stats.power.variance_split`
    does the same for the sample size of K trials per task).

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to Language Model
       Evaluations", arXiv:2411.00640, 2024.
    """
    na, nb = np.asarray(n_a, dtype=np.float64), np.asarray(n_b, dtype=np.float64)
    ca, cb = np.asarray(c_a, dtype=np.float64), np.asarray(c_b, dtype=np.float64)
    both = (na > 0) & (nb > 0)
    na, nb, ca, cb = na[both], nb[both], ca[both], cb[both]
    t = int(na.size)
    if t == 0:
        return float("nan"), float("nan"), 0
    pooled = float((ca.sum() + cb.sum()) / (na.sum() + nb.sum()))
    within = float(np.mean(_unbiased_binomial_variance(na, ca, pooled) + _unbiased_binomial_variance(nb, cb, pooled)))
    if t < 2:
        return float("nan"), within, t
    d = cb / nb - ca / na
    return max(0.0, float(np.var(d, ddof=1)) - within), within, t


def binomial_floor(n_a: NDArray[np.integer], c_a: NDArray[np.integer], n_b: NDArray[np.integer],
                   c_b: NDArray[np.integer]) -> float:
    """A floor under the variance of a mean of per-task differences p̂_B − p̂_A: the trials' own
    binomial noise, (1/T²) Σ_i [p̃_A(1 − p̃_A)/n_A,i + p̃_B(1 − p̃_B)/n_B,i], with each run's pooled
    rate shrunk by one pass and one failure, p̃ = (Σc + 1)/(Σn + 2) (Agresti & Caffo 2000).

    Notes
    -----
    Whatever the tasks, the binomial noise of the trials is independent from task to task, so
    Var(d̄) ≥ (1/T²) Σ_i [p_A,i(1 − p_A,i)/n_A,i + p_B,i(1 − p_B,i)/n_B,i]; the pooled p̄(1 − p̄) of a
    run is at least its mean p_i(1 − p_i) (Jensen: it adds the variance of p_i over tasks), so the
    floor errs on the wide side. It matters where the sample variance of the differences is small
    by chance: with one trial of A against ten of B on few tasks near p = 1 most differences are
    a small fall and the rare large rise is missing from the sample, and a run whose trials all
    passed shows no variance at all, hence the added pass and failure (the Agresti–Caffo
    adjustment of the interval for a difference of proportions).

    References
    ----------
    .. [1] A. Agresti, B. Caffo, "Simple and Effective Confidence Intervals for Proportions and
       Differences of Proportions Result from Adding Two Successes and Two Failures", The American
       Statistician 54(4):280-288, 2000. doi:10.1080/00031305.2000.10474560

    Examples
    --------
    >>> ones = np.ones(10, dtype=np.int64)
    >>> # Every trial passed: p̃_A = 11/12 (10 trials), p̃_B = 101/102 (100 trials).
    >>> round(binomial_floor(ones, ones, 10 * ones, 10 * ones), 6)
    0.007736
    """
    na, nb = np.asarray(n_a, dtype=np.float64), np.asarray(n_b, dtype=np.float64)
    both = (na > 0) & (nb > 0)
    if not both.any():
        return float("nan")
    na, nb = na[both], nb[both]
    ca, cb = np.asarray(c_a, dtype=np.float64)[both], np.asarray(c_b, dtype=np.float64)[both]
    pa = (ca.sum() + 1) / (na.sum() + 2)
    pb = (cb.sum() + 1) / (nb.sum() + 2)
    return float(np.sum(pa * (1 - pa) / na + pb * (1 - pb) / nb) / na.size**2)


def minimum_detectable(variance_of_mean: float, power: float = POWER, alpha: float = 0.05) -> float:
    """(z_{1−α/2} + z_power)·√Var(d̄): the true difference a two-sided level-α test of a mean with
    this variance detects with probability ``power`` (normal approximation; Miller 2024, § 5;
    Chow, Shao & Wang 2008, § 3.1).

    Examples
    --------
    >>> round(minimum_detectable(0.025**2), 4)
    0.07
    """
    if not variance_of_mean >= 0:
        return float("nan")
    return z_sum(power, alpha) * math.sqrt(variance_of_mean)


def compare_noise(n_a: NDArray[np.integer], c_a: NDArray[np.integer], n_b: NDArray[np.integer],
                  c_b: NDArray[np.integer], mean_diff: float, se: float, alpha: float = 0.05,
                  power: float = POWER, clustered: bool = False) -> CompareNoise:
    """The noise floor of a paired comparison with these trial counts (:class:`CompareNoise`).

    The minimum detectable effect is read from Miller's split, Var(d̄) = (σ²_between + within)/T at
    this design's T tasks and trial counts (:func:`difference_variance`), never below the trials'
    binomial noise (:func:`binomial_floor`: a comparison whose tasks all passed every trial still
    could not detect an arbitrarily small change); with fewer than two tasks it is read from the
    SE. When tasks are clustered the split (which treats tasks as independent) may understate the
    variance, so the SE's square is taken when larger. The signal-to-noise ratio is the observed
    difference over its SE.
    """
    between, within, t = difference_variance(n_a, c_a, n_b, c_b)
    if t >= 2:
        var = max((between + within) / t, binomial_floor(n_a, c_a, n_b, c_b))
        if clustered and se == se:
            var = max(var, se * se)
        mde = minimum_detectable(var, power, alpha)
    else:
        mde = minimum_detectable(se * se, power, alpha) if se == se else float("nan")
    na, nb = np.asarray(n_a), np.asarray(n_b)
    both = (na > 0) & (nb > 0)
    trials = median(np.minimum(na[both], nb[both])) if both.any() else float("nan")
    snr = mean_diff / se if se == se and se > 0 else float("nan")
    return CompareNoise(se, mde, snr, between, within, t, trials, power, alpha)


def comparison_noise(cmp: PairedComparison, alpha: float = 0.05, power: float = POWER) -> CompareNoise:
    """:func:`compare_noise` of a :class:`~flaketui.stats.paired.PairedComparison`."""
    return compare_noise(cmp.a.n, cmp.a.passes, cmp.b.n, cmp.b.passes, cmp.mean_diff.value, cmp.mean_diff.se,
                         alpha, power, cmp.mean_diff.clustered)


def noise_text(noise: CompareNoise) -> str:
    """``noise: SE of the difference 0.031, signal-to-noise +1.2; this comparison could detect ≥ 0.087
    (80% power, α = 5%; 50 tasks × 5 trials)``."""
    if noise.mde != noise.mde:
        return "noise: too few tasks to say what this comparison could detect"
    snr = f", signal-to-noise {noise.snr:+.1f}" if noise.snr == noise.snr else ""
    se = f"SE of the difference {noise.se:.3f}{snr}; " if noise.se == noise.se else ""
    return (f"noise: {se}this comparison could detect ≥ {noise.mde:.3f} ({noise.power:.0%} power, "
            f"α = {noise.alpha:.0%}; {noise.tasks:,} tasks × {noise.trials:g} trials)")


@dataclass(frozen=True)
class NoiseFloor:
    """The noise floor of a suite: the smallest change a comparison with another run of the same
    design could detect, and what a smaller one would need."""

    mde: float
    """Minimum detectable change at :data:`POWER` and α = 0.05, tasks × trials as now."""
    tasks: int
    trials: int
    """Trials per task now (the median)."""
    target: float
    """The change sized for: :data:`TARGET`, or half the floor when the floor is below it."""
    tasks_for: int | None
    """Tasks needed to detect ``target`` at ``trials`` trials per task (None: no estimate)."""
    trials_for: int | None
    """Trials per task needed to detect ``target`` with ``tasks`` tasks (None: no number of trials
    does: the floor then is the tasks')."""
    between: float
    """σ²_between of the run: the variance over tasks of the true pass rates."""
    within: float
    """σ²_within of the run: the mean over tasks of p(1 − p), one trial's variance."""
    icc: float
    """The intraclass correlation σ²_between / (σ²_between + σ²_within): the share of a trial
    outcome's variance that is the task's."""


def suite_noise_floor(n: NDArray[np.integer], c: NDArray[np.integer], alpha: float = 0.05,
                      power: float = POWER, target: float = TARGET) -> NoiseFloor:
    """The noise floor of a run: how small a change against another run of the same tasks and
    trials could be told from noise.

    Notes
    -----
    From one run the run's own split is estimated: σ²_within = mean p̂(1 − p̂)·n/(n − 1) (unbiased
    for p(1 − p)) and σ²_between = Var(p̂) − mean p̂(1 − p̂)/(n − 1), floored at 0, over the tasks
    with two trials or more; the ICC is σ²_between/(σ²_between + σ²_within) (the ANOVA intraclass
    correlation of the binary outcomes; Fleiss, Levin & Paik 2003, § 15.2). A second run of the
    same design gives each task's difference a binomial variance 2σ²_within/K (both runs' noise);
    the floor assumes the change is the same on every task (the difference's σ²_between = 0), the
    most favourable case, so a smaller change cannot be told from noise whatever it is:
    MDE = (z_{1−α/2} + z_power)·√(2σ²_within/(K·T)). Tasks and trials for ``target`` come from
    :func:`flaketui.stats.power.tasks_paired_means`'s formula with the same variances (Miller
    2024, § 5).

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to Language Model
       Evaluations", arXiv:2411.00640, 2024.
    .. [2] J. L. Fleiss, B. Levin, M. C. Paik, *Statistical Methods for Rates and Proportions*,
       3rd ed., Wiley, 2003, ch. 15.

    Examples
    --------
    >>> f = suite_noise_floor(np.full(50, 5), np.tile([5, 4, 2, 0, 5], 10))
    >>> round(f.mde, 3), f.tasks_for, f.trials_for
    (0.079, 126, 13)
    """
    n_all = np.asarray(n, dtype=np.float64)
    c_all = np.asarray(c, dtype=np.float64)
    ran = n_all > 0
    tasks = int(ran.sum())
    k = int(median(n_all[ran])) if tasks else 0
    ok = n_all >= 2
    nan = float("nan")
    if tasks < 2 or int(ok.sum()) < 2:
        return NoiseFloor(nan, tasks, k, target, None, None, nan, nan, nan)
    nn, cc = n_all[ok], c_all[ok]
    p = cc / nn
    noise = p * (1 - p) / (nn - 1)
    within = float(np.mean(noise * nn))
    between = max(0.0, float(np.var(p, ddof=1) - np.mean(noise)))
    total = between + within
    icc = between / total if total > 0 else nan
    mde = minimum_detectable(2 * within / (k * tasks), power, alpha)
    if mde == mde and 0 < mde <= target:
        target = max(0.01, round(mde / 2, 2))
    if within <= 0:
        return NoiseFloor(mde, tasks, k, target, None, None, between, within, icc)
    zs2 = z_sum(power, alpha) ** 2
    # tasks_paired_means(0, 2σ²_within, K, target): T = zs²·(2σ²_within/K)/δ², at least 2.
    tasks_for = max(2, math.ceil(zs2 * 2 * within / (k * target**2) - 1e-9))
    trials_for = max(1, math.ceil(zs2 * 2 * within / (tasks * target**2) - 1e-9))
    return NoiseFloor(mde, tasks, k, target, tasks_for, trials_for, between, within, icc)


def floor_line(f: NoiseFloor) -> str:
    """The report's one line, e.g. ``noise floor: a change below 0.079 cannot be told from noise
    with 50 tasks × 5 trials (80% power, α = 5%); 0.05 needs 126 tasks or 13 trials per task;
    variance between tasks 0.133, within tasks 0.1 (ICC 0.57)``."""
    if f.mde != f.mde:
        return "noise floor: not estimable (fewer than two tasks with two or more trials)"
    if f.mde == 0:
        return (f"noise floor: every task gave the same outcome on every trial ({f.tasks} tasks × {f.trials} "
                f"trials): no trial-to-trial noise to estimate it from")
    needs = ""
    if f.tasks_for is not None:
        needs = f"; {f.target:g} needs {f.tasks_for:,} tasks or {f.trials_for:,} trials per task"
    return (f"noise floor: a change below {f.mde:.3f} cannot be told from noise with {f.tasks:,} tasks × "
            f"{f.trials} trials ({POWER:.0%} power, α = 5%){needs}; variance between tasks {f.between:.3g}, "
            f"within tasks {f.within:.3g} (ICC {f.icc:.2f})")
