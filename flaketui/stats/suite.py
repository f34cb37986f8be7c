"""Per-task statistics of a run, their task-averaged suite summary, and the CI gate.

Uncertainty is over tasks, not trials: 100 tasks with 8 trials each are 100
observations of the suite mean, and tasks that share a ``group`` are one cluster.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from flaketui.model import RunOutcomes, counts_errored
from flaketui.stats.arrays import Bools, Floats, Ints
from flaketui.stats.classes import (
    DEFAULT_FLAKY_CAP,
    STABLE_CLASSES,
    UNDETERMINED,
    cap_rates,
    check_cap,
    evidence_classes,
    mixed,
    stable_after,
    trials_to_decide,
)
from flaketui.stats.empirical_bayes import FlakyPosterior, flaky_posterior
from flaketui.stats.estimators import (
    CONFIDENCE,
    FLAKY,
    PASSK_CI_METHODS,
    Interval,
    clopper_pearson,
    flakiness,
    median,
    p_hat,
    pass_at_k,
    pass_hat_k,
    pass_hat_k_interval,
    rule_of_three,
    t_value,
    wilson_interval,
)
from flaketui.stats.noise import NoiseFloor, suite_noise_floor
from flaketui.stats.scores import ScoreStats, is_graded, task_scores

MIN_TASKS_FOR_CI = 30
"""Below this many tasks (or clusters, when tasks are clustered) a suite CI leans on the
task means (cluster sums) being near-normal, which few of them need not be: warn."""

FEW_TASKS = 60
"""Below this many unclustered tasks each suite interval also holds the beta-binomial
posterior's (:func:`flaketui.stats.fewtasks.suite_posterior`): at 30 and 50 tasks the t interval
alone still covered 92–94% for pass^4 from 5–8 trials (``docs/calibration.md``)."""


@dataclass(frozen=True)
class TaskStats:
    """Per-task statistics of one run, as arrays aligned with ``tasks``."""

    run: str
    k: int
    tasks: list[str]
    groups: list[str | None]
    n: Ints
    passes: Ints
    errored: Ints
    p_hat: Floats
    p_hat_ci: Interval
    pass_at_k: Floats
    pass_hat_k: Floats
    pass_hat_k_ci: Interval
    flakiness: Floats
    classes: list[str]
    rule_of_three: Floats
    """Upper bound on the failure rate (all passed) or pass rate (all failed); NaN if flaky."""
    mixed: Bools
    """Whether the task both passed and failed: a fact about its trials, not its class."""
    to_decide: Floats
    """Further trials until the task is decided, at its rate (:func:`~flaketui.stats.classes.trials_to_decide`)."""
    p_flaky: Floats
    """The empirical-Bayes P(flakiness > cap) (:func:`~flaketui.stats.empirical_bayes.flaky_posterior`)."""
    eb_flakiness: Floats
    """The empirical-Bayes posterior mean flakiness."""
    posterior: FlakyPosterior
    """The empirical-Bayes fit of the whole run: its prior and the expected number of truly flaky tasks
    (its per-task arrays are those of every task; :attr:`p_flaky` follows a :meth:`take`)."""
    flaky_cap: float = DEFAULT_FLAKY_CAP
    """The flakiness cap the classes are stated against."""
    errored_as: str = "apart"
    """Whether ``n`` leaves errored trials out (``apart``), counts them as failures (``fail``) or
    by their score (``score``)."""
    passk_ci: str = "exact"
    """How ``pass_hat_k_ci`` was computed (:data:`~flaketui.stats.estimators.PASSK_CI_METHODS`)."""
    scores: ScoreStats | None = None
    """The graded-score figures (:mod:`flaketui.stats.scores`); None when the run is not graded."""
    errored_passes: Ints | None = None
    """Per task, the errored trials counted as passes (``score``); None: none."""
    planned_trials: int | None = None
    """Only the first this many trials of each task were read (``--planned-trials``)."""

    def __len__(self) -> int:
        return len(self.tasks)

    def flaky(self) -> Bools:
        """Per task, whether its class is flaky (its exact interval rules out flakiness at or below the cap)."""
        return np.fromiter(map(FLAKY.__eq__, self.classes), dtype=bool, count=len(self.classes))

    def few_trials(self) -> bool:
        """Whether most tasks have fewer trials than a clean task needs to be called stable
        (:func:`~flaketui.stats.classes.stable_after`): then the table ranks by P(flaky)."""
        has = self.n[self.n > 0]
        return bool(has.size) and median(has) < stable_after(self.flaky_cap)

    def take(self, rows: Sequence[int] | NDArray[np.integer]) -> TaskStats:
        """The statistics of the tasks at ``rows`` only, in that order (these statistics themselves,
        not a copy, when ``rows`` is every task in order: two runs of the same tasks compare
        without copying either)."""
        idx = np.asarray(rows, dtype=np.intp)
        if idx.shape == (len(self.tasks),) and bool(np.all(idx == np.arange(idx.shape[0]))):
            return self
        pick = idx.tolist()
        return replace(
            self,
            scores=None if self.scores is None else self.scores.take(idx),
            errored_passes=None if self.errored_passes is None else self.errored_passes[idx],
            tasks=[self.tasks[i] for i in pick],
            groups=[self.groups[i] for i in pick],
            classes=[self.classes[i] for i in pick],
            p_hat_ci=Interval(self.p_hat_ci.low[idx], self.p_hat_ci.high[idx]),
            pass_hat_k_ci=Interval(self.pass_hat_k_ci.low[idx], self.pass_hat_k_ci.high[idx]),
            **{name: getattr(self, name)[idx]
               for name in ("n", "passes", "errored", "p_hat", "pass_at_k", "pass_hat_k", "flakiness",
                            "rule_of_three", "mixed", "to_decide", "p_flaky", "eb_flakiness")},
        )


@dataclass(frozen=True)
class MeanEstimate:
    """A suite mean over tasks with its standard error and interval (:func:`mean_estimate`)."""

    value: float
    se: float
    ci: tuple[float, float]
    tasks: int
    clustered: bool
    df: float = math.inf
    """Degrees of freedom of the interval's t quantile: tasks − 1 unclustered; clustered, the
    Bell–McCaffrey degrees of freedom of CR2 (at most clusters − 1, fewer when clusters differ
    in size) or clusters − 1 under CR1; ``inf`` when no interval could be formed."""
    n_clusters: int = 0
    """Clusters of a clustered estimate (0 when unclustered)."""
    largest_share: float = 0.0
    """The share of the tasks held by the largest cluster (clustered only)."""
    method: str = "t"
    """How the interval was made: ``t`` (one-sample t), ``CR2`` (Bell–McCaffrey), ``CR1``, or a
    name another estimator gives (:mod:`flaketui.stats.fewtasks`)."""

    @property
    def clusters(self) -> int:
        """Clusters of a clustered estimate; the tasks otherwise."""
        return self.n_clusters if self.clustered else self.tasks


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
    """Suite pass^j for j = 1..k, each over the same tasks: those with at least k trials
    (:func:`pass_hat_k_curve`)."""
    errored_as: str = "apart"
    """The errored-trial policy the figures were computed under (``apart``, ``fail`` or ``score``)."""
    pass_at_1_errored_range: tuple[float, float] = (float("nan"), float("nan"))
    """pass@1 if every errored trial had failed, and if every one had passed
    (:func:`errored_range`)."""
    mean_score: MeanEstimate | None = None
    """The mean over tasks of their mean scores, with pass@1's (clustered) interval; None when
    the run is not graded."""
    within_task_share: float | None = None
    """Share of the score variance within tasks, 1 − ICC (:func:`~flaketui.stats.scores.within_task_share`);
    None when the run is not graded or the share is undefined."""
    curve_left_out: int = 0
    """Tasks left out of :attr:`pass_hat_k_curve` (fewer trials than its last k)."""
    score_moved: tuple[int, int] = (0, 0)
    """Tasks whose score moved across trials, and how many of them had one pass/fail outcome
    throughout (score flakiness a pass rate cannot show)."""
    flaky_cap: float = DEFAULT_FLAKY_CAP
    """The flakiness cap the classes are stated against."""
    undetermined_tasks: int = 0
    """Tasks whose exact interval holds rates on both sides of the cap."""
    stable_tasks: int = 0
    """Tasks classed stable-pass or stable-fail."""
    mixed_tasks: int = 0
    """Tasks that both passed and failed (the old count of "flaky")."""
    expected_flaky: float = float("nan")
    """The empirical-Bayes expected number of truly flaky tasks, Σ P(flaky)."""
    expected_flaky_ci: tuple[int, int] = (0, 0)
    """Its 95% Poisson-binomial interval."""
    prior: tuple[float, float, bool] = (float("nan"), float("nan"), False)
    """The fitted Beta(a, b) prior of the pass rates, and whether it was fitted (else Jeffreys')."""
    planned_trials: int | None = None
    """Only the first this many trials of each task were read (``--planned-trials``)."""
    noise_floor: NoiseFloor | None = None
    """The smallest change against another run of this design that could be told from noise, and
    the run's variance split (:func:`flaketui.stats.noise.suite_noise_floor`)."""


def task_stats(outcomes: RunOutcomes, k: int, passk_ci: str = "exact",
               flaky_cap: float = DEFAULT_FLAKY_CAP) -> TaskStats:
    """Every per-task statistic of a run at ``k``, vectorised over tasks.

    Each statistic is a function of a task's (n, c) alone, and a suite has few distinct
    pairs (a million tasks of two trials have six): each is computed once per distinct
    pair (:func:`count_pairs`) and spread to the tasks, the same values as computing it
    task by task. ``passk_ci`` picks the pass^k interval (``exact`` or ``bootstrap``:
    :func:`~flaketui.stats.estimators.pass_hat_k_interval`). Each task's class is stated
    against ``flaky_cap`` (:func:`~flaketui.stats.classes.evidence_classes`).
    """
    _check_passk_ci(passk_ci)
    check_cap(flaky_cap)
    n, c = outcomes.n, outcomes.passes
    un, uc, inv = count_pairs(n, c)
    r3 = rule_of_three(un)
    ci = wilson_interval(un, uc)
    at_k, hat_k, hat_k_ci = _k_figures(un, uc, inv, k, passk_ci)
    classes = evidence_classes(un, uc, flaky_cap)
    need = trials_to_decide(un, uc, flaky_cap)
    undetermined = np.asarray(classes, dtype=object) == UNDETERMINED
    pairs = flaky_posterior(un, uc, flaky_cap, weights=np.bincount(inv, minlength=un.size))
    posterior = replace(pairs, p_flaky=pairs.p_flaky[inv], flakiness=pairs.flakiness[inv])
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
        mixed=mixed(n, c),
        to_decide=np.where(undetermined, need, np.nan)[inv],
        p_flaky=posterior.p_flaky,
        eb_flakiness=posterior.flakiness,
        posterior=posterior,
        flaky_cap=flaky_cap,
        errored_as=outcomes.errored_as,
        errored_passes=outcomes.errored_passes,
        passk_ci=passk_ci,
        scores=_scores(outcomes),
        planned_trials=outcomes.planned_trials,
    )


def _scores(outcomes: RunOutcomes) -> ScoreStats | None:
    """The run's graded-score figures, when some trial's score is partial credit."""
    if outcomes.trial_scores is None or outcomes.trial_errored is None or not is_graded(outcomes.trial_scores):
        return None
    return task_scores(outcomes.trial_scores, outcomes.trial_errored, outcomes.bounds, outcomes.errored_as)


def _check_passk_ci(passk_ci: str) -> None:
    if passk_ci not in PASSK_CI_METHODS:
        raise ValueError(f"passk_ci ({passk_ci!r}) must be one of {', '.join(PASSK_CI_METHODS)}")


def k_figures(n: NDArray[np.integer], c: NDArray[np.integer], k: int,
              passk_ci: str = "exact") -> tuple[Floats, Floats, Interval]:
    """The per-task figures that move with k (pass@k, pass^k and its ``passk_ci`` interval), as
    :func:`task_stats` computes them: once per distinct (n, c) pair. For a change of k alone
    (the app's ``+`` / ``-``)."""
    _check_passk_ci(passk_ci)
    return _k_figures(*count_pairs(n, c), k, passk_ci)


def _k_figures(un: Ints, uc: Ints, inv: NDArray[np.intp],
               k: int, passk_ci: str = "exact") -> tuple[Floats, Floats, Interval]:
    """pass@k, pass^k and its interval of the distinct pairs (``un``, ``uc``), spread to the
    tasks (``inv``: each task's pair)."""
    interval = pass_hat_k_interval(un, uc, k, method=passk_ci)
    return (pass_at_k(un, uc, k)[inv], pass_hat_k(un, uc, k)[inv],
            Interval(interval.low[inv], interval.high[inv]))


def count_pairs(n: NDArray[np.integer], c: NDArray[np.integer]) -> tuple[Ints, Ints,
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


def _attempts(o: RunOutcomes) -> Ints:
    """Per task of ``o``, the trials it was given: errored ones included, counted once."""
    n = np.asarray(o.n, dtype=np.int64)
    return n if counts_errored(o.errored_as) else n + np.asarray(o.errored, dtype=np.int64)


def default_k(outcomes: Sequence[RunOutcomes]) -> int:
    """The attempts most tasks have: the mode of trials per task, errored trials included,
    over every task of ``outcomes`` that has any (ties: the smaller); at least 1.

    A task with fewer trials than that (one whose trials errored, say) is left out of
    pass@k and pass^k and counted as such (:attr:`SuiteSummary.tasks_below_k`), rather
    than pulling k down for every task: one task with a single usable trial no longer
    makes k = 1 on a run of 5 attempts.

    Examples
    --------
    >>> from flaketui.model import RunOutcomes, counts_errored
    >>> o = RunOutcomes("r", ["a", "b", "c"], np.array([5, 5, 1]), np.array([5, 3, 1]),
    ...                 np.array([0, 0, 4]), [None] * 3, np.arange(11), np.array([0, 5, 10, 11]))
    >>> default_k([o])
    5
    """
    counts = [a[a > 0] for a in map(_attempts, outcomes)]
    pooled = np.concatenate(counts) if counts else np.empty(0, dtype=np.int64)
    if pooled.size == 0:
        return 1
    values, freq = np.unique(pooled, return_counts=True)
    return max(1, int(values[int(np.argmax(freq))]))  # argmax: the first, i.e. smallest, tie


CLUSTER_METHODS = ("CR2", "CR1")
"""The clustered standard errors :func:`mean_estimate` offers; the first is the default."""

CI_SCALES = ("logit", "linear")
"""The scales :func:`mean_estimate` forms a CR2 interval on; the first is the default (a mean of
bounded values), the second is for differences, which are not skewed towards a bound."""


def mean_estimate(
    values: Floats,
    groups: Sequence[str | None] | None = None,
    confidence: float = CONFIDENCE,
    *,
    bounds: tuple[float, float] = (0.0, 1.0),
    cluster_method: str = "CR2",
    ci_scale: str = "logit",
) -> MeanEstimate:
    """Mean over tasks with a small-sample standard error and t interval, clustered when
    tasks share groups.

    Parameters
    ----------
    values : ndarray
        One value per task; NaN entries are left out.
    groups : sequence, optional
        A cluster label per task (None: a cluster of its own).
    confidence : float
        Confidence level of the interval, 0.95 by default.
    bounds : (float, float)
        The interval is clipped to these: ``(0, 1)`` for a rate (the default),
        ``(-1, 1)`` for a difference of rates.
    cluster_method : {"CR2", "CR1"}
        The clustered variance: CR2 with Bell–McCaffrey degrees of freedom (the default,
        which holds when clusters differ in size), or CR1 with t(G − 1) (statsmodels').
    ci_scale : {"logit", "linear"}
        Where a CR2 interval is formed: on the logit scale of the mean's place within finite
        ``bounds`` (the default: a mean of rates) or on the mean's own scale (differences).

    Returns
    -------
    MeanEstimate
        The mean, its SE, the interval, the tasks used, whether clustered and the
        degrees of freedom of the t quantile.

    Notes
    -----
    Unclustered: SE = sd / √T with the sample standard deviation (ddof = 1), and the
    interval mean ± t_{T−1}·SE, the one-sample t interval (the OLS fit of the values on a
    constant, as ``statsmodels.OLS(x, ones).fit(use_t=True)`` gives it).

    Clustered (when any two tasks share a group; G clusters of n_g tasks, S_g the sum of
    the residuals x_i − x̄ of cluster g): the sandwich of the mean (Miller 2024 [1]_, eq. 4;
    Liang & Zeger 1986 [2]_) with a small-sample correction.

    - **CR2** (Bell & McCaffrey 2002 [4]_; the default): each cluster's residuals are
      multiplied by (I − H_gg)^(−1/2), H the hat matrix of the regression on a constant, so
      H_gg = J/T and the factor scales S_g by 1/√(1 − n_g/T): SE² = (1/T²) Σ_g S_g²/(1 − n_g/T),
      unbiased when the tasks are independent with equal variance. The t quantile's degrees
      of freedom are Bell and McCaffrey's: ν = (Σλ)²/Σλ² over the eigenvalues λ of the G × G
      matrix M = A − v vᵀ/T with A = diag(n_g/(1 − n_g/T)) and v_g = n_g/√(1 − n_g/T)
      (Imbens & Kolesár 2016 [5]_, eq. 11 and section 3.2, the matrix G′G of their
      K_BM for the regression on a constant, to a constant factor). Then Σλ = tr M = T and
      Σλ² = tr M² = Σ a_g² − (2/T) Σ a_g v_g² + (Σ v_g²)²/T². Balanced clusters give
      ν = G − 1 and CR2 = CR1; one large cluster beside small ones gives a large factor on
      its sum and few degrees of freedom, the case CR1 with t(G − 1) fails (one cluster of
      40 beside seven of 2: CR1 covers about half the time; ``docs/calibration.md``).
      Clusters of one task each give the one-sample t interval exactly.

      With finite ``bounds`` (lo, hi) and ``ci_scale="logit"`` the CR2 interval is formed on the
      logit scale of z = (x̄ − lo)/(hi − lo) and mapped back (the delta method: the SE of logit z
      is SE/((hi − lo)·z(1 − z)); the logit interval of survey proportions [6]_ [7]_):
      lo + (hi − lo)·expit(logit z ± t_ν·SE/((hi − lo)·z(1 − z))). Few cluster sums of a skewed
      figure (pass^k, whose clusters of low μ sit near 0 and the few of high μ far above) make the
      symmetric interval miss mostly on the long side: with 5–10 clusters it covered 91–93% for
      pass^4, and 91% with one cluster of 47 beside seven of one; on the logit scale 94.6–96%, no
      wider on balanced clusters (``docs/calibration.md``, where the wild cluster bootstrap with
      Webb's weights, whose symmetric weights cannot see the skew, measured as the symmetric
      interval did). A mean at a bound (every value there) keeps its one-point interval.
    - **CR1**: SE₀² = (1/T²) Σ_g S_g² times G/(G − 1)·(T − 1)/(T − K) with K = 1 regressor,
      i.e. G/(G − 1) (Cameron & Miller 2015 [3]_, section VI.B), with t(G − 1) (their
      section VI.C): statsmodels' ``OLS(x, ones).fit(cov_type="cluster", cov_kwds={"groups":
      g}, use_t=True)``, SE and ``conf_int`` alike. Kept for comparison.

    With one cluster (or one task) no interval can be formed: SE and bounds are NaN.

    References
    ----------
    .. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to
       Language Model Evaluations", arXiv:2411.00640, 2024.
    .. [2] K.-Y. Liang, S. L. Zeger, "Longitudinal data analysis using generalized
       linear models", Biometrika 73(1):13-22, 1986. doi:10.1093/biomet/73.1.13
    .. [3] A. C. Cameron, D. L. Miller, "A Practitioner's Guide to Cluster-Robust
       Inference", Journal of Human Resources 50(2):317-372, 2015.
       doi:10.3368/jhr.50.2.317
    .. [4] R. M. Bell, D. F. McCaffrey, "Bias reduction in standard errors for linear
       regression with multi-stage samples", Survey Methodology 28(2):169-181, 2002.
    .. [5] G. W. Imbens, M. Kolesár, "Robust Standard Errors in Small Samples: Some
       Practical Advice", Review of Economics and Statistics 98(4):701-712, 2016.
       doi:10.1162/REST_a_00552
    .. [6] E. L. Korn, B. I. Graubard, "Confidence intervals for proportions with small
       expected number of positive counts estimated from survey data", Survey Methodology
       24(2):193-201, 1998.
    .. [7] StataCorp, *Stata Survey Data Reference Manual*, ``proportion``, Methods and
       formulas (``citype(logit)``, the default).

    Examples
    --------
    >>> est = mean_estimate(np.array([1.0, 0.5, 0.0, 0.75, 1.0]))
    >>> round(est.se, 4), est.df, tuple(round(b, 4) for b in est.ci)
    (0.1871, 4.0, (0.1306, 1.0))
    """
    if cluster_method not in CLUSTER_METHODS:
        raise ValueError(f"cluster_method ({cluster_method!r}) must be one of {', '.join(CLUSTER_METHODS)}")
    if ci_scale not in CI_SCALES:
        raise ValueError(f"ci_scale ({ci_scale!r}) must be one of {', '.join(CI_SCALES)}")
    x = np.asarray(values, dtype=np.float64)
    keep = ~np.isnan(x)
    if not keep.all():  # a copy only when some value is missing
        x = x[keep]
    t = x.shape[0]
    nan = float("nan")
    if t == 0:
        return MeanEstimate(nan, nan, (nan, nan), 0, False)
    mean = float(x.mean())
    clustered = False
    n_clusters = 0
    if groups is not None:
        kept = [g for g, k in zip(groups, keep.tolist(), strict=True) if k]
        labels = [g if g is not None else f"\0task{i}" for i, g in enumerate(kept)]
        _, cluster = np.unique(np.array(labels, dtype=object).astype(str), return_inverse=True)
        cluster = np.ravel(cluster)
        n_clusters = int(cluster.max()) + 1
        clustered = n_clusters < t
    df = math.inf
    method = "t"
    share = 0.0
    if clustered:
        sizes = np.bincount(cluster, minlength=n_clusters).astype(np.float64)
        share = float(sizes.max() / t)
        method = cluster_method
        if n_clusters > 1:
            sums = np.bincount(cluster, weights=x - mean, minlength=n_clusters)
            if cluster_method == "CR1":
                # CR1: the sandwich times G/(G − 1) · (T − 1)/(T − K), K = 1 (statsmodels' default).
                se = float(np.sqrt(np.sum(sums**2) * n_clusters / (n_clusters - 1)) / t)
                df = float(n_clusters - 1)
            else:
                se, df = _cr2(sums, sizes, t)
        else:
            se = nan
    elif t > 1:
        se = float(x.std(ddof=1) / np.sqrt(t))
        df = float(t - 1)
    else:
        se = nan
    if se == se:
        q = t_value(df, confidence)
        lo, hi = bounds
        if method == "CR2" and ci_scale == "logit" and se > 0 and lo < mean < hi and math.isfinite(hi - lo):
            ci = _logit_interval(mean, q * se, lo, hi)
        else:
            ci = (min(max(lo, mean - q * se), hi), max(min(hi, mean + q * se), lo))
    else:
        ci = (nan, nan)
    return MeanEstimate(mean, se, ci, t, clustered, df, n_clusters if clustered else 0, share, method)


def _logit_interval(mean: float, half: float, lo: float, hi: float) -> tuple[float, float]:
    """mean ± half on the logit scale of the mean's place in (lo, hi), mapped back
    (:func:`mean_estimate`, Notes): lo + (hi − lo)·expit(logit z ± half/((hi − lo)·z(1 − z)))."""
    width = hi - lo
    z = (mean - lo) / width
    centre = math.log(z / (1.0 - z))
    step = half / (width * z * (1.0 - z))
    return (lo + width * _expit(centre - step), lo + width * _expit(centre + step))


def _expit(v: float) -> float:
    """1/(1 + e^(−v)), 0 or 1 where the exponential would overflow."""
    return 0.0 if v < -700 else 1.0 if v > 700 else 1.0 / (1.0 + math.exp(-v))


def _cr2(sums: Floats, sizes: Floats, t: int) -> tuple[float, float]:
    """CR2's standard error of the mean and Bell–McCaffrey's degrees of freedom, from the
    clusters' residual sums and sizes (:func:`mean_estimate`, Notes)."""
    keep = 1.0 - sizes / t  # 1 − n_g/T > 0: at least two clusters
    se = float(np.sqrt(np.sum(sums**2 / keep)) / t)
    a = sizes / keep
    v2 = sizes * a  # v_g² = n_g²/(1 − n_g/T)
    tr2 = float(np.sum(a**2) - 2.0 / t * np.sum(a * v2) + np.sum(v2) ** 2 / t**2)
    df = float(t) ** 2 / tr2 if tr2 > 0 else math.inf
    return se, df


def summarise(stats: TaskStats, bernoulli_tolerance: float = 1e-9) -> SuiteSummary:
    """Task-averaged pass@1, pass@k and pass^k of a run, with warnings.

    Warnings
    --------
    - pass^k below the Bernoulli floor 1 − k(1 − pass@1) beyond its CI: for any
      task, P(k passes) ≥ 1 − k·P(fail) (the union bound), so a suite far below
      it means trials share state or are not the same trials.
    - fewer than :data:`MIN_TASKS_FOR_CI` tasks (clusters, when clustered): the t interval
      leans on the task means (cluster sums) being near-normal, and may be too narrow. Below
      :data:`FEW_TASKS` unclustered tasks each interval also holds the beta-binomial posterior's
      (:func:`flaketui.stats.fewtasks.suite_posterior`), which held its coverage where the t
      interval did not.
    - a cluster holding more than half the tasks.
    - tasks with fewer than k trials are left out of the k-statistics.
    """
    groups = stats.groups if stats.groups.count(None) != len(stats.groups) else None
    p1 = mean_estimate(stats.p_hat, groups)
    sc = stats.scores
    pak = mean_estimate(stats.pass_at_k, groups)
    phk = mean_estimate(stats.pass_hat_k, groups)
    if not p1.clustered and 2 <= p1.tasks < FEW_TASKS:
        p1, pak, phk = _few_task_intervals(stats, p1, pak, phk)
    below_k = int(np.sum((stats.n < stats.k) & (stats.n > 0)))
    warnings: list[str] = []
    floor = 1 - stats.k * (1 - p1.value)
    if phk.tasks and phk.ci[1] + bernoulli_tolerance < floor:
        warnings.append(
            f"pass^{stats.k} = {phk.value:.3f} is below the Bernoulli floor "
            f"1 - k(1 - pass@1) = {floor:.3f} beyond its CI: trials may share state "
            "or not be the same trials"
        )
    warnings.extend(_few_units_warning(p1))
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
        flaky_cap=stats.flaky_cap,
        undetermined_tasks=stats.classes.count(UNDETERMINED),
        stable_tasks=sum(map(stats.classes.count, STABLE_CLASSES)),
        mixed_tasks=int(np.count_nonzero(stats.mixed)),
        expected_flaky=stats.posterior.expected,
        expected_flaky_ci=stats.posterior.interval,
        prior=(stats.posterior.prior.a, stats.posterior.prior.b, stats.posterior.prior.fitted),
        tasks_below_k=below_k,
        warnings=warnings,
        pass_hat_k_curve=tuple(pass_hat_k_curve(stats.n, stats.passes, stats.k).tolist()),
        errored_as=stats.errored_as,
        pass_at_1_errored_range=errored_range(stats),
        mean_score=None if sc is None else mean_score_estimate(sc.mean_score, sc.scored, groups, sc.bounds),
        within_task_share=None if sc is None or math.isnan(sc.within_task_share) else sc.within_task_share,
        curve_left_out=curve_left_out(stats.n, stats.k),
        score_moved=(0, 0) if sc is None else (int(sc.score_flaky.sum()),
                                               int((sc.score_flaky & ~stats.mixed).sum())),
        noise_floor=suite_noise_floor(stats.n, stats.passes),
        planned_trials=stats.planned_trials,
    )


def mean_score_estimate(mean_score: Floats, scored: NDArray[np.integer],
                        groups: Sequence[str | None] | None = None,
                        bounds: tuple[float, float] = (0.0, 1.0)) -> MeanEstimate:
    """The run's mean score over tasks: :func:`mean_estimate` of the task mean scores, and below
    :data:`FEW_TASKS` unclustered tasks its interval widened to hold the beta-binomial posterior's
    (:func:`flaketui.stats.fewtasks.score_posterior`, on the scores rescaled from ``bounds`` to
    [0, 1]), as pass@1's is: on suites of mostly solved tasks the task mean scores pile up below
    1 and the t interval alone covered 93% at 10 and 30 tasks (``docs/calibration.md``)."""
    est = mean_estimate(mean_score, groups, bounds=bounds)
    if est.clustered or not 2 <= est.tasks < FEW_TASKS or est.ci[0] != est.ci[0]:
        return est
    from flaketui.stats.fewtasks import METHOD, score_posterior

    lo, hi = bounds
    m = np.asarray(scored, dtype=np.float64)
    ok = ~np.isnan(np.asarray(mean_score, dtype=np.float64)) & (m > 0)
    total = (np.asarray(mean_score, dtype=np.float64)[ok] - lo) / (hi - lo) * m[ok]
    post = score_posterior(m[ok], total)
    if post is None:
        return est
    return replace(est, ci=(min(lo + (hi - lo) * post[0], est.ci[0]), max(lo + (hi - lo) * post[1], est.ci[1])),
                   method=METHOD)


def _few_task_intervals(stats: TaskStats, *estimates: MeanEstimate) -> tuple[MeanEstimate, ...]:
    """pass@1, pass@k and pass^k, each interval widened to hold the beta-binomial posterior's
    (:func:`flaketui.stats.fewtasks.suite_posterior`): the t interval fails skewed figures (pass^k)
    and the posterior fails suites whose rates are not beta-shaped, and their hull held in both."""
    from flaketui.stats.fewtasks import METHOD, suite_posterior

    post = suite_posterior(stats.n, stats.passes, stats.k)
    if post is None:
        return estimates
    out = []
    for est, (lo, hi) in zip(estimates, (post.pass_at_1, post.pass_at_k, post.pass_hat_k), strict=True):
        if est.value != est.value or est.ci[0] != est.ci[0]:
            out.append(est)
            continue
        out.append(replace(est, ci=(min(lo, est.ci[0]), max(hi, est.ci[1])), method=METHOD))
    return tuple(out)


def _few_units_warning(est: MeanEstimate) -> list[str]:
    """The warnings for a suite CI over fewer than :data:`MIN_TASKS_FOR_CI` tasks or clusters, and
    for a cluster that holds more than half the tasks (its sum then carries most of the variance,
    and the interval rests on the few degrees of freedom that are left)."""
    if est.clustered:
        g = est.clusters
        if est.se != est.se:
            return [f"only {g} cluster(s) of tasks: the suite CIs need at least two clusters"]
        out = []
        if g < MIN_TASKS_FOR_CI:
            out.append(f"only {g} clusters: the suite CIs use {est.method} and t({_df_text(est.df)}), and "
                       f"may still be too narrow below about {MIN_TASKS_FOR_CI}")
        if est.largest_share > 0.5:
            out.append(f"the largest cluster holds {est.largest_share:.0%} of the tasks: the suite CIs "
                       f"rest on {_df_text(est.df)} degrees of freedom ({est.method}, Bell–McCaffrey) and are wide")
        return out
    if 0 < est.tasks < MIN_TASKS_FOR_CI:
        if est.tasks == 1:
            return ["only 1 task: the suite CIs need at least two tasks"]
        if est.method != "t":
            return [f"only {est.tasks} tasks: each suite CI is the {est.method} (below about "
                    f"{FEW_TASKS} tasks a t interval alone is too narrow for skewed figures such as pass^k)"]
        return [f"only {est.tasks} tasks: the suite CIs use t({est.tasks - 1}), and skewed task "
                f"values may still make them too narrow below about {MIN_TASKS_FOR_CI}"]
    return []


def _df_text(df: float) -> str:
    """Degrees of freedom for a message: whole when within rounding of a whole number, else one decimal."""
    return f"{round(df, 1):g}"


def errored_range(stats: TaskStats) -> tuple[float, float]:
    """The suite pass@1 if every errored trial had failed, and if every one had passed.

    Notes
    -----
    Honest bounds, not an estimate (Manski's worst-case bounds for missing outcomes:
    C. F. Manski, *Partial Identification of Probability Distributions*, 2003, ch. 1):
    per task with m = n + e trials in all (n non-errored, e errored, c passes) the pass
    rate lies in [c/m, (c + e)/m]; the suite bounds are their means over every task with
    a trial, so a task whose trials all errored counts too (at 0 and at 1). Under
    ``--errored-as fail`` the low end is the pass@1 reported; under ``score`` c leaves out the
    errored trials counted as passes. NaN when no task has a trial.
    """
    e = stats.errored.astype(np.float64)
    m = stats.n + (0 if counts_errored(stats.errored_as) else e)
    ok = m > 0
    if not ok.any():
        return (float("nan"), float("nan"))
    c = stats.passes.astype(np.float64)
    if stats.errored_passes is not None:
        c = c - stats.errored_passes
    if not ok.all():
        m, e, c = m[ok], e[ok], c[ok]
    low = float(np.mean(c / m))
    c += e  # (c + e) / m, in place
    c /= m
    return (low, float(np.mean(c)))


def pass_hat_k_curve(n: Ints, c: Ints, k_max: int) -> Floats:
    """Suite pass^j for j = 1..k_max: the mean of C(c, j)/C(n, j) over one set of tasks, those with
    n ≥ k_max (the tasks of the suite's pass^k), at every j.

    Notes
    -----
    The unbiased per-task estimator of Yao et al. [1]_, averaged over tasks as τ-bench's
    ``display_metrics`` does, but over the same tasks at every j: a task with fewer than
    k_max trials is left out of the whole row (:func:`curve_left_out` counts them), so the row
    never jumps where such a task would have left the mean. C(c, j)/C(n, j) =
    Π_{i<j} (c − i)/(n − i), so the whole row costs one multiplication per task and j
    (O(k·T)). The row stops at the largest n (a k of 10**20 gives a row of max(n) values, not
    an allocation of 10**20); empty without trials.

    References
    ----------
    .. [1] S. Yao et al., "τ-bench: A Benchmark for Tool-Agent-User Interaction in
       Real-World Domains", arXiv:2406.12045, 2024.

    Examples
    --------
    >>> pass_hat_k_curve(np.array([4, 4]), np.array([4, 2]), 2).round(4).tolist()
    [0.75, 0.5833]
    >>> pass_hat_k_curve(np.array([4, 1]), np.array([2, 1]), 2).round(4).tolist()  # the 1-trial task left out
    [0.5, 0.1667]
    """
    n_f = np.asarray(n, dtype=np.float64)
    c_f = np.asarray(c, dtype=np.float64)
    top = max(min(k_max, int(n_f.max(initial=0))), 0)
    keep = n_f >= max(top, 1)
    n_f, c_f = n_f[keep], c_f[keep]
    out = np.full(top if n_f.size else 0, np.nan)
    running = np.ones_like(n_f)
    for j in range(1, out.shape[0] + 1):
        running = running * (c_f - (j - 1)) / (n_f - (j - 1))
        out[j - 1] = float(np.mean(np.maximum(running, 0.0)))
    return out


def curve_left_out(n: Ints, k_max: int) -> int:
    """Tasks with a trial but fewer than the curve's last k (min(k_max, largest n)): left out
    of :func:`pass_hat_k_curve`'s whole row."""
    n_arr = np.asarray(n, dtype=np.int64)
    top = min(k_max, int(n_arr.max(initial=0)))
    return int(np.sum((n_arr > 0) & (n_arr < top)))


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
    """Tasks whose point flakiness 4·p̂·(1 − p̂) is above the cap, flakiest first."""
    reasons: list[str]
    floor_failed: bool = False
    """Whether the suite pass^k is below the floor (or undefined while a floor is set)."""
    require_evidence: bool = False
    """Whether a task had to rule out flakiness above the cap (``--require-evidence``)."""
    confidence: float = CONFIDENCE
    """The confidence level of that evidence."""
    too_few_trials: list[tuple[str, int | None]] = field(default_factory=list)
    """With ``require_evidence``: tasks whose point flakiness is within the cap but whose
    trials cannot rule out flakiness above it, with how many more clean trials (all passing,
    or all failing for a task that mostly fails) would (None: no number would)."""
    no_outcome: bool = False
    """With a cap: no task has a non-errored trial, so the cap could not be checked (a failure)."""

    @property
    def cap_failed(self) -> bool:
        """Whether the flakiness cap failed: a task over it, one short of evidence, or no outcome at all."""
        return bool(self.too_flaky or self.too_few_trials or self.no_outcome)


flakiness_cap_band = cap_rates
"""The pass rates p₁ ≤ p₂ with 4p(1 − p) > cap exactly when p₁ < p < p₂ (:func:`~flaketui.stats.classes.cap_rates`)."""


def rules_out_flakiness(n: NDArray[np.integer], c: NDArray[np.integer], cap: float,
                        confidence: float = CONFIDENCE) -> Bools:
    """Per task, whether its trials rule out flakiness above ``cap`` at ``confidence``.

    Notes
    -----
    Flakiness 4p(1 − p) exceeds the cap exactly when p lies in (p₁, p₂)
    (:func:`flakiness_cap_band`). A task rules that out when its two-sided
    Clopper-Pearson interval for p (Clopper and Pearson, Biometrika 26(4):404-413, 1934;
    :func:`~flaketui.stats.estimators.clopper_pearson`) at ``confidence`` lies in [0, p₁] or in [p₂, 1]:
    had p been inside (p₁, p₂), an interval with coverage ≥ ``confidence`` would miss it
    with probability at most 1 − confidence (in fact at most (1 − confidence)/2, as only
    one of its two one-sided bounds can exclude a given p: the test is conservative). A
    task with no trial rules out nothing; a cap of 1 or more needs no evidence.

    Examples
    --------
    >>> rules_out_flakiness(np.array([5, 68, 69]), np.array([5, 68, 69]), 0.2).tolist()
    [False, False, True]
    """
    n_arr = np.asarray(n, dtype=np.int64)
    if cap >= 1:
        return np.ones(n_arr.shape, dtype=bool)
    p1, p2 = flakiness_cap_band(cap)
    ci = clopper_pearson(n_arr, np.asarray(c, dtype=np.int64), confidence)
    with np.errstate(invalid="ignore"):
        return (n_arr > 0) & ((ci.high <= p1) | (ci.low >= p2))


def clean_trials_needed(n: int, c: int, cap: float, confidence: float = CONFIDENCE,
                        limit: int = 10**9) -> int | None:
    """The fewest more trials, all passing (all failing when p̂ < 0.5), after which a task's
    (n, c) would rule out flakiness above ``cap`` (:func:`rules_out_flakiness`); None when no
    number up to ``limit`` would (a cap of 0 asks for an interval of one point).

    The Clopper-Pearson lower bound of (n + m, c + m) rises with m (and the upper bound of
    (n + m, c) falls), so the fewest m is found by doubling, then bisection.

    Examples
    --------
    >>> clean_trials_needed(5, 5, 0.2)  # 69 straight passes: (0.025)^(1/69) ≥ p₂ = 0.9472
    64
    """
    if cap >= 1:
        return 0
    if cap <= 0:
        return None
    passing = n == 0 or 2 * c >= n

    def enough(m: int) -> bool:
        nn, cc = (n + m, c + m) if passing else (n + m, c)
        return bool(rules_out_flakiness(np.array([nn]), np.array([cc]), cap, confidence)[0])

    if enough(0):
        return 0
    hi = 1
    while not enough(hi):
        if hi > limit:
            return None
        hi *= 2
    lo = hi // 2  # enough(lo) is False (or lo = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi


def gate(
    stats: TaskStats,
    summary: SuiteSummary,
    min_pass_hat_k: float | None,
    max_flakiness: float | None,
    *,
    require_evidence: bool = False,
    confidence: float = CONFIDENCE,
) -> GateResult:
    """The dual CI gate: suite pass^k ≥ floor and no task's flakiness above the cap.

    A suite can clear a mean threshold while one task fails half its runs; the
    flakiness cap catches that task, the floor catches a broad decline.

    By default a task clears the cap on its point flakiness 4·p̂·(1 − p̂). With
    ``require_evidence`` it must also rule out flakiness above the cap at ``confidence``
    (:func:`rules_out_flakiness`): a task at p = 0.9 that happened to pass 5 of 5 trials
    has p̂ = 1 and point flakiness 0, but 5 trials cannot tell it from a flaky one. Such
    tasks are listed apart (``too_few_trials``), with the clean trials each would need.
    """
    reasons: list[str] = []
    phk = summary.pass_hat_k.value
    floor_failed = False
    if min_pass_hat_k is not None and np.isnan(phk):
        reasons.append(f"suite pass^{stats.k} is undefined: no task has {stats.k} non-errored trials")
        floor_failed = True
    elif min_pass_hat_k is not None and not (phk >= min_pass_hat_k):
        reasons.append(f"suite pass^{stats.k} = {phk:.3f} is below the floor {min_pass_hat_k:g}")
        floor_failed = True
    too_flaky: list[tuple[str, float]] = []
    too_few: list[tuple[str, int | None]] = []
    # A run whose every trial errored has no flakiness to hold under the cap: it fails, as an
    # undefined pass^k fails the floor, rather than passing on no evidence.
    no_outcome = max_flakiness is not None and not np.any(stats.n > 0)
    if no_outcome:
        reasons.append("no task has a non-errored trial: the flakiness cap cannot be checked")
    if max_flakiness is not None:
        point = np.nan_to_num(stats.flakiness, nan=0.0)
        over = np.flatnonzero(point > max_flakiness)
        too_flaky = sorted(
            ((stats.tasks[i], float(stats.flakiness[i])) for i in over), key=lambda t: -t[1]
        )
        if too_flaky:
            reasons.append(
                f"{len(too_flaky)} task(s) have flakiness above the cap {max_flakiness:g}: "
                + ", ".join(f"{t} ({f:.3f})" for t, f in too_flaky)
            )
        if require_evidence:
            un, uc, inv = count_pairs(stats.n, stats.passes)
            ruled_out = rules_out_flakiness(un, uc, max_flakiness, confidence)[inv]
            short = np.flatnonzero(~ruled_out & (point <= max_flakiness))
            needed: dict[tuple[int, int], int | None] = {}
            for i in short.tolist():
                pair = (int(stats.n[i]), int(stats.passes[i]))
                if pair not in needed:
                    needed[pair] = clean_trials_needed(*pair, max_flakiness, confidence)
                too_few.append((stats.tasks[i], needed[pair]))
            too_few.sort(key=lambda t: (-(t[1] if t[1] is not None else math.inf), t[0]))
            if too_few:
                reasons.append(
                    f"{len(too_few)} task(s) have too few trials to rule out flakiness above the cap "
                    f"{max_flakiness:g} at {confidence:.0%}: "
                    + ", ".join(f"{t} ({_more(m)})" for t, m in too_few)
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
        floor_failed=floor_failed,
        require_evidence=require_evidence,
        confidence=confidence,
        too_few_trials=too_few,
        no_outcome=no_outcome,
    )


def _more(m: int | None) -> str:
    """How many more clean trials a task needs, in words."""
    if m is None:
        return "no number of clean trials would do"
    return f"{m} more clean trial{'s' if m != 1 else ''} needed"
