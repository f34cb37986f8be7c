"""Paired comparison of two runs on their common tasks: the primary test, flips, mean difference.

The verdict rests on one test chosen before the data are seen: the within-task
permutation test of :mod:`flaketui.stats.stratified`, valid whatever the trial
counts per task. The sign test (do fixed and broken tasks balance?) and the
paired sign-flip permutation test (do the sizes of the changes?) are kept as
secondary evidence, and only where they are valid: both need a rise and a fall
of p̂ to be equally likely under "no difference", which holds when every task
has as many trials in A as in B, and not otherwise. None imports scipy on the
counts of an eval comparison (see :mod:`flaketui.stats.exact`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from flaketui.stats.arrays import Floats
from flaketui.stats.estimators import CONFIDENCE, t_value
from flaketui.stats.exact import sign_test_pvalue
from flaketui.stats.noise import binomial_floor
from flaketui.stats.permutation import PermutationTest, paired_permutation_test
from flaketui.stats.stratified import StratifiedTest, within_task_test
from flaketui.stats.suite import MIN_TASKS_FOR_CI, MeanEstimate, TaskStats, mean_estimate


@dataclass(frozen=True)
class PairedTest:
    """Exact sign test of ``fixed`` against ``broken`` flips."""

    fixed: int
    broken: int
    pvalue: float


@dataclass(frozen=True)
class PairedComparison:
    """Run B against run A over the tasks both ran."""

    a: TaskStats
    """Run A's statistics of the tasks both ran, in A's order."""
    b: TaskStats
    """Run B's statistics of the same tasks, in the same order."""
    fixed: list[str]
    broken: list[str]
    unchanged: int
    test: PairedTest
    mean_diff: MeanEstimate
    """Mean over common tasks of p̂_B − p̂_A with its paired 95% CI (t quantile; CR2 when clustered;
    the SE floored by the trials' binomial noise with few tasks or unequal trials:
    :func:`floored_difference`)."""
    permutation: PermutationTest
    """Paired sign-flip permutation test of the same mean difference (valid with equal trials only)."""
    only_a: list[str]
    only_b: list[str]
    primary: StratifiedTest
    """The within-task permutation test the verdict rests on."""

    @property
    def run_a(self) -> str:
        """Run A's name."""
        return self.a.run

    @property
    def run_b(self) -> str:
        """Run B's name."""
        return self.b.run

    @property
    def tasks(self) -> list[str]:
        """The common tasks, in A's order."""
        return self.a.tasks

    @property
    def equal_trials(self) -> bool:
        """Every task with an outcome in both runs has as many trials in A as in B: the sign test and
        the sign-flip test are valid (a rise and a fall are equally likely under no difference)."""
        n_a, n_b = self.a.n, self.b.n
        both = (n_a > 0) & (n_b > 0)
        return bool(np.all(n_a[both] == n_b[both]))

    @property
    def single_trial(self) -> bool:
        """Every task with an outcome in both runs has one trial in each: nothing is testable per task."""
        n_a, n_b = self.a.n, self.b.n
        both = (n_a > 0) & (n_b > 0)
        return bool(both.any()) and bool(np.all((n_a[both] == 1) & (n_b[both] == 1)))

    @property
    def delta(self) -> Floats:
        """p̂_B − p̂_A per common task."""
        return self.b.p_hat - self.a.p_hat


def sign_test(fixed: int, broken: int) -> PairedTest:
    """Exact two-sided sign test of fixed against broken tasks.

    Under "no difference" each changed task is as likely fixed as broken, so
    fixed ~ Binomial(fixed + broken, 1/2). With one trial per task this is the
    exact McNemar test on the discordant pairs. Summed exactly in integers by
    :func:`flaketui.stats.exact.sign_test_pvalue` (scipy's ``binomtest`` past
    20,000 changed tasks), so a comparison does not wait for ``scipy.stats``.

    Returns
    -------
    PairedTest
        p-value 1.0 when no task changed.

    References
    ----------
    .. [1] Q. McNemar, "Note on the sampling error of the difference between
       correlated proportions or percentages", Psychometrika 12(2):153-157,
       1947. doi:10.1007/BF02295996
    .. [2] scipy.stats.binomtest (exact two-sided binomial test).

    Examples
    --------
    >>> round(sign_test(7, 4).pvalue, 3)
    0.549
    """
    if fixed < 0 or broken < 0:
        raise ValueError(f"counts (fixed={fixed}, broken={broken}) must be >= 0")
    return PairedTest(fixed, broken, sign_test_pvalue(fixed, broken))


FLOOR_NOTE = "floored at the trials' binomial noise"
"""How :attr:`MeanEstimate.method` says the SE of a difference was floored."""


def floored_difference(est: MeanEstimate, n_a: NDArray[np.integer], c_a: NDArray[np.integer],
                       n_b: NDArray[np.integer], c_b: NDArray[np.integer],
                       confidence: float = CONFIDENCE) -> MeanEstimate:
    """The mean difference's estimate with its SE raised to the trials' binomial noise
    (:func:`flaketui.stats.noise.binomial_floor`) when there are fewer than
    :data:`~flaketui.stats.suite.MIN_TASKS_FOR_CI` tasks or the runs' trial counts differ on some
    task; the degrees of freedom are kept.

    The sample SD of few per-task differences can be far below their true spread: with one trial
    of A against ten of B near p = 1 a sample of 10 tasks seldom holds the rare task A failed, and
    the plain t interval covered 79% (``docs/calibration.md``). The floor cannot be below the
    truth's binomial part, so it only widens an interval that was too narrow; with many tasks and
    equal trials the sample SD is trusted as before.
    """
    if est.se != est.se or est.tasks < 2:
        return est
    unequal = bool(np.any(np.asarray(n_a)[(n_a > 0) & (n_b > 0)] != np.asarray(n_b)[(n_a > 0) & (n_b > 0)]))
    if est.tasks >= MIN_TASKS_FOR_CI and not unequal:
        return est
    floor = binomial_floor(n_a, c_a, n_b, c_b)
    if not floor > est.se**2:
        return est
    se = math.sqrt(floor)
    q = t_value(est.df, confidence)
    ci = (max(-1.0, est.value - q * se), min(1.0, est.value + q * se))
    return replace(est, se=se, ci=ci, method=f"{est.method}, {FLOOR_NOTE}")


def compare_runs(a: TaskStats, b: TaskStats, confidence: float = CONFIDENCE) -> PairedComparison:
    """Compare run B with run A task by task.

    A task is fixed when p̂_B > p̂_A, broken when p̂_B < p̂_A. The mean
    difference of per-task p̂ gets a paired interval from the standard error of
    the per-task differences with the t quantile (CR1 clustered when tasks have
    groups; Miller 2024, section on paired differences). Tasks with no
    non-errored trial in either run are left out of the differences. The primary
    test is :func:`flaketui.stats.stratified.within_task_test`; the same
    differences also get the sign test and the paired sign-flip test of
    :func:`flaketui.stats.permutation.paired_permutation_test` (clustered alike),
    secondary evidence valid with equal trials only (:attr:`PairedComparison.equal_trials`).

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals", arXiv:2411.00640, 2024.
    .. [2] Q. McNemar, Psychometrika 12(2):153-157, 1947.
    """
    index_b = {t: i for i, t in enumerate(b.tasks)}
    common = [(i, index_b[t]) for i, t in enumerate(a.tasks) if t in index_b]
    ia = np.array([i for i, _ in common], dtype=np.int64)
    ib = np.array([j for _, j in common], dtype=np.int64)
    common_a, common_b = a.take(ia), b.take(ib)
    tasks = common_a.tasks
    p_a, p_b = common_a.p_hat, common_b.p_hat
    both = ~np.isnan(p_a) & ~np.isnan(p_b)
    diff = np.where(both, p_b - p_a, np.nan)
    eps = 1e-12
    fixed = [t for t, d in zip(tasks, diff.tolist(), strict=True) if d > eps]
    broken = [t for t, d in zip(tasks, diff.tolist(), strict=True) if d < -eps]
    unchanged = int(np.sum(both)) - len(fixed) - len(broken)
    groups = common_a.groups
    cluster_labels = groups if any(g is not None for g in groups) else None
    n_a, n_b, passes_a, passes_b = common_a.n, common_b.n, common_a.passes, common_b.passes
    est = floored_difference(mean_estimate(diff, cluster_labels, confidence, bounds=(-1.0, 1.0), ci_scale="linear"),
                             n_a, passes_a, n_b, passes_b, confidence)
    common_set = set(tasks)
    return PairedComparison(
        a=common_a,
        b=common_b,
        fixed=fixed,
        broken=broken,
        unchanged=unchanged,
        test=sign_test(len(fixed), len(broken)),
        mean_diff=est,
        permutation=paired_permutation_test(diff, cluster_labels),
        only_a=[t for t in a.tasks if t not in common_set],
        only_b=[t for t in b.tasks if t not in common_set],
        primary=within_task_test(passes_a, n_a, passes_b, n_b, swapped=b.run < a.run),
    )

