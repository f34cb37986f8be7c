"""The primary test of "run B differs from run A": a permutation test within each task.

Under "no difference" a task's n_A + n_B trials are exchangeable (the same agent on the
same task, whichever run it was in), so given the task's total passes s, run A's passes
are hypergeometric: a = c_A ~ Hypergeometric(N = n_A + n_B, s, n_A), whatever the trial
counts are. The statistic is the sum over tasks of p̂_B − p̂_A (the mean difference the
comparison reports, times the number of tasks), and its null law is the law of that sum
when every task's a is drawn anew. The test keeps its size with unequal trial counts
(one trial of A against ten of B), where the sign test does not: with n_A ≠ n_B a rise
of p̂ and a fall are not equally likely under the null.

Conditioning on each task's pass total also makes the test valid when tasks share a
cluster: the null law never uses the tasks' own pass rates, only the exchangeability of
trials within a task. Pure numpy: no scipy import.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from flaketui.stats.arrays import Floats, Ints

NAME = "within-task permutation test"
"""How outputs name the test."""

EXACT_MAX_WORK = 1_000_000
"""The null law is convolved exactly while the products formed (support × task's support) stay below this many."""

EXACT_MAX_TASKS = 1_000
"""Past this many informative tasks the exact law is not tried (its support alone would pass the budget)."""

RESAMPLES = 10_000
"""Monte-Carlo draws of every task's a when the exact law is too large; p's SE ≤ 0.0022 near 0.05."""

MONTE_CARLO_MAX_DRAWS = 2_000_000
"""Past this many hypergeometric draws (resamples × tasks) the normal limit is used instead."""

NORMAL_MAX_SHARE = 0.05
"""The normal limit is used only when no task carries more than this share of the null variance."""

SEED = 20_261_201
"""Fixed seed: the same comparison gives the same p-value every time."""


@dataclass(frozen=True)
class StratifiedTest:
    """Two-sided within-task permutation test of Σ (p̂_B − p̂_A)."""

    statistic: float
    """Σ over informative tasks of p̂_B − p̂_A."""
    pvalue: float
    tasks: int
    """Tasks whose pass total leaves A's passes free (0 < s < n_A + n_B, both runs with a trial)."""
    method: str
    """``exact`` (the law convolved), ``monte-carlo`` (``resamples`` draws) or ``normal``."""
    resamples: int = 0


def _log_factorials(top: int) -> Floats:
    return np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, top + 1, dtype=np.float64)))])


def _hypergeometric_pmf(lf: Floats, total: int, good: int, draws: int) -> tuple[Ints,
                                                                                          Floats]:
    """Support and pmf of Hypergeometric(total, good, draws), from log factorials."""
    lo, hi = max(0, draws - (total - good)), min(good, draws)
    x = np.arange(lo, hi + 1)
    log_p = (lf[good] - lf[x] - lf[good - x] + lf[total - good] - lf[draws - x] - lf[total - good - draws + x]
             - (lf[total] - lf[draws] - lf[total - draws]))
    p = np.exp(log_p)
    return x, p / p.sum()


def within_task_test(passes_a: NDArray[np.integer], n_a: NDArray[np.integer], passes_b: NDArray[np.integer],
                     n_b: NDArray[np.integer], *, swapped: bool = False, resamples: int = RESAMPLES, seed: int = SEED,
                     exact_max_work: int = EXACT_MAX_WORK,
                     monte_carlo_max_draws: int = MONTE_CARLO_MAX_DRAWS) -> StratifiedTest:
    """The within-task (stratified) permutation test of the summed p̂ differences.

    Parameters
    ----------
    passes_a, n_a, passes_b, n_b : ndarray
        Per common task, A's and B's passes and non-errored trials. Tasks without a
        trial in either run carry no evidence and are left out.
    swapped : bool
        Compute in the other orientation (B as A) and negate the statistic: a caller that
        orders the two runs the same way whichever it was given as A (by name) gets the
        same p-value after a swap, Monte-Carlo draws included. The tasks are put in one
        canonical order for the same reason.

    Notes
    -----
    Per task, with w = 1/n_A + 1/n_B, p̂_B − p̂_A = s/n_B − w·a, and under the null
    E[a] = n_A·s/N, so each task's difference has mean 0 and the sum T has mean 0. The
    two-sided p-value is P(|T*| ≥ |T|) under the null law of T* (the conditional,
    Fisher-style randomisation test of a stratified design: Mantel and Haenszel 1959
    condition the same way; Good 2005, ch. 3; Rosenbaum 2002, ch. 2). The law is a sum of
    independent discrete laws; it is convolved exactly while its support stays small (with
    equal trial counts across tasks it lies on a lattice and stays small), else estimated
    from ``resamples`` draws of every task's a with a fixed seed, p = (1 + hits)/(1 + R)
    (Phipson and Smyth 2010), else — when the draws would exceed ``monte_carlo_max_draws``
    and no task carries more than 5% of the variance — read from its normal limit with the
    exact variance Σ w²·Var(a), Var(a) = n_A·(s/N)·(1 − s/N)·(N − n_A)/(N − 1) (Lindeberg), with
    half a lattice step of continuity correction when every task has the same w.
    With one trial per task in both runs it is the exact McNemar test.

    References
    ----------
    .. [1] N. Mantel and W. Haenszel, "Statistical aspects of the analysis of data from
       retrospective studies of disease", J. Natl. Cancer Inst. 22(4):719-748, 1959.
    .. [2] P. I. Good, *Permutation, Parametric, and Bootstrap Tests of Hypotheses*,
       3rd ed., Springer, 2005.
    .. [3] P. R. Rosenbaum, *Observational Studies*, 2nd ed., Springer, 2002, chapter 2.
    .. [4] B. Phipson and G. K. Smyth, "Permutation P-values Should Never Be Zero",
       Stat. Appl. Genet. Mol. Biol. 9(1), 2010.

    Examples
    --------
    One trial each, 7 tasks fixed and none broken: McNemar's exact p = 2/2^7.

    >>> ones = np.ones(7, dtype=np.int64)
    >>> within_task_test(0 * ones, ones, ones, ones).pvalue
    0.015625
    """
    ca, na = np.asarray(passes_a, dtype=np.int64), np.asarray(n_a, dtype=np.int64)
    cb, nb = np.asarray(passes_b, dtype=np.int64), np.asarray(n_b, dtype=np.int64)
    if swapped:
        test = within_task_test(cb, nb, ca, na, resamples=resamples, seed=seed, exact_max_work=exact_max_work,
                                monte_carlo_max_draws=monte_carlo_max_draws)
        return StratifiedTest(-test.statistic, test.pvalue, test.tasks, test.method, test.resamples)
    order = np.lexsort((cb, ca, nb, na))
    ca, na, cb, nb = ca[order], na[order], cb[order], nb[order]
    total, s = na + nb, ca + cb
    keep = (na > 0) & (nb > 0) & (s > 0) & (s < total)
    ca, na, nb, total, s = ca[keep], na[keep], nb[keep], total[keep], s[keep]
    m = int(ca.size)
    if m == 0:
        return StratifiedTest(0.0, 1.0, 0, "exact")
    w = 1.0 / na + 1.0 / nb
    mean_a = na * s / total
    observed = float(np.sum(w * (mean_a - ca)))  # Σ (p̂_B − p̂_A): s/n_B − w·a = w·(E[a] − a)
    # Sums equal in exact arithmetic may differ in the last bits: count them as ties.
    threshold = abs(observed) - 1e-9 * max(1.0, abs(observed))
    exact = _exact_pvalue(na, total, s, threshold, exact_max_work) if m <= EXACT_MAX_TASKS else None
    if exact is not None:
        return StratifiedTest(observed, exact, m, "exact")
    if resamples * m <= monte_carlo_max_draws:
        return StratifiedTest(observed, _monte_carlo_pvalue(na, total, s, w, mean_a, threshold, resamples, seed),
                              m, "monte-carlo", resamples)
    var = w**2 * na * (s / total) * (1 - s / total) * (total - na) / (total - 1)
    if float(var.max()) <= NORMAL_MAX_SHARE * float(var.sum()):
        # Equal trial counts put T on a lattice of step w: half a step of continuity correction.
        step = float(w[0]) if bool(np.all(w == w[0])) else 0.0
        z = max(0.0, abs(observed) - step / 2) / math.sqrt(float(var.sum()))
        return StratifiedTest(observed, math.erfc(z / math.sqrt(2)), m, "normal")
    draws = max(1000, monte_carlo_max_draws // m)
    return StratifiedTest(observed, _monte_carlo_pvalue(na, total, s, w, mean_a, threshold, draws, seed),
                          m, "monte-carlo", draws)


def _exact_pvalue(na: Ints, total: Ints, s: Ints, threshold: float,
                  max_work: int) -> float | None:
    """P(|T*| ≥ threshold) by convolving the tasks' laws, or None once the products formed pass ``max_work``."""
    lf = _log_factorials(int(total.max()))
    values = np.zeros(1)
    probs = np.ones(1)
    keys, counts = np.unique(np.stack([na, total, s], axis=1), axis=0, return_counts=True)
    for (n1, big, good), times in zip(keys.tolist(), counts.tolist(), strict=True):
        x, p = _hypergeometric_pmf(lf, big, good, n1)
        weight = 1.0 / n1 + 1.0 / (big - n1)
        part_v, part_p = weight * (n1 * good / big - x), p
        for _ in range(times):
            max_work -= values.size * part_v.size
            if max_work < 0:
                return None
            values, probs = _convolve(values, probs, part_v, part_p)
    return float(min(1.0, probs[np.abs(values) >= threshold].sum()))


def _convolve(v1: Floats, p1: Floats, v2: Floats,
              p2: Floats) -> tuple[Floats, Floats]:
    """The law of the sum of two independent discrete laws, equal values (to 1e-9) merged."""
    v = (v1[:, None] + v2[None, :]).ravel()
    p = (p1[:, None] * p2[None, :]).ravel()
    key = np.round(v * 1e9).astype(np.int64)
    uniq, inverse = np.unique(key, return_inverse=True)
    return uniq / 1e9, np.bincount(inverse.ravel(), weights=p, minlength=uniq.size)


def _monte_carlo_pvalue(na: Ints, total: Ints, s: Ints,
                        w: Floats, mean_a: Floats, threshold: float,
                        resamples: int, seed: int) -> float:
    """(1 + hits)/(1 + R): R draws of every task's a, hits where |Σ w·(E[a] − a)| ≥ threshold."""
    rng = np.random.default_rng(seed)
    centre = float(np.sum(w * mean_a))
    chunk = max(1, 2_000_000 // na.size)
    hits = done = 0
    while done < resamples:
        rows = min(chunk, resamples - done)
        a = rng.hypergeometric(s, total - s, na, size=(rows, na.size))
        sums = centre - a @ w
        hits += int(np.sum(np.abs(sums) >= threshold))
        done += rows
    return (1 + hits) / (1 + resamples)
