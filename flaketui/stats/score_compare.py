"""Run B against run A by graded score: the within-task permutation test of
:mod:`flaketui.stats.stratified` applied to the trials' scores instead of their passes.

Under "no difference" a task's n_A + n_B trials are exchangeable (the same agent on the same
task, whichever run it was in), so every split of the task's pooled scores into n_A for A
and n_B for B is equally likely, whatever the trial counts. The statistic is the sum over
tasks of mean_B − mean_A (the mean difference reported, times the number of tasks); its
null law is the law of that sum when every task's split is drawn anew. Exact (every split
enumerated, the tasks' laws convolved) while small, else seeded Monte Carlo. Each task also
gets its own permutation p-value, adjusted by Holm over Tarone's family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from flaketui.model import RunOutcomes
from flaketui.stats.arrays import Floats, Ints
from flaketui.stats.estimators import CONFIDENCE
from flaketui.stats.pertask import holm_over_family
from flaketui.stats.scores import EPS, counted_scores, is_graded, score_range
from flaketui.stats.stratified import EXACT_MAX_WORK, RESAMPLES, SEED, StratifiedTest, _convolve
from flaketui.stats.suite import MeanEstimate, mean_estimate
from flaketui.stats.verdict import Evidence, short_verdict_text, verdict_text

SPLITS_MAX = 50_000
"""A task's splits are enumerated while C(n_A + n_B, n_A) stays below this (10 trials against 10:
184,756 splits are drawn instead); else its law is sampled."""

STATISTIC = "mean over tasks of mean_score_B - mean_score_A"
"""What the score test's statistic is, in the JSON ``primary_test``."""


@dataclass(frozen=True)
class ScoreComparison:
    """Run B against run A by mean score over the tasks both ran (with a counted score in each)."""

    run_a: str
    run_b: str
    tasks: list[str]
    mean_a: Floats
    mean_b: Floats
    n_a: Ints
    n_b: Ints
    """Counted scores per task and run (:func:`~flaketui.stats.scores.counted_scores`)."""
    mean_diff: MeanEstimate
    """Mean over tasks of mean_B − mean_A, with pass@1's (clustered) interval."""
    primary: StratifiedTest
    p_value: Floats
    """Each task's two-sided permutation p-value (NaN: not tested)."""
    p_adjusted: Floats
    """Holm over Tarone's family (1 outside it)."""
    alpha: float

    @property
    def delta(self) -> Floats:
        """mean_B − mean_A per task."""
        return self.mean_b - self.mean_a

    @property
    def moved(self) -> list[str]:
        """Tasks whose change of mean score is significant after Holm at ``alpha``."""
        return [t for t, p in zip(self.tasks, self.p_adjusted.tolist(), strict=True) if p < self.alpha]


def _task_values(o: RunOutcomes) -> dict[str, Floats]:
    """Each task's counted scores (NaN left out)."""
    assert o.trial_scores is not None and o.trial_errored is not None
    x = counted_scores(o.trial_scores, o.trial_errored, o.errored_as)
    return {t: (v := x[o.bounds[i]:o.bounds[i + 1]])[~np.isnan(v)] for i, t in enumerate(o.tasks)}


def graded_pair(a: RunOutcomes, b: RunOutcomes) -> bool:
    """Whether two runs can be compared by score: both have scores and one of them partial
    credit (the default of ``compare --by``)."""
    have = a.trial_scores is not None and b.trial_scores is not None
    return have and bool(np.isfinite(a.trial_scores).any() and np.isfinite(b.trial_scores).any()) and (
        is_graded(a.trial_scores) or is_graded(b.trial_scores))


def _split_law(values: Floats, n_a: int) -> tuple[Floats, Floats] | None:
    """The null law of mean_B − mean_A over every split of ``values`` (support, probabilities),
    or None when the splits are too many to list."""
    big = values.size
    if math.comb(big, n_a) > SPLITS_MAX:
        return None
    idx = np.array(list(combinations(range(big), n_a)), dtype=np.intp).reshape(-1, n_a)
    s_a = values[idx].sum(axis=1)
    d = (values.sum() - s_a) / (big - n_a) - s_a / n_a
    key, counts = np.unique(np.round(d * 1e9).astype(np.int64), return_counts=True)
    return key / 1e9, counts / counts.sum()


def _sampled(values: Floats, n_a: int, draws: int, rng: np.random.Generator) -> Floats:
    """``draws`` random splits' mean_B − mean_A."""
    s_a = rng.permuted(np.broadcast_to(values, (draws, values.size)), axis=1)[:, :n_a].sum(axis=1)
    return (values.sum() - s_a) / (values.size - n_a) - s_a / n_a


def _tie(x: float) -> float:
    """|x| less a hair: sums equal in exact arithmetic may differ in the last bits."""
    return abs(x) - 1e-9 * max(1.0, abs(x))


def within_task_score_test(a: list[Floats], b: list[Floats], *,
                           resamples: int = RESAMPLES, seed: int = SEED,
                           exact_max_work: int = EXACT_MAX_WORK) -> tuple[StratifiedTest, Floats,
                                                                          Floats]:
    """The within-task permutation test of Σ (mean_B − mean_A), and each task's own p-value.

    Parameters
    ----------
    a, b : list of ndarray
        Per task, the scores of run A and of run B (a task with none in a run is not tested).

    Returns
    -------
    (StratifiedTest, ndarray, ndarray)
        The suite test (over informative tasks: a score in each run and pooled scores not all
        equal), each task's two-sided p-value P(|D*| ≥ |d|) (NaN: not tested) and the smallest
        p-value its pooled scores allow (for Tarone's family).

    Notes
    -----
    The randomisation test of a stratified design (Fisher 1935; Good [1]_, ch. 3; Rosenbaum
    [2]_, ch. 2), as :func:`~flaketui.stats.stratified.within_task_test` does for passes: each
    task's null law lists its C(n_A + n_B, n_A) equally likely splits (exact while fewer than
    :data:`SPLITS_MAX`), and the laws are convolved while the products formed stay below
    ``exact_max_work``; otherwise ``resamples`` draws of every task's split with a fixed seed,
    p = (1 + hits)/(1 + R) (Phipson and Smyth [3]_). With 0/1 scores it is the pass test.

    References
    ----------
    .. [1] P. I. Good, *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, 3rd ed.,
       Springer, 2005.
    .. [2] P. R. Rosenbaum, *Observational Studies*, 2nd ed., Springer, 2002.
    .. [3] B. Phipson and G. K. Smyth, "Permutation P-values Should Never Be Zero",
       Stat. Appl. Genet. Mol. Biol. 9(1), 2010.
    """
    rng = np.random.default_rng(seed)
    p_task = np.full(len(a), np.nan)
    p_min = np.full(len(a), np.nan)
    laws: list[tuple[Floats, Floats] | None] = []
    pooled: list[tuple[Floats, int]] = []
    observed = 0.0
    for i, (xa, xb) in enumerate(zip(a, b, strict=True)):
        if not xa.size or not xb.size:
            continue
        values = np.concatenate([xa, xb])
        if float(values.max() - values.min()) <= EPS:
            p_task[i], p_min[i] = 1.0, 1.0
            continue
        d = float(xb.mean() - xa.mean())
        observed += d
        law = _split_law(values, xa.size)
        if law is None:
            draws = _sampled(values, xa.size, resamples, rng)
            p_task[i] = (1 + int(np.sum(np.abs(draws) >= _tie(d)))) / (1 + resamples)
            p_min[i] = 1 / (1 + resamples)
        else:
            support, prob = law
            p_task[i] = float(min(1.0, prob[np.abs(support) >= _tie(d)].sum()))
            p_min[i] = float(prob[np.abs(support) >= _tie(float(np.abs(support).max()))].sum())
        laws.append(law)
        pooled.append((values, xa.size))
    m = len(pooled)
    if m == 0:
        return StratifiedTest(0.0, 1.0, 0, "exact"), p_task, p_min
    threshold = _tie(observed)
    if all(law is not None for law in laws):
        values_, probs = np.zeros(1), np.ones(1)
        work = exact_max_work
        for law in laws:
            assert law is not None
            work -= values_.size * law[0].size
            if work < 0:
                break
            values_, probs = _convolve(values_, probs, *law)
        else:
            return StratifiedTest(observed, float(min(1.0, probs[np.abs(values_) >= threshold].sum())), m,
                                  "exact"), p_task, p_min
    sums = np.zeros(resamples)
    for values, n_a in pooled:
        sums += _sampled(values, n_a, resamples, rng)
    p = (1 + int(np.sum(np.abs(sums) >= threshold))) / (1 + resamples)
    return StratifiedTest(observed, p, m, "monte-carlo", resamples), p_task, p_min


def compare_scores(a: RunOutcomes, b: RunOutcomes, alpha: float = 0.05,
                   confidence: float = CONFIDENCE) -> ScoreComparison:
    """Run B against run A by mean score over their common tasks: the within-task permutation
    test (primary), each task's test with Holm over Tarone's family, and the mean difference
    of task mean scores with the interval of :func:`~flaketui.stats.suite.mean_estimate`
    (clustered when tasks share a group, as pass@1's)."""
    va, vb = _task_values(a), _task_values(b)
    index_b = {t: i for i, t in enumerate(b.tasks)}
    common = [t for t in a.tasks if t in index_b]
    xa, xb = [va[t] for t in common], [vb[t] for t in common]
    n_a = np.array([x.size for x in xa], dtype=np.int64)
    n_b = np.array([x.size for x in xb], dtype=np.int64)
    with np.errstate(invalid="ignore"):
        mean_a = np.array([x.mean() if x.size else np.nan for x in xa])
        mean_b = np.array([x.mean() if x.size else np.nan for x in xb])
    # One canonical order of tasks and runs (by name), so that A against B and B against A draw
    # the same Monte-Carlo splits: the same p-value after a swap, as the pass test gives.
    order = sorted(range(len(common)), key=common.__getitem__)
    first, second = ([xb[i] for i in order], [xa[i] for i in order]) if b.run < a.run else \
        ([xa[i] for i in order], [xb[i] for i in order])
    test, p_sorted, min_sorted = within_task_score_test(first, second)
    if b.run < a.run:
        test = StratifiedTest(-test.statistic, test.pvalue, test.tasks, test.method, test.resamples)
    p_task, p_min = np.empty(len(common)), np.empty(len(common))
    p_task[order], p_min[order] = p_sorted, min_sorted
    p_adj, _ = holm_over_family(p_task, p_min, ~np.isnan(p_task), alpha)
    group_of = dict(zip(a.tasks, a.groups, strict=True))
    groups = [group_of[t] for t in common] if any(g is not None for g in a.groups) else None
    lo, hi = score_range(np.concatenate([a.trial_scores, b.trial_scores]))  # type: ignore[list-item]
    est = mean_estimate(mean_b - mean_a, groups, confidence, bounds=(lo - hi, hi - lo), ci_scale="linear")
    return ScoreComparison(a.run, b.run, common, mean_a, mean_b, n_a, n_b, est, test, p_task, p_adj, alpha)


def score_evidence(sc: ScoreComparison) -> Evidence:
    """The verdict's figures for a comparison by score: the score test primary; the sign test of
    the tasks whose mean score rose against those whose fell and the sign-flip test of the
    differences secondary (valid with equal trials)."""
    from flaketui.stats.paired import sign_test
    from flaketui.stats.permutation import paired_permutation_test

    d = sc.delta
    both = ~np.isnan(d)
    up, down = int(np.sum(d[both] > EPS)), int(np.sum(d[both] < -EPS))
    equal = bool(np.all(sc.n_a[both] == sc.n_b[both]))
    return Evidence(run_a=sc.run_a, run_b=sc.run_b, tasks=len(sc.tasks), alpha=sc.alpha, fixed=up, broken=down,
                    sign_p=sign_test(up, down).pvalue, mean_diff=sc.mean_diff.value, ci=sc.mean_diff.ci,
                    permutation_p=paired_permutation_test(d[both]).pvalue, primary_p=sc.primary.pvalue,
                    equal_trials=equal)


UNCHANGED = "no task changed its mean score"
"""The verdict by score when no task's mean score moved (the pass verdict's words say pass rate)."""


def score_verdict(sc: ScoreComparison, why: str) -> str:
    """``by mean score (WHY): B is better at 5%: …`` — the verdict of a comparison by score."""
    ev = score_evidence(sc)
    return f"by mean score ({why}): {UNCHANGED if ev.tasks and ev.fixed + ev.broken == 0 else verdict_text(ev)}"


def score_short_verdict(sc: ScoreComparison) -> str:
    """``by mean score: B is better at 5% (…)`` — the verdict without its figures (a pull-request
    comment's first line)."""
    ev = score_evidence(sc)
    return f"by mean score: {UNCHANGED if ev.tasks and ev.fixed + ev.broken == 0 else short_verdict_text(ev)}"
