"""Per-task statistics of a run, their task-averaged suite summary, and the CI gate.

Uncertainty is over tasks, not trials: 100 tasks with 8 trials each are 100
observations of the suite mean, and tasks that share a ``group`` are one cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from flaketui.model import RunOutcomes
from flaketui.stats.estimators import (
    CONFIDENCE,
    FLAKY,
    Interval,
    classify,
    flakiness,
    p_hat,
    pass_at_k,
    pass_hat_k,
    pass_hat_k_interval,
    rule_of_three,
    wilson_interval,
    z_value,
)

MIN_TASKS_FOR_CI = 30
"""Below this many tasks the normal-approximation CI of a suite mean is rough: warn."""


@dataclass(frozen=True)
class TaskStats:
    """Per-task statistics of one run, as arrays aligned with ``tasks``."""

    run: str
    k: int
    tasks: list[str]
    groups: list[str | None]
    n: NDArray[np.int64]
    passes: NDArray[np.int64]
    errored: NDArray[np.int64]
    p_hat: NDArray[np.float64]
    p_hat_ci: Interval
    pass_at_k: NDArray[np.float64]
    pass_hat_k: NDArray[np.float64]
    pass_hat_k_ci: Interval
    flakiness: NDArray[np.float64]
    classes: list[str]
    rule_of_three: NDArray[np.float64]
    """Upper bound on the failure rate (all passed) or pass rate (all failed); NaN if flaky."""
    errored_as: str = "apart"
    """Whether ``n`` leaves errored trials out (``apart``) or counts them as failures (``fail``)."""

    def __len__(self) -> int:
        return len(self.tasks)

    def flaky(self) -> NDArray[np.bool_]:
        """Per task, whether its class is flaky (it both passed and failed)."""
        return np.fromiter(map(FLAKY.__eq__, self.classes), dtype=bool, count=len(self.classes))

    def take(self, rows: Sequence[int] | NDArray[np.integer]) -> TaskStats:
        """The statistics of the tasks at ``rows`` only, in that order."""
        idx = np.asarray(rows, dtype=np.intp)
        pick = idx.tolist()
        return replace(
            self,
            tasks=[self.tasks[i] for i in pick],
            groups=[self.groups[i] for i in pick],
            classes=[self.classes[i] for i in pick],
            p_hat_ci=Interval(self.p_hat_ci.low[idx], self.p_hat_ci.high[idx]),
            pass_hat_k_ci=Interval(self.pass_hat_k_ci.low[idx], self.pass_hat_k_ci.high[idx]),
            **{name: getattr(self, name)[idx]
               for name in ("n", "passes", "errored", "p_hat", "pass_at_k", "pass_hat_k", "flakiness",
                            "rule_of_three")},
        )


@dataclass(frozen=True)
class MeanEstimate:
    """A suite mean over tasks with its standard error and 95% interval."""

    value: float
    se: float
    ci: tuple[float, float]
    tasks: int
    clustered: bool


@dataclass(frozen=True)
class SuiteSummary:
    """The task-averaged figures of one run."""

    run: str
    k: int
    tasks: int
    trials: int
    errored: int
    pass_at_1: MeanEstimate
    pass_at_k: MeanEstimate
    pass_hat_k: MeanEstimate
    flaky_tasks: int
    tasks_below_k: int
    """Tasks with fewer than k trials, left out of pass@k and pass^k."""
    warnings: list[str] = field(default_factory=list)
    pass_hat_k_curve: tuple[float, ...] = ()
    """Suite pass^j for j = 1..k, each over the tasks with at least j trials (τ-bench's row)."""
    errored_as: str = "apart"
    """The errored-trial policy the figures were computed under (``apart`` or ``fail``)."""
    pass_at_1_errored_range: tuple[float, float] = (float("nan"), float("nan"))
    """pass@1 if every errored trial had failed, and if every one had passed
    (:func:`errored_range`)."""


def task_stats(outcomes: RunOutcomes, k: int) -> TaskStats:
    """Every per-task statistic of a run at ``k``, vectorised over tasks.

    Each statistic is a function of a task's (n, c) alone, and a suite has few distinct
    pairs (a million tasks of two trials have six): each is computed once per distinct
    pair (:func:`count_pairs`) and spread to the tasks, the same values as computing it
    task by task.
    """
    n, c = outcomes.n, outcomes.passes
    un, uc, inv = count_pairs(n, c)
    r3 = rule_of_three(un)
    ci = wilson_interval(un, uc)
    at_k, hat_k, hat_k_ci = _k_figures(un, uc, inv, k)
    classes = classify(un, uc)
    return TaskStats(
        run=outcomes.run,
        k=k,
        tasks=outcomes.tasks,
        groups=outcomes.groups,
        n=n,
        passes=c,
        errored=outcomes.errored,
        p_hat=p_hat(un, uc)[inv],
        p_hat_ci=Interval(ci.low[inv], ci.high[inv]),
        pass_at_k=at_k,
        pass_hat_k=hat_k,
        pass_hat_k_ci=hat_k_ci,
        flakiness=flakiness(un, uc)[inv],
        classes=np.array(classes, dtype=object)[inv].tolist(),  # one gather: 1M tasks 22 -> 5 ms
        rule_of_three=np.where((uc == un) | (uc == 0), r3, np.nan)[inv],
        errored_as=outcomes.errored_as,
    )


def k_figures(n: NDArray[np.integer], c: NDArray[np.integer], k: int) -> tuple[NDArray[np.float64],
                                                                            NDArray[np.float64], Interval]:
    """The per-task figures that move with k (pass@k, pass^k and its interval), as
    :func:`task_stats` computes them: once per distinct (n, c) pair. For a change of k alone
    (the app's ``+`` / ``-``)."""
    return _k_figures(*count_pairs(n, c), k)


def _k_figures(un: NDArray[np.int64], uc: NDArray[np.int64], inv: NDArray[np.intp],
               k: int) -> tuple[NDArray[np.float64], NDArray[np.float64], Interval]:
    """pass@k, pass^k and its interval of the distinct pairs (``un``, ``uc``), spread to the
    tasks (``inv``: each task's pair)."""
    interval = pass_hat_k_interval(un, uc, k)
    return (pass_at_k(un, uc, k)[inv], pass_hat_k(un, uc, k)[inv],
            Interval(interval.low[inv], interval.high[inv]))


def count_pairs(n: NDArray[np.integer], c: NDArray[np.integer]) -> tuple[NDArray[np.int64], NDArray[np.int64],
                                                                           NDArray[np.intp]]:
    """The distinct (n, c) pairs and each task's pair: ``(un[inv], uc[inv]) == (n, c)``.

    Small counts (as trial counts are) are told apart by a table indexed by the pair,
    without a sort; larger ones by :func:`numpy.unique`.
    """
    n = np.asarray(n, dtype=np.int64).ravel()
    c = np.asarray(c, dtype=np.int64).ravel()
    if n.size == 0:
        return n, c, np.empty(0, dtype=np.intp)
    width = int(c.max()) + 1 if c.min() >= 0 else 0
    if width and n.min() >= 0 and int(n.max()) * width + width <= 1 << 22:
        key = n * width + c
        seen = np.zeros(int(key.max()) + 1, dtype=bool)
        seen[key] = True
        present = np.flatnonzero(seen)
        number = np.cumsum(seen) - 1
        return present // width, present % width, number[key].astype(np.intp)
    pairs, inv = np.unique(np.stack([n, c], axis=1), axis=0, return_inverse=True)
    return pairs[:, 0], pairs[:, 1], inv.ravel().astype(np.intp)


def default_k(outcomes: Sequence[RunOutcomes]) -> int:
    """The smallest trial count of any task (so every task has an estimate); at least 1."""
    counts = [int(o.n[o.n > 0].min()) for o in outcomes if (o.n > 0).any()]
    return max(1, min(counts)) if counts else 1


def mean_estimate(
    values: NDArray[np.float64],
    groups: Sequence[str | None] | None = None,
    confidence: float = CONFIDENCE,
) -> MeanEstimate:
    """Mean over tasks with a CLT standard error, clustered when tasks share groups.

    Parameters
    ----------
    values : ndarray
        One value per task; NaN entries are left out.
    groups : sequence, optional
        A cluster label per task (None: a cluster of its own).

    Notes
    -----
    Unclustered: SE = sd / √T with the sample standard deviation (ddof = 1).
    Clustered (when any two tasks share a group), following Miller (2024),
    eq. 4: SE² = (1/T²) Σ_c (Σ_{i∈c} (x_i − x̄))², the sandwich estimator that
    adds the within-cluster covariances to the plain variance. The interval is
    mean ± z·SE, clipped to [0, 1].

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024.
    """
    x = np.asarray(values, dtype=np.float64)
    keep = ~np.isnan(x)
    if not keep.all():  # a copy only when some value is missing
        x = x[keep]
    t = x.shape[0]
    if t == 0:
        return MeanEstimate(float("nan"), float("nan"), (float("nan"), float("nan")), 0, False)
    mean = float(x.mean())
    clustered = False
    if groups is not None:
        kept = [g for g, k in zip(groups, keep.tolist(), strict=True) if k]
        labels = [g if g is not None else f"\0task{i}" for i, g in enumerate(kept)]
        _, cluster = np.unique(np.array(labels, dtype=object).astype(str), return_inverse=True)
        clustered = int(cluster.max()) + 1 < t
    if clustered:
        sums = np.bincount(cluster, weights=x - mean)
        se = float(np.sqrt(np.sum(sums**2)) / t)
    elif t > 1:
        se = float(x.std(ddof=1) / np.sqrt(t))
    else:
        se = float("nan")
    z = z_value(confidence)
    ci = (max(0.0, mean - z * se), min(1.0, mean + z * se)) if se == se else (float("nan"),) * 2
    return MeanEstimate(mean, se, ci, t, clustered)


def summarise(stats: TaskStats, bernoulli_tolerance: float = 1e-9) -> SuiteSummary:
    """Task-averaged pass@1, pass@k and pass^k of a run, with warnings.

    Warnings
    --------
    - pass^k below the Bernoulli floor 1 − k(1 − pass@1) beyond its CI: for any
      task, P(k passes) ≥ 1 − k·P(fail) (the union bound), so a suite far below
      it means trials share state or are not the same trials.
    - fewer than :data:`MIN_TASKS_FOR_CI` tasks: the interval is rough.
    - tasks with fewer than k trials are left out of the k-statistics.
    """
    groups = stats.groups if stats.groups.count(None) != len(stats.groups) else None
    p1 = mean_estimate(stats.p_hat, groups)
    pak = mean_estimate(stats.pass_at_k, groups)
    phk = mean_estimate(stats.pass_hat_k, groups)
    below_k = int(np.sum((stats.n < stats.k) & (stats.n > 0)))
    warnings: list[str] = []
    floor = 1 - stats.k * (1 - p1.value)
    if phk.tasks and phk.ci[1] + bernoulli_tolerance < floor:
        warnings.append(
            f"pass^{stats.k} = {phk.value:.3f} is below the Bernoulli floor "
            f"1 - k(1 - pass@1) = {floor:.3f} beyond its CI: trials may share state "
            "or not be the same trials"
        )
    if 0 < p1.tasks < MIN_TASKS_FOR_CI:
        warnings.append(
            f"only {p1.tasks} tasks: the suite CIs rest on a normal approximation "
            f"that wants about {MIN_TASKS_FOR_CI} or more"
        )
    if below_k:
        warnings.append(
            f"{below_k} task(s) have fewer than k = {stats.k} trials and are left out "
            f"of pass@{stats.k} and pass^{stats.k}"
        )
    no_trials = int(np.sum(stats.n == 0))
    if no_trials:
        warnings.append(f"{no_trials} task(s) have only errored trials and no outcome")
    return SuiteSummary(
        run=stats.run,
        k=stats.k,
        tasks=len(stats),
        trials=int(stats.n.sum()),
        errored=int(stats.errored.sum()),
        pass_at_1=p1,
        pass_at_k=pak,
        pass_hat_k=phk,
        flaky_tasks=stats.classes.count(FLAKY),
        tasks_below_k=below_k,
        warnings=warnings,
        pass_hat_k_curve=tuple(pass_hat_k_curve(stats.n, stats.passes, stats.k).tolist()),
        errored_as=stats.errored_as,
        pass_at_1_errored_range=errored_range(stats),
    )


def errored_range(stats: TaskStats) -> tuple[float, float]:
    """The suite pass@1 if every errored trial had failed, and if every one had passed.

    Notes
    -----
    Honest bounds, not an estimate (Manski's worst-case bounds for missing outcomes:
    C. F. Manski, *Partial Identification of Probability Distributions*, 2003, ch. 1):
    per task with m = n + e trials in all (n non-errored, e errored, c passes) the pass
    rate lies in [c/m, (c + e)/m]; the suite bounds are their means over every task with
    a trial, so a task whose trials all errored counts too (at 0 and at 1). Under
    ``--errored-as fail`` the low end is the pass@1 reported. NaN when no task has a trial.
    """
    e = stats.errored.astype(np.float64)
    m = stats.n + (e if stats.errored_as == "apart" else 0)
    ok = m > 0
    if not ok.any():
        return (float("nan"), float("nan"))
    if ok.all():  # as below, without copying every column for the tasks kept
        c = stats.passes.astype(np.float64)
    else:
        m, e, c = m[ok], e[ok], stats.passes[ok].astype(np.float64)
    low = float(np.mean(c / m))
    c += e  # (c + e) / m, in place
    c /= m
    return (low, float(np.mean(c)))


def pass_hat_k_curve(n: NDArray[np.int64], c: NDArray[np.int64], k_max: int) -> NDArray[np.float64]:
    """Suite pass^j for j = 1..k_max: the mean over tasks with n ≥ j of C(c, j)/C(n, j).

    Notes
    -----
    The unbiased per-task estimator of Yao et al. [1]_, averaged over tasks as
    τ-bench's ``display_metrics`` does. C(c, j)/C(n, j) = Π_{i<j} (c − i)/(n − i),
    so the whole row costs one multiplication per task and j (O(k·T)). NaN
    where no task has j trials; the row stops at the largest n (a k of 10**20
    gives a row of max(n) values, not an allocation of 10**20).

    References
    ----------
    .. [1] S. Yao et al., "τ-bench: A Benchmark for Tool-Agent-User Interaction in
       Real-World Domains", arXiv:2406.12045, 2024.

    Examples
    --------
    >>> pass_hat_k_curve(np.array([4, 4]), np.array([4, 2]), 2).round(4).tolist()
    [0.75, 0.5833]
    """
    n_f = np.asarray(n, dtype=np.float64)
    c_f = np.asarray(c, dtype=np.float64)
    out = np.full(max(min(k_max, int(n_f.max(initial=0))), 0), np.nan)
    running = np.ones_like(n_f)
    for j in range(1, out.shape[0] + 1):
        ok = n_f >= j
        if not ok.any():
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            step = c_f - (j - 1)  # running · (c − j + 1) / (n − j + 1), NaN where n < j, in place
            step *= running
            step /= n_f - (j - 1)
        step[~ok] = np.nan
        running = step
        kept = running if ok.all() else running[ok]
        out[j - 1] = float(np.mean(np.maximum(kept, 0.0)))
    return out


@dataclass(frozen=True)
class GateResult:
    """Verdict of the dual gate for one run."""

    run: str
    k: int
    passed: bool
    pass_hat_k: float
    min_pass_hat_k: float | None
    max_flakiness: float | None
    too_flaky: list[tuple[str, float]]
    reasons: list[str]


def gate(
    stats: TaskStats,
    summary: SuiteSummary,
    min_pass_hat_k: float | None,
    max_flakiness: float | None,
) -> GateResult:
    """The dual CI gate: suite pass^k ≥ floor and no task's flakiness above the cap.

    A suite can clear a mean threshold while one task fails half its runs; the
    flakiness cap catches that task, the floor catches a broad decline.
    """
    reasons: list[str] = []
    phk = summary.pass_hat_k.value
    if min_pass_hat_k is not None and np.isnan(phk):
        reasons.append(f"suite pass^{stats.k} is undefined: no task has {stats.k} non-errored trials")
    elif min_pass_hat_k is not None and not (phk >= min_pass_hat_k):
        reasons.append(f"suite pass^{stats.k} = {phk:.3f} is below the floor {min_pass_hat_k:g}")
    too_flaky: list[tuple[str, float]] = []
    if max_flakiness is not None:
        over = np.flatnonzero(np.nan_to_num(stats.flakiness, nan=0.0) > max_flakiness)
        too_flaky = sorted(
            ((stats.tasks[i], float(stats.flakiness[i])) for i in over), key=lambda t: -t[1]
        )
        if too_flaky:
            reasons.append(
                f"{len(too_flaky)} task(s) have flakiness above the cap {max_flakiness:g}: "
                + ", ".join(f"{t} ({f:.3f})" for t, f in too_flaky)
            )
    return GateResult(
        run=stats.run,
        k=stats.k,
        passed=not reasons,
        pass_hat_k=phk,
        min_pass_hat_k=min_pass_hat_k,
        max_flakiness=max_flakiness,
        too_flaky=too_flaky,
        reasons=reasons,
    )
