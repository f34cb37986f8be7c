#!/usr/bin/env python3
"""Calibration of every test and interval flaketui prints: coverage, type-I error and power.

    .venv/bin/python benchmarks/bench_calibration.py                          # the full run, ~15-30 min on 2 cores
    .venv/bin/python benchmarks/bench_calibration.py --quick                  # a smaller run, a few minutes
    .venv/bin/python benchmarks/bench_calibration.py --family "suite intervals" --docs   # one family's section
    .venv/bin/python benchmarks/bench_calibration.py --write docs/calibration.md
    .venv/bin/python benchmarks/bench_calibration.py --docs                   # the same page, docs/calibration.md

Each figure is measured through the Python API (not the CLI), exactly where it is cheap and by
Monte Carlo otherwise, with a fixed seed (``--seed``; each cell draws from its own stream, seeded
by ``--seed`` and the cell's name, so the figures do not depend on ``--workers``):

1. ``compare``'s verdict (``evidence(compare_runs(...)).winner``, the within-task permutation test):
   the rate a winner is named on null pairs (both runs share each task's true p, drawn from
   Uniform(0, 1) or Beta(8, 1)), for 1 vs 10, 4 vs 16, 5 vs 5 and 1 vs 1 trials, 10, 30 and 50
   tasks; beside it the old rule (the sign test alone, ``cmp.test.pvalue < α``) and the coverage
   of the mean-difference interval ``cmp.mean_diff.ci``. Power: B's true p is A's + 0.2 (clipped
   at 1), 50 tasks. Monte Carlo, ``--null-reps`` / ``--reps`` pairs per cell.
2. ``--baseline`` (``against_baseline``, Holm across the comparisons): the family-wise rate of any
   winner among 3 null runs against a baseline, 50 tasks. Monte Carlo.
3. Per-task flips (``per_task_tests``: Fisher, Holm over Tarone's family): the family-wise rate of
   at least one flipped task under the null, 50 tasks. Monte Carlo.
4. The per-task Wilson interval for p and the pass^k interval (``method="exact"`` and
   ``"bootstrap"``): exact coverage, summed over c ~ Binomial(n, p), at fixed p and the minimum
   over a grid of ``--grid`` values of p.
5. Suite intervals (``mean_estimate``: t(T − 1) unclustered, CR2 on the logit scale clustered, with
   the linear CR2, the wild cluster bootstrap and CR1 beside it) of pass@1
   (mean p̂) and pass^4 (mean of the unbiased per-task pass^4), 8 trials a task. The truth is the
   superpopulation mean (E[p], E[p^4] over the generating distribution, computed exactly): the
   tasks are a sample and the interval is over tasks. Monte Carlo, ``--suite-reps`` suites a cell.
6. ``plan``'s decisions (``decide``, a confidence sequence) under peeking: the chance a task that
   fails 10.5% of the time is called stable-pass, looking every 5 trials up to 200 (exact: the
   binomial distribution of the passes propagated from look to look and absorbed at a decision,
   as ``benchmarks/bench_peeking.py`` does), and at one look; the fixed-n Wilson rule beside it.
7. ``gate --max-flakiness 0.2`` on a task with p = 0.9 (flakiness 0.36): the chance it passes the
   cap with 5, 10, 20 (and 100) trials, with and without ``require_evidence``. Exact.
8. ``plan``'s power (``tasks_paired_means``): at the planned tasks T and trials K, the simulated
   power of the primary test (and of the paired t interval the plan was derived for). Monte Carlo.

``--write PATH`` writes the Markdown page (docs/calibration.md): one table per family and a
paragraph for every figure more than 1 point on the wrong side of its nominal value (coverage
below 94% for 95%, type-I error above 6% at α = 5%, power short of its target).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
if str(ROOT.parent) not in sys.path:
    sys.path.insert(0, str(ROOT.parent))  # this checkout's flaketui, not an installed one

from flaketui.model import RunOutcomes  # noqa: E402

ALPHA = 0.05
CONFIDENCE = 0.95
PRIORS = {"Uniform(0, 1)": (1.0, 1.0), "Beta(8, 1)": (8.0, 1.0)}
"""Per-task true pass rates of the comparison cells (Beta(a, b); Beta(8, 1) puts most tasks near 1)."""
DESIGNS = ((1, 10), (4, 16), (5, 5), (1, 1))
"""Trials per task in run A and run B (equal across tasks within a run)."""
SUITE_TRIALS = 8
SUITE_K = 4
CLUSTER_SIZE = 10
CLUSTER_PRIOR = (6.0, 4.0)
"""Per-cluster mean pass rate ~ Beta(6, 4); per task p ~ Beta(κμ, κ(1 − μ)) with κ = CONCENTRATION."""
CONCENTRATION = 10.0
MIXTURE = ((0.7, 20.0, 1.0), (0.2, 1.0, 20.0), (0.1, 1.0, 1.0))
"""A suite as users' look: 70% of tasks p ~ Beta(20, 1) (nearly always pass), 20% Beta(1, 20), 10% uniform."""
LOPSIDED = ((40, 2, 2, 2, 2, 2, 2, 2), (47, 1, 1, 1, 1, 1, 1, 1), (7, 7, 7, 7, 7, 7, 7, 7))
"""Cluster sizes of the lopsided suites (one large cluster beside small ones) and a balanced one of 8."""
HARD_AND_EASY = ((2.0, 6.0), (8.0, 1.0))
"""Cluster means of a hard suite (mean pass rate 0.25) and an easy one (0.89), 10 clusters of 10 tasks each."""


@dataclass(frozen=True)
class Row:
    """One measured figure."""

    family: str
    situation: str
    figure: str
    measured: float
    nominal: float | None
    kind: str
    """``coverage`` (at least nominal), ``type1`` (at most nominal), ``power`` (at least nominal),
    ``plan`` (nominal ± 1 point), ``bias`` (|measured| at most nominal, an absolute figure) or ``info``
    (no claim: a contrast)."""
    se: float | None = None
    """Monte-Carlo standard error; None for an exact figure."""
    reps: int = 0
    why: str = ""
    """Why it misses, when it does (the page prints it under the family's table)."""

    @property
    def verdict(self) -> str:
        """``yes``, ``yes (conservative)``, ``no`` or ``—`` (no claim)."""
        if self.nominal is None or self.kind == "info":
            return "—"
        if self.kind == "bias":
            return "yes" if abs(self.measured) <= self.nominal else "no"
        gap = self.measured - self.nominal
        if self.kind in ("coverage", "power"):
            ok, safe = gap >= -0.01, gap > 0.01
        elif self.kind == "type1":
            ok, safe = gap <= 0.01, gap < -0.01
        else:  # plan: both ways
            return "yes" if abs(gap) <= 0.01 else "no"
        if not ok:
            return "no"
        return "yes (conservative)" if safe and self.kind != "power" else "yes"

    @property
    def missed(self) -> bool:
        return self.verdict == "no"

    def measured_text(self) -> str:
        if self.kind == "bias" or (self.kind == "info" and self.figure.startswith("bias")):
            return f"{self.measured:+.4f} ± {self.se or 0:.4f} (MC, {self.reps:,})"
        if self.se is None:
            return f"{self.measured:.2%} (exact)"
        return f"{self.measured:.2%} ± {self.se:.2%} (MC, {self.reps:,})"

    def nominal_text(self) -> str:
        if self.nominal is None:
            return "no claim"
        if self.kind == "bias":
            return f"|bias| ≤ {self.nominal:g}"
        if self.kind == "power" and self.nominal == 1.0:
            return "near 100% (target)"
        sign = {"coverage": "≥ ", "type1": "≤ ", "power": "≥ ", "plan": "", "info": "", "bias": ""}[self.kind]
        whole = abs(self.nominal * 100 - round(self.nominal * 100)) < 1e-9
        return f"{sign}{self.nominal:.0%}" if whole else f"{sign}{self.nominal:.1%}"


def rng_for(seed: int, key: str) -> np.random.Generator:
    """A stream of its own for each cell, from the seed and the cell's name."""
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


def mc_se(rate: float, reps: int) -> float:
    return math.sqrt(max(rate * (1 - rate), 0.0) / max(reps, 1))


def run_outcomes(name: str, n: np.ndarray, c: np.ndarray, groups: list[str | None] | None = None) -> RunOutcomes:
    """A run's outcomes from trial and pass counts, as tests/unit/test_verdict.py's ``run()`` builds them."""
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    return RunOutcomes(name, [f"t{i}" for i in range(n.size)], n, c, np.zeros_like(n),
                       groups if groups is not None else [None] * n.size,
                       np.arange(int(n.sum())), np.r_[0, np.cumsum(n)])


def beta_mean_power(a: float, b: float, k: int) -> float:
    """E[p^k] for p ~ Beta(a, b): Π_{j<k} (a + j)/(a + b + j)."""
    return math.prod((a + j) / (a + b + j) for j in range(k))


def clipped_gain(a: float, b: float, gain: float) -> float:
    """E[min(p + gain, 1) − p] for p ~ Beta(a, b), by quadrature."""
    from scipy import integrate, stats

    value, _ = integrate.quad(lambda p: min(gain, 1 - p) * stats.beta.pdf(p, a, b), 0, 1, points=[1 - gain])
    return float(value)


# --- 1. compare: the verdict, the old rule and the mean-difference interval ---------------------


def comparison_cell(prior: str, n_a: int, n_b: int, tasks: int, gain: float, reps: int, seed: int) -> list[Row]:
    """Null (gain = 0) or alternative (B's p = min(A's + gain, 1)) pairs of runs."""
    from flaketui.stats import compare_runs, task_stats
    from flaketui.stats.verdict import evidence

    a, b = PRIORS[prior]
    key = f"compare/{prior}/{n_a}v{n_b}/{tasks}/{gain}"
    rng = rng_for(seed, key)
    na, nb = np.full(tasks, n_a), np.full(tasks, n_b)
    pop_truth = clipped_gain(a, b, gain) if gain else 0.0
    new = old = cover_pop = cover_draw = b_named = 0
    for _ in range(reps):
        p_a = rng.beta(a, b, tasks)
        p_b = np.minimum(p_a + gain, 1.0)
        ca, cb = rng.binomial(n_a, p_a), rng.binomial(n_b, p_b)
        cmp = compare_runs(task_stats(run_outcomes("A", na, ca), 1), task_stats(run_outcomes("B", nb, cb), 1))
        ev = evidence(cmp, ALPHA)
        new += ev.winner != 0
        b_named += ev.winner > 0
        old += cmp.test.pvalue < ALPHA
        lo, hi = cmp.mean_diff.ci
        draw_truth = float(np.mean(p_b - p_a))
        cover_draw += bool(lo - 1e-12 <= draw_truth <= hi + 1e-12)
        cover_pop += bool(lo - 1e-12 <= pop_truth <= hi + 1e-12)
    situation = f"{prior}, {n_a} vs {n_b} trials, {tasks} tasks"
    fam = "compare"
    rows = []

    def rate(x: int) -> tuple[float, float]:
        r = x / reps
        return r, mc_se(r, reps)

    if gain == 0:
        r, s = rate(new)
        rows.append(Row(fam, situation, "winner named under the null (primary test)", r, ALPHA, "type1", s, reps,
                        why=_why_null_winner(r)))
        r, s = rate(old)
        rows.append(Row(fam, situation, "old rule: sign test p < α under the null", r, ALPHA, "type1", s, reps,
                        why=_why_old_rule(n_a, n_b, prior, r)))
        r, s = rate(cover_pop)
        rows.append(Row(fam, situation, "mean-difference 95% CI covers 0", r, CONFIDENCE, "coverage", s, reps,
                        why=_why_diff_ci(n_a, n_b, prior, tasks, r, null=True)))
    else:
        truth = pop_truth
        r, s = rate(b_named)
        rows.append(Row(fam, f"{situation}, B = A + {gain:g}", f"power: B named winner (mean gain {truth:.3f})",
                        r, 1.0, "power", s, reps, why=_why_power(n_a, n_b, prior, truth, r)))
        r, s = rate(old)
        rows.append(Row(fam, f"{situation}, B = A + {gain:g}", "old rule: sign test p < α", r, None, "info", s, reps))
        r, s = rate(cover_pop)
        rows.append(Row(fam, f"{situation}, B = A + {gain:g}",
                        f"mean-difference 95% CI covers E[p_B − p_A] = {truth:.3f}", r, CONFIDENCE, "coverage", s,
                        reps, why=_why_diff_ci(n_a, n_b, prior, tasks, r, null=False)))
        r, s = rate(cover_draw)
        rows.append(Row(fam, f"{situation}, B = A + {gain:g}",
                        "mean-difference 95% CI covers this draw's mean of p_B − p_A", r, CONFIDENCE, "coverage", s,
                        reps, why=_why_diff_ci(n_a, n_b, prior, tasks, r, null=False)))
    return rows


def _why_null_winner(rate: float) -> str:
    return (f"The within-task permutation test is exact given each task's pass total, so its size cannot exceed α "
            f"beyond Monte-Carlo noise; a measured {rate:.2%} this far above 5% would be a defect to investigate.")


def _why_old_rule(n_a: int, n_b: int, prior: str, rate: float) -> str:
    if n_a != n_b:
        skew = ("near 1 usually shows p̂_A = 1 and p̂_B < 1 (a 'broken' task)" if prior.startswith("Beta")
                else "changes far more often in one direction than the other")
        return (f"With {n_a} trial(s) of A against {n_b} of B a rise of p̂ and a fall are not equally likely under "
                f"the null, which the sign test assumes: p̂_A takes only {n_a + 1} values, so a task "
                f"{skew}"
                f"; the sign test then rejects {rate:.1%} of the time. This is why the verdict now rests on the "
                f"within-task test, valid whatever the trial counts.")
    return (f"With equal trials the sign test is valid and conservative; {rate:.2%} above 6% would be unexpected "
            f"(Monte-Carlo noise at most).")


def _why_diff_ci(n_a: int, n_b: int, prior: str, tasks: int, rate: float, null: bool) -> str:
    if n_a == 1 and n_b > 1:
        shape = ("p̂_A is 0 or 1, so each difference is p̂_B or p̂_B − 1: bimodal"
                 + (", and with p near 1 most tasks show a small fall (p̂_A = 1, p̂_B a little below) and a rare "
                    "task a large rise (p̂_A = 0), a skewed law" if prior.startswith("Beta") else ""))
    elif n_a == n_b == 1:
        shape = ("each difference is −1, 0 or +1, mostly 0 when p is near 1, so the rare ±1 make the law of the "
                 "mean lumpy and the sd estimate unstable")
    else:
        shape = "the differences are few-valued and skewed"
    return (f"The interval is a t interval over {tasks} per-task differences; with {n_a} vs {n_b} trials and p from "
            f"{prior} {shape}. A sample of {tasks} seldom holds the rare large values in their share, and the t "
            f"quantile does not make up for it: the interval covers {rate:.1%}.")


def _why_power(n_a: int, n_b: int, prior: str, truth: float, rate: float) -> str:
    parts = []
    if prior.startswith("Beta"):
        parts.append(f"with p from {prior} most tasks sit near 1, so adding 0.2 and clipping at 1 leaves a mean "
                     f"gain of only {truth:.3f}")
    if n_a == n_b == 1:
        parts.append("with 1 trial a task in both runs only the tasks whose two outcomes differ carry evidence "
                     "(McNemar's design)")
    elif min(n_a, n_b) == 1:
        parts.append(f"with 1 trial of A per task p̂_A is 0 or 1, and its binomial noise p(1 − p) swamps the "
                     f"{n_b} trials of B")
    reason = "; ".join(parts) if parts else "the design has too few trials for this gain at 50 tasks"
    return f"Power {rate:.1%} at 50 tasks: {reason}. This is a property of the design, not a defect of the test."


# --- 2. --baseline: Holm across comparisons ------------------------------------------------------


def baseline_cell(prior: str, n_base: int, n_other: int, tasks: int, runs: int, reps: int, seed: int) -> list[Row]:
    from flaketui.stats import task_stats
    from flaketui.stats.baseline import against_baseline
    from flaketui.stats.verdict import evidence

    a, b = PRIORS[prior]
    rng = rng_for(seed, f"baseline/{prior}/{n_base}v{n_other}/{tasks}/{runs}")
    any_winner = 0
    for _ in range(reps):
        p = rng.beta(a, b, tasks)
        stats = [task_stats(run_outcomes("base", np.full(tasks, n_base), rng.binomial(n_base, p)), 1)]
        stats += [task_stats(run_outcomes(f"r{j}", np.full(tasks, n_other), rng.binomial(n_other, p)), 1)
                  for j in range(runs)]
        res = against_baseline(stats, "base", ALPHA)
        any_winner += any(evidence(c, ALPHA, res.p_adjusted[i]).winner != 0 for i, c in enumerate(res.comparisons))
    r = any_winner / reps
    return [Row("baseline", f"{prior}, baseline {n_base} trials vs {runs} runs of {n_other}, {tasks} tasks",
                "family-wise rate of any winner under the null (Holm)", r, ALPHA, "type1", mc_se(r, reps), reps,
                why=f"Holm keeps the family-wise rate at α given valid p-values; {r:.2%} would need investigating.")]


# --- 3. per-task flips ---------------------------------------------------------------------------


def pertask_cell(prior: str, n_a: int, n_b: int, tasks: int, reps: int, seed: int) -> list[Row]:
    from flaketui.stats import compare_runs, task_stats
    from flaketui.stats.pertask import per_task_tests

    a, b = PRIORS[prior]
    rng = rng_for(seed, f"pertask/{prior}/{n_a}v{n_b}/{tasks}")
    hits = 0
    for _ in range(reps):
        p = rng.beta(a, b, tasks)
        cmp = compare_runs(task_stats(run_outcomes("A", np.full(tasks, n_a), rng.binomial(n_a, p)), 1),
                           task_stats(run_outcomes("B", np.full(tasks, n_b), rng.binomial(n_b, p)), 1))
        hits += bool(per_task_tests(cmp, ALPHA).flipped.any())
    r = hits / reps
    return [Row("per-task", f"{prior}, {n_a} vs {n_b} trials, {tasks} tasks",
                "family-wise rate of ≥ 1 task flipped under the null (Holm over Tarone's family)", r, ALPHA, "type1",
                mc_se(r, reps), reps,
                why=f"Fisher's test is valid per task and Holm over a margin-chosen family keeps the family-wise "
                    f"rate; {r:.2%} would need investigating.")]


# --- 4. per-task intervals, exact ----------------------------------------------------------------


def interval_coverage(n: int, p: np.ndarray, bounds: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
                      power: int = 1) -> np.ndarray:
    """Exact coverage at each p: Σ_c Binomial(n, p)(c) · [lo(c) ≤ p^power ≤ hi(c)]."""
    from scipy.stats import binom

    c = np.arange(n + 1)
    lo, hi = bounds(np.full(n + 1, n), c)
    theta = np.asarray(p, dtype=np.float64)[:, None] ** power
    tol = 1e-12
    covers = (lo[None, :] - tol <= theta) & (theta <= hi[None, :] + tol)
    pmf = binom.pmf(c[None, :], n, np.asarray(p)[:, None])
    return np.sum(pmf * covers, axis=1)


FIXED_P = (0.01, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.99)


def per_task_interval_rows(grid: int) -> list[Row]:
    from flaketui.stats.estimators import pass_hat_k_interval, wilson_interval

    fine = np.arange(1, grid + 1) / (grid + 1)
    rows = []

    def add(name: str, n: int, k: int, bounds: Callable, power: int, why: Callable[[float, float, float], str]
            ) -> None:
        from scipy.stats import binom

        lo, hi = bounds(np.full(n + 1, n), np.arange(n + 1))
        point = lo == hi  # outcomes whose interval is a single point

        def collapsed(p: float) -> float:
            return float(binom.pmf(np.arange(n + 1), n, p)[point].sum())

        situation = f"{name}, n = {n}" + (f", k = {k}" if k > 1 else "")
        fixed = interval_coverage(n, np.array(FIXED_P), bounds, power)
        for p, cov in zip(FIXED_P, fixed.tolist(), strict=True):
            rows.append(Row("per-task intervals", situation, f"coverage at p = {p:g}", cov, CONFIDENCE, "coverage",
                            why=why(p, cov, collapsed(p))))
        cov = interval_coverage(n, fine, bounds, power)
        worst = int(np.argmin(cov))
        at = float(fine[worst])
        rows.append(Row("per-task intervals", situation, f"minimum coverage over {grid} p in (0, 1) (at p = {at:.3f})",
                        float(cov[worst]), CONFIDENCE, "coverage", why=why(at, float(cov[worst]), collapsed(at))))

    def wilson(n_arr: np.ndarray, c_arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ci = wilson_interval(n_arr, c_arr, CONFIDENCE)
        return np.asarray(ci.low), np.asarray(ci.high)

    def passk(method: str, k: int) -> Callable:
        def f(n_arr: np.ndarray, c_arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            ci = pass_hat_k_interval(n_arr, c_arr, k, CONFIDENCE, method=method)
            return np.asarray(ci.low), np.asarray(ci.high)
        return f

    def why_wilson(n: int) -> Callable[[float, float, float], str]:
        def why(p: float, cov: float, _: float) -> str:
            where = ("near the edge, where p sits just outside the interval of the likeliest count "
                     "(the count 0 or n, whose interval does not reach it)" if min(p, 1 - p) < 0.1 else
                     "between the counts, where a few likely counts' intervals all stop just short of p")
            return (f"Wilson's interval at n = {n} covers {cov:.1%} at p = {p:.3g}. With n + 1 possible counts its "
                    f"coverage jumps up and down with p, above and below 95%; this p lies {where}, and its dips are "
                    f"deepest near 0 and 1 (Brown, Cai and DasGupta 2001, Statist. Sci. 16(2):101-133). It is the "
                    f"per-task interval for its near-nominal coverage on average over p; what needs a guarantee "
                    f"uses Clopper-Pearson, never below 95% (the gate's evidence, the pass^k interval).")
        return why

    def why_exact(n: int, k: int) -> Callable[[float, float, float], str]:
        def why(p: float, cov: float, _: float) -> str:
            return (f"Clopper-Pearson bounds to the power {k} cover at least 95% for every p; {cov:.2%} at "
                    f"p = {p:.3g} (n = {n}) would be a defect.")
        return why

    def why_boot(n: int, k: int) -> Callable[[float, float, float], str]:
        def why(p: float, cov: float, point: float) -> str:
            return (f"The percentile bootstrap at n = {n}, k = {k} covers {cov:.1%} at p = {p:.3g}. It resamples "
                    f"the task's own trials, C* ~ Binomial(n, p̂), so it cannot see past the counts it got: a task "
                    f"with few passes gets [0, 0] (C* rarely reaches {k}), one that passed every trial gets [1, 1], "
                    f"and at this p the interval is a single point with probability {point:.1%}, missing "
                    f"p^{k} = {p ** k:.3g}; in between, its percentiles of a k-th power are too narrow. The exact "
                    f"method is the default.")
        return why

    for n in (8, 20):
        add("Wilson interval for p", n, 1, wilson, 1, why_wilson(n))
    for n, k in ((8, 4), (20, 5)):
        add("pass^k interval, exact", n, k, passk("exact", k), k, why_exact(n, k))
        add("pass^k interval, bootstrap", n, k, passk("bootstrap", k), k, why_boot(n, k))
    return rows


# --- 5. suite intervals, Monte Carlo -------------------------------------------------------------


def clustered_truth(k: int, prior: tuple[float, float] = CLUSTER_PRIOR) -> float:
    """E[p^k] when μ ~ Beta(prior) and p | μ ~ Beta(κμ, κ(1 − μ)), by quadrature over μ."""
    from scipy import integrate, stats

    a, b = prior
    kappa = CONCENTRATION
    value, _ = integrate.quad(
        lambda mu: math.prod((kappa * mu + j) / (kappa + j) for j in range(k)) * stats.beta.pdf(mu, a, b), 0, 1)
    return float(value)


def suite_cell(kind: str, prior: tuple[float, float] | None, units: int, reps: int, seed: int,
               sizes: tuple[int, ...] | None = None, cluster_prior: tuple[float, float] = CLUSTER_PRIOR) -> list[Row]:
    """``kind`` = ``unclustered`` (``units`` tasks, p ~ Beta(prior)) or ``clustered`` (``units`` clusters of
    CLUSTER_SIZE tasks, or of ``sizes``). What ``summarise`` prints: below 30 unclustered tasks the
    beta-binomial posterior, else the t interval (CR2 clustered); clustered cells also measure CR1 beside it."""
    from flaketui.stats.estimators import pass_hat_k
    from flaketui.stats.suite import FEW_TASKS, mean_estimate, summarise, task_stats

    sizes_key = "" if sizes is None else "/" + "-".join(map(str, sizes))
    if cluster_prior != CLUSTER_PRIOR:  # the default cells keep their streams
        sizes_key += f"/mu{cluster_prior}"
    rng = rng_for(seed, f"suite/{kind}/{prior}/{units}{sizes_key}")
    if kind == "unclustered" and prior == "mixture":
        truth1 = sum(w * a / (a + b) for w, a, b in MIXTURE)
        truthk = sum(w * beta_mean_power(a, b, SUITE_K) for w, a, b in MIXTURE)
        tasks, groups = units, None
        situation = (f"{units} tasks, p from a mixture: 70% Beta(20, 1), 20% Beta(1, 20), 10% uniform, "
                     f"{SUITE_TRIALS} trials")
        sizes_arr = None
    elif kind == "unclustered":
        a, b = prior  # type: ignore[misc]
        truth1, truthk = a / (a + b), beta_mean_power(a, b, SUITE_K)
        tasks, groups = units, None
        situation = f"{units} tasks, p ~ Beta({a:g}, {b:g}), {SUITE_TRIALS} trials"
        sizes_arr = None
    else:
        sizes_arr = np.full(units, CLUSTER_SIZE) if sizes is None else np.asarray(sizes)
        units = int(sizes_arr.size)
        truth1, truthk = cluster_prior[0] / sum(cluster_prior), clustered_truth(SUITE_K, cluster_prior)
        tasks = int(sizes_arr.sum())
        groups = [f"g{i}" for i in np.repeat(np.arange(units), sizes_arr)]
        shape = (f"{units} clusters of {CLUSTER_SIZE} tasks" if sizes is None else
                 f"{units} clusters of {_sizes_text(sizes)} tasks")
        situation = (f"{shape}, μ ~ Beta({cluster_prior[0]:g}, {cluster_prior[1]:g}), p ~ Beta({CONCENTRATION:g}μ, "
                     f"{CONCENTRATION:g}(1 − μ)), {SUITE_TRIALS} trials")
    n = np.full(tasks, SUITE_TRIALS)
    few = groups is None and tasks < FEW_TASKS
    hit1 = hitk = cr1_1 = cr1_k = 0
    width1 = widthk = 0.0
    # Clustered contrasts: CR2 on the linear scale (the interval before the logit scale) and the wild
    # cluster bootstrap (WCR, Webb's weights) on the first WILD_REPS suites (it costs 999 draws a bound step).
    contrast = {name: [0, 0.0] for name in ("linear/1", "linear/k", "wild/1", "wild/k")}
    wild_reps = min(reps, WILD_REPS)
    weights = WEBB[rng_for(seed, f"webb/{units}{sizes_key}").integers(0, 6, size=(WILD_DRAWS, units))]
    for rep in range(reps):
        if prior == "mixture":
            which = rng.choice(len(MIXTURE), size=tasks, p=[w for w, _, _ in MIXTURE])
            shape = np.array([(a_, b_) for _, a_, b_ in MIXTURE])[which]
            p = rng.beta(shape[:, 0], shape[:, 1])
        elif groups is None:
            p = rng.beta(a, b, tasks)
        else:
            mu = np.repeat(rng.beta(*cluster_prior, units), sizes_arr)
            p = rng.beta(CONCENTRATION * mu, CONCENTRATION * (1 - mu))
        c = rng.binomial(SUITE_TRIALS, p)
        if few:
            sm = summarise(task_stats(run_outcomes("r", n, c), SUITE_K))
            e1, ek = sm.pass_at_1, sm.pass_hat_k
        else:
            e1 = mean_estimate(c / SUITE_TRIALS, groups, CONFIDENCE)
            ek = mean_estimate(pass_hat_k(n, c, SUITE_K), groups, CONFIDENCE)
        hit1 += e1.ci[0] - 1e-12 <= truth1 <= e1.ci[1] + 1e-12
        hitk += ek.ci[0] - 1e-12 <= truthk <= ek.ci[1] + 1e-12
        width1 += e1.ci[1] - e1.ci[0]
        widthk += ek.ci[1] - ek.ci[0]
        if groups is not None:
            for key, values, truth in (("1", c / SUITE_TRIALS, truth1), ("k", pass_hat_k(n, c, SUITE_K), truthk)):
                lin = mean_estimate(values, groups, CONFIDENCE, ci_scale="linear")
                contrast[f"linear/{key}"][0] += lin.ci[0] - 1e-12 <= truth <= lin.ci[1] + 1e-12
                contrast[f"linear/{key}"][1] += lin.ci[1] - lin.ci[0]
                if rep < wild_reps:
                    lo, hi = wild_cluster_interval(values, sizes_arr, weights)
                    contrast[f"wild/{key}"][0] += lo - 1e-12 <= truth <= hi + 1e-12
                    contrast[f"wild/{key}"][1] += hi - lo
            f1 = mean_estimate(c / SUITE_TRIALS, groups, CONFIDENCE, cluster_method="CR1")
            fk = mean_estimate(pass_hat_k(n, c, SUITE_K), groups, CONFIDENCE, cluster_method="CR1")
            cr1_1 += f1.ci[0] - 1e-12 <= truth1 <= f1.ci[1] + 1e-12
            cr1_k += fk.ci[0] - 1e-12 <= truthk <= fk.ci[1] + 1e-12
    rows = []
    method = ("CR2 on the logit scale + t(Bell–McCaffrey ν)" if groups else
              "t ∪ beta-binomial posterior" if few else "t(T − 1)")
    for name, hits, width, truth in (("pass@1", hit1, width1, truth1), (f"pass^{SUITE_K}", hitk, widthk, truthk)):
        r = hits / reps
        rows.append(Row("suite intervals", situation, f"suite {name} 95% CI ({method}) covers {truth:.4f} "
                        f"(mean width {width / reps:.3f})", r,
                        CONFIDENCE, "coverage", mc_se(r, reps), reps,
                        why=_why_suite(name, kind, units, prior, r, sizes, cluster_prior, truth)))
    if groups is not None:
        for key, name, truth in (("1", "pass@1", truth1), ("k", f"pass^{SUITE_K}", truthk)):
            for label, runs in (("before: CR2 + t(Bell–McCaffrey ν) on the linear scale", reps),
                                (f"contrast: wild cluster bootstrap (WCR, Webb weights, {WILD_DRAWS} draws)",
                                 wild_reps)):
                hits, width = contrast[("linear/" if label.startswith("before") else "wild/") + key]
                r = hits / runs
                rows.append(Row("suite intervals", situation, f"{label}: suite {name} 95% CI covers {truth:.4f} "
                                f"(mean width {width / runs:.3f})", r, None, "info", mc_se(r, runs), runs))
    if groups is not None and sizes is not None:
        for name, hits, truth in (("pass@1", cr1_1, truth1), (f"pass^{SUITE_K}", cr1_k, truthk)):
            r = hits / reps
            rows.append(Row("suite intervals", situation, f"old: suite {name} 95% CI (CR1 + t(G − 1)) covers "
                            f"{truth:.4f}", r, None, "info", mc_se(r, reps), reps))
    return rows


WEBB = np.array([-math.sqrt(1.5), -1.0, -math.sqrt(0.5), math.sqrt(0.5), 1.0, math.sqrt(1.5)])
"""Webb's six-point weights: ±√(1/2), ±1, ±√(3/2), each with probability 1/6 (Webb 2014)."""
WILD_DRAWS = 999
WILD_REPS = 1000
"""Suites a clustered cell also measures the wild cluster bootstrap on (its test inversion is slow)."""


def wild_cluster_interval(values: np.ndarray, sizes: np.ndarray, weights: np.ndarray,
                          confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The restricted wild cluster bootstrap (WCR) interval of a mean of clustered values, by
    inverting its test: the μ₀ whose bootstrap p-value P*(|t*| ≥ |t(μ₀)|) exceeds 1 − ``confidence``,
    t the CR2 statistic (x̄ − μ₀)/SE, each row of ``weights`` one draw of a weight per cluster
    (Cameron, Gelbach & Miller 2008; Webb 2014; MacKinnon & Webb 2017, "Wild bootstrap inference for
    wildly different cluster sizes", J. Applied Econometrics 32(2):233-254). Under μ₀ the restricted
    residuals are x − μ₀, so the bootstrap sample is μ₀ + w_g(x_i − μ₀): every draw's cluster sum is
    w_g·(s_g + n_g·d), d = x̄ − μ₀ and s_g the residual sums about x̄, and the bounds are found by
    bisection in d. A contrast for the calibration page, not what flaketui prints."""
    from flaketui.stats.suite import mean_estimate

    t = float(sizes.sum())
    cluster = np.repeat(np.arange(sizes.size), sizes)
    mean = float(values.mean())
    s = np.bincount(cluster, weights=values - mean, minlength=sizes.size)
    se = mean_estimate(values, [f"g{i}" for i in cluster], confidence, ci_scale="linear").se
    if not se > 0:
        return mean, mean
    keep = 1.0 - sizes / t
    alpha = 1.0 - confidence

    def pvalue(d: float) -> float:
        u = s + sizes * d
        total = weights @ u
        sums = weights * u - np.outer(total, sizes) / t
        se_star = np.sqrt((sums**2 / keep).sum(axis=1)) / t
        with np.errstate(divide="ignore", invalid="ignore"):
            t_star = np.abs(total / t / se_star)
        return float(np.mean(t_star >= abs(d) / se - 1e-12))

    out = []
    for sign in (1.0, -1.0):
        lo, hi = 0.0, se
        while pvalue(sign * hi) > alpha and hi < 4.0:
            lo, hi = hi, 2.0 * hi
        for _ in range(30):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if pvalue(sign * mid) > alpha else (lo, mid)
        out.append(hi)
    return max(0.0, mean - out[0]), min(1.0, mean + out[1])


def _sizes_text(sizes: tuple[int, ...]) -> str:
    """``40 + 7×2``: the first cluster's size and the rest, grouped."""
    rest = sizes[1:]
    if all(x == sizes[0] for x in sizes):
        return f"{len(sizes)}×{sizes[0]}"
    if rest and all(x == rest[0] for x in rest):
        return f"{sizes[0]} + {len(rest)}×{rest[0]}"
    return " + ".join(map(str, sizes))


def _why_suite(name: str, kind: str, units: int, prior: tuple[float, float] | None, rate: float,
               sizes: tuple[int, ...] | None = None, cluster_prior: tuple[float, float] = CLUSTER_PRIOR,
               truth: float = float("nan")) -> str:
    if kind == "clustered" and cluster_prior[0] / sum(cluster_prior) < 0.5:
        return (f"A hard suite: μ ~ Beta({cluster_prior[0]:g}, {cluster_prior[1]:g}) puts most clusters' pass rates "
                f"near 0.25 and their {name} near 0 ({truth:.3f} on average), so a few clusters of high μ carry "
                f"nearly all of the suite's {name}: with {units} clusters a draw often holds none of them, its mean "
                f"and its SE are both near 0 and the interval, on any symmetric or logit scale, falls short of the "
                f"truth; it covers {rate:.1%} (on the linear scale less, in the contrast rows). Below about 30 "
                f"clusters summarise warns that the suite CIs may still be too narrow; here they are, and "
                f"{name} of a hard suite over few clusters should be read as a lower figure than it is.")
    if kind == "clustered":
        lop = "" if sizes is None else f" (sizes {_sizes_text(sizes)})"
        skew = ("clusters of low μ give near-zero pass^{k}, the few of high μ large values".format(k=SUITE_K)
                if cluster_prior[0] / sum(cluster_prior) < 0.8 else
                "most clusters sit near 1 and the few of lower μ far below them")
        return (f"With {units} clusters{lop} the CR2 standard error rests on {units} cluster sums and the "
                f"Bell–McCaffrey degrees of freedom correct its small-sample bias only on average. The cluster sums "
                f"of {name} are skewed ({skew}); the logit scale lengthens the interval on the long side, yet it "
                f"covers {rate:.1%}: summarise warns below 30 clusters.")
    if prior == "mixture":
        return (f"With {units} tasks from a mixture of mostly stable tasks the per-task {name} values are nearly all "
                f"0 or 1 with a few in between, so their mean is lumpy and skewed; the interval covers {rate:.1%}.")
    a, b = prior  # type: ignore[misc]
    if name.startswith("pass^") and a / (a + b) < 0.8:
        shape = (f"bunched near 0 (the unbiased per-task estimate is exactly 0 whenever c < {SUITE_K}) with a long "
                 f"tail towards 1")
    else:
        shape = "bunched near 1 with a long tail towards 0"
    return (f"With {units} tasks and p ~ Beta({a:g}, {b:g}) the per-task {name} values are {shape}, so their mean "
            f"is skewed and the interval covers {rate:.1%}.")


# --- 6. plan's decisions under peeking, exact ----------------------------------------------------


def peeking_probability(stop: Callable[[np.ndarray, np.ndarray], np.ndarray], p: float, step: int, last: int
                        ) -> tuple[float, float]:
    """(P(stop at some look), P(stop at the last look alone)) for looks every ``step`` trials up to ``last``.

    The distribution of the passes is propagated from look to look and absorbed where ``stop`` holds,
    as ``benchmarks/bench_peeking.py`` computes its exact figure."""
    from scipy.stats import binom

    looks = np.arange(step, last + 1, step)
    table = [np.asarray(stop(np.full(m + 1, m), np.arange(m + 1)), dtype=bool) for m in looks]
    dist, total = np.array([1.0]), 0.0
    block = binom.pmf(np.arange(step + 1), step, p)
    for hit in table:
        dist = np.convolve(dist, block)
        total += float(dist[hit].sum())
        dist = np.where(hit, 0.0, dist)
    once = float(binom.pmf(np.arange(last + 1), last, p)[table[-1]].sum())
    return total, once


def peeking_rows(failure: float = 0.105, margin: float = 0.1) -> list[Row]:
    from flaketui.stats.estimators import STABLE_PASS, wilson_interval
    from flaketui.stats.precision import decide

    def sequence(n: np.ndarray, c: np.ndarray) -> np.ndarray:
        return np.asarray(decide(n, c, margin, CONFIDENCE)) == STABLE_PASS

    def wilson(n: np.ndarray, c: np.ndarray) -> np.ndarray:
        return np.asarray(wilson_interval(n, c, CONFIDENCE).low >= 1 - margin - 1e-12)

    rows = []
    for last in (100, 200):
        for name, rule, kind in (("decide (confidence sequence)", sequence, "type1"),
                                 ("old rule: fixed-n Wilson lower bound", wilson, "info")):
            peek, once = peeking_probability(rule, 1 - failure, 5, last)
            situation = f"{name}, true failure rate {failure:g}, margin {margin:g}"
            nominal = 1 - CONFIDENCE if kind == "type1" else None
            why_peek = (f"The confidence sequence holds at every n at once (Ville's inequality); {peek:.2%} "
                        f"would be a defect." if kind == "type1" else "")
            rows.append(Row("plan decisions", situation, f"called stable-pass, a look every 5 trials up to {last}",
                            peek, nominal, kind, why=why_peek))
            rows.append(Row("plan decisions", situation, f"called stable-pass, one look at {last}", once, nominal,
                            kind, why=why_peek))
    w = {(r.figure.rsplit(" ", 1)[-1], "one look" in r.figure): r.measured for r in rows if r.kind == "info"}
    i = next(j for j, r in enumerate(rows) if r.kind == "info" and "up to 200" in r.figure)
    rows[i] = Row(**{**rows[i].__dict__, "why": (
        f"For contrast, the fixed-n Wilson rule the decisions used before: looked at every 5 trials it calls the "
        f"task stable-pass {w[('200', False)]:.2%} of the time up to 200 trials ({w[('100', False)]:.2%} up to 100), "
        f"against {w[('200', True)]:.2%} at one look at 200. Each look is another chance for a 95% interval that "
        f"holds at one n to miss; that is why `decide` now uses the confidence sequence, which pays for peeking "
        f"with more trials (69 clean trials to decide).")})
    return rows


# --- 7. gate --require-evidence, exact -----------------------------------------------------------


def gate_rows(p: float = 0.9, cap: float = 0.2, trials: tuple[int, ...] = (5, 10, 20, 100),
              grid: int = 999) -> list[Row]:
    from scipy.stats import binom

    from flaketui.stats.suite import flakiness_cap_band, gate, summarise, task_stats

    p1, p2 = flakiness_cap_band(cap)
    band = p1 + (p2 - p1) * np.arange(1, grid + 1) / (grid + 1)
    rows = []
    for n in trials:
        for evidence in (False, True):
            passed = np.zeros(n + 1, dtype=bool)
            for c in range(n + 1):
                st = task_stats(run_outcomes("gate", np.array([n]), np.array([c])), 1)
                res = gate(st, summarise(st), None, cap, require_evidence=evidence, confidence=CONFIDENCE)
                passed[c] = not res.cap_failed
            at_p = float(binom.pmf(np.arange(n + 1), n, p)[passed].sum())
            worst = binom.pmf(np.arange(n + 1)[None, :], n, band[:, None])[:, passed].sum(axis=1)
            label = "with require_evidence" if evidence else "point flakiness only (default)"
            situation = f"gate --max-flakiness {cap:g}, {label}, {n} trials"
            nominal, kind = ((1 - CONFIDENCE) / 2, "type1") if evidence else (None, "info")
            why = "" if not evidence else (f"Passing requires the Clopper-Pearson interval to clear the flaky band, "
                                           f"an error of at most 2.5%; {at_p:.2%} would be a defect.")
            if not evidence and n == trials[0]:
                why = (f"For contrast, the default cap reads the point flakiness 4·p̂·(1 − p̂) and makes no claim: a "
                       f"task at p = {p:g} passes it whenever p̂ is at least {p2:.4f} (or at most {p1:.4f}), "
                       f"which at {n} trials means all of them passing (or all failing), {at_p:.1%} of the time. With "
                       f"`require_evidence` the gate lists such a task as short of trials instead.")
            rows.append(Row("gate", situation,
                            f"task with p = {p:g} (flakiness {4 * p * (1 - p):.2f}) passes the cap", at_p, nominal,
                            kind, why=why))
            if evidence:
                i = int(np.argmax(worst))
                rows.append(Row("gate", situation,
                                f"worst case over p in the flaky band ({p1:.4f}, {p2:.4f}) (at p = {band[i]:.4f})",
                                float(worst[i]), nominal, kind, why=why))
    return rows


# --- 8. plan's power -----------------------------------------------------------------------------


PLAN_SCENARIOS = {
    "same gain, K = 5": (5, "same"),
    "varying gain, K = 5": (5, "varying"),
    "same gain, K = 1": (1, "same"),
}
"""A's p ~ Beta(6, 4); B's p = min(A's + d, 1), d = 0.1 on every task (same) or d ~ Uniform(−0.1, 0.3) (varying)."""


def plan_draw(rng: np.random.Generator, size: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    p_a = rng.beta(6.0, 4.0, size)
    d = np.full(size, 0.1) if kind == "same" else rng.uniform(-0.1, 0.3, size)
    return p_a, np.clip(p_a + d, 0.0, 1.0)


def plan_inputs(kind: str, seed: int, draws: int = 2_000_000) -> tuple[float, float, float]:
    """(σ²_between, σ²_within, δ) of the generator, from ``draws`` draws of (p_A, p_B)."""
    p_a, p_b = plan_draw(rng_for(seed, f"plan-moments/{kind}"), draws, kind)
    d = p_b - p_a
    return float(np.var(d)), float(np.mean(p_a * (1 - p_a) + p_b * (1 - p_b))), float(np.mean(d))


def plan_cell(name: str, reps: int, seed: int) -> list[Row]:
    from flaketui.stats import compare_runs, task_stats
    from flaketui.stats.power import tasks_paired_means
    from flaketui.stats.verdict import evidence

    k, kind = PLAN_SCENARIOS[name]
    between, within, delta = plan_inputs(kind, seed)
    plan = tasks_paired_means(between, within, k, delta, power=0.8, alpha=ALPHA)
    tasks = int(plan.tasks)  # type: ignore[arg-type]
    rng = rng_for(seed, f"plan/{name}")
    n = np.full(tasks, k)
    primary = t_test = 0
    for _ in range(reps):
        p_a, p_b = plan_draw(rng, tasks, kind)
        cmp = compare_runs(task_stats(run_outcomes("A", n, rng.binomial(k, p_a)), 1),
                           task_stats(run_outcomes("B", n, rng.binomial(k, p_b)), 1))
        primary += evidence(cmp, ALPHA).winner > 0
        t_test += cmp.mean_diff.ci[0] > 0
    situation = (f"{name}: δ = {delta:.3f}, σ²_between = {between:.4f}, σ²_within = {within:.3f}; "
                 f"planned T = {tasks} tasks × {k} trials")
    rows = []
    for figure, hits in (("power of the primary test (B named winner)", primary),
                         ("power of the paired t interval (lower bound > 0)", t_test)):
        r = hits / reps
        rows.append(Row("plan power", situation, figure, r, 0.8, "plan", mc_se(r, reps), reps,
                        why=_why_plan(figure, r, between, within, k)))
    return rows


def _why_plan(figure: str, rate: float, between: float, within: float, k: int) -> str:
    if "primary" in figure:
        side = "more" if rate > 0.8 else "less"
        return (f"The plan sizes a z-test of the mean p̂ difference whose variance is σ²_between + σ²_within/K "
                f"= {between:.4f} + {within / k:.4f}. The within-task test conditions on the tasks drawn, so the "
                f"between-task spread of the gains is not noise to it; its discreteness and its conditioning on "
                f"each task's pass total cost power. Here it gets {rate:.1%}, {side} than the planned 80%.")
    return (f"The plan's own test: its normal approximation (z for t, the sd estimated) gives {rate:.1%} "
            f"rather than 80% at this size.")


# --- 9. designs that look at the data: --planned-trials ------------------------------------------

PLANNED_FIRST = 5
"""Trials every task gets before any outcome is seen."""
PLANNED_EXTRA = 10
"""Trials the simulated plan adds to every task whose first trials were mixed (0 < c < n₀)."""
PLANNED_TASKS = 50


def planned_cell(prior: tuple[float, float], reps: int, seed: int) -> list[Row]:
    """A plan adds trials to the tasks whose first n₀ looked uncertain; the suite's pass@1 and pass^k from all
    trials against those from the first n₀ (``--planned-trials n₀``), and their intervals' coverage."""
    from flaketui.stats.suite import summarise, task_stats

    a, b = prior
    rng = rng_for(seed, f"planned/{prior}")
    t, n0 = PLANNED_TASKS, PLANNED_FIRST
    truth = {"pass@1": a / (a + b), f"pass^{SUITE_K}": beta_mean_power(a, b, SUITE_K)}
    err = {(est, fig): [] for est in ("all", "first") for fig in truth}
    hits = {(est, fig): 0 for est in ("all", "first") for fig in truth}
    for _ in range(reps):
        p = rng.beta(a, b, t)
        c0 = rng.binomial(n0, p)
        extra = np.where((c0 > 0) & (c0 < n0), PLANNED_EXTRA, 0)
        c_all, n_all = c0 + rng.binomial(extra, p), n0 + extra
        for est, (n, c) in (("all", (n_all, c_all)), ("first", (np.full(t, n0), c0))):
            sm = summarise(task_stats(run_outcomes("r", n, c), SUITE_K))
            for fig, e in (("pass@1", sm.pass_at_1), (f"pass^{SUITE_K}", sm.pass_hat_k)):
                err[(est, fig)].append(e.value - truth[fig])
                hits[(est, fig)] += e.ci[0] - 1e-12 <= truth[fig] <= e.ci[1] + 1e-12
    situation = (f"{t} tasks, p ~ Beta({a:g}, {b:g}), {n0} trials each, then {PLANNED_EXTRA} more to every task "
                 f"whose first {n0} were mixed")
    rows = []
    for fig in truth:
        for est, label in (("all", "every trial"), ("first", f"--planned-trials {n0}")):
            e = np.asarray(err[(est, fig)])
            bias, se = float(e.mean()), float(e.std(ddof=1) / math.sqrt(e.size))
            kind = "bias" if est == "first" else "info"
            why = "" if est == "first" else (
                f"From every trial the suite {fig} is biased by {bias:+.4f}: the plan gave more trials to the "
                f"tasks whose first {n0} were mixed, so how many trials a task has depends on its outcomes, and "
                f"the per-task estimate is unbiased only for a number of trials fixed in advance. "
                f"`--planned-trials {n0}` reads the design fixed before looking.")
            rows.append(Row("planned", situation, f"bias of suite {fig} from {label} (truth {truth[fig]:.4f})",
                            bias, 0.005 if est == "first" else None, kind, se, reps, why=why))
            r = hits[(est, fig)] / reps
            rows.append(Row("planned", situation, f"suite {fig} 95% CI from {label} covers {truth[fig]:.4f}", r,
                            CONFIDENCE if est == "first" else None, "coverage" if est == "first" else "info",
                            mc_se(r, reps), reps,
                            why=(f"The interval of the all-trials estimate is centred on a biased value and covers "
                                 f"{r:.1%}." if est == "all" else
                                 f"The first {n0} trials are a fixed design; the interval covers {r:.1%}.")))
    return rows


# --- 10. the noise floor: does the printed MDE have its power? -----------------------------------

FLOOR_DESIGNS = ((50, 5), (100, 3))
"""(tasks, trials per task) of the noise-floor cells."""


def floor_cell(tasks: int, k: int, reps: int, seed: int) -> list[Row]:
    """A's p ~ Beta(6, 4) and B's = A's + δ on every task, δ the noise floor's MDE at the generator's σ²_within:
    the power of the primary test and of the paired interval at δ (the floor promises 80%)."""
    from flaketui.stats import compare_runs, task_stats
    from flaketui.stats.noise import minimum_detectable, suite_noise_floor
    from flaketui.stats.verdict import evidence

    a, b = 6.0, 4.0
    within = a * b / ((a + b) * (a + b + 1))  # E[p(1 − p)] for p ~ Beta(a, b)
    delta = minimum_detectable(2 * within / (k * tasks))
    rng = rng_for(seed, f"floor/{tasks}/{k}")
    n = np.full(tasks, k)
    primary = t_int = 0
    printed = []
    for _ in range(reps):
        p_a = rng.beta(a, b, tasks)
        p_b = np.minimum(p_a + delta, 1.0)
        ca = rng.binomial(k, p_a)
        cmp = compare_runs(task_stats(run_outcomes("A", n, ca), 1),
                           task_stats(run_outcomes("B", n, rng.binomial(k, p_b)), 1))
        primary += evidence(cmp, ALPHA).winner > 0
        t_int += cmp.mean_diff.ci[0] > 0
        printed.append(suite_noise_floor(n, ca).mde)
    situation = (f"{tasks} tasks × {k} trials, A's p ~ Beta(6, 4), B = A + δ on every task, δ = the floor "
                 f"{delta:.3f} (report prints {float(np.mean(printed)):.3f} on average)")
    rows = []
    for figure, hits in (("power at the floor: primary test (B named winner)", primary),
                         ("power at the floor: paired interval (lower bound > 0)", t_int)):
        r = hits / reps
        rows.append(Row("noise floor", situation, figure, r, 0.8, "plan", mc_se(r, reps), reps,
                        why=(f"The floor is the normal-approximation MDE of a mean difference whose variance is "
                             f"the trials' binomial noise alone, 2σ²_within/(K·T); {figure.split(': ')[1]} reaches "
                             f"{r:.1%} there (the primary test conditions on each task's pass total and is "
                             f"discrete; B's p is clipped at 1 on a few tasks, so the mean gain is a little "
                             f"below δ).")))
    return rows


# --- running and writing -------------------------------------------------------------------------


@dataclass
class Config:
    reps: int = 1000
    null_reps: int = 2000
    suite_reps: int = 10_000
    few_reps: int = 2000
    """Suites per cell where summarise's interval is the beta-binomial posterior (below 30 tasks)."""
    planned_reps: int = 2000
    grid: int = 999
    seed: int = 20_261_201
    tasks: tuple[int, ...] = (10, 30, 50)
    workers: int = 2
    families: tuple[str, ...] = ()
    """Only these families (``--family``); all when empty."""


def build_jobs(cfg: Config) -> list[tuple[str, Callable[..., list[Row]], dict]]:
    s = cfg.seed
    jobs: list[tuple[str, Callable[..., list[Row]], dict]] = []
    for prior in PRIORS:
        for n_a, n_b in DESIGNS:
            for t in cfg.tasks:
                jobs.append(("compare", comparison_cell,
                             dict(prior=prior, n_a=n_a, n_b=n_b, tasks=t, gain=0.0, reps=cfg.null_reps, seed=s)))
    for prior in PRIORS:
        for n_a, n_b in DESIGNS:
            jobs.append(("compare", comparison_cell,
                         dict(prior=prior, n_a=n_a, n_b=n_b, tasks=max(cfg.tasks), gain=0.2, reps=cfg.reps, seed=s)))
    for prior in PRIORS:
        for n_base, n_other in ((5, 5), (1, 10)):
            jobs.append(("baseline", baseline_cell, dict(prior=prior, n_base=n_base, n_other=n_other,
                                                         tasks=max(cfg.tasks), runs=3, reps=cfg.reps, seed=s)))
    for prior in PRIORS:
        for n_a, n_b in ((8, 8), (4, 16)):
            jobs.append(("per-task", pertask_cell,
                         dict(prior=prior, n_a=n_a, n_b=n_b, tasks=max(cfg.tasks), reps=cfg.reps, seed=s)))
    jobs.append(("per-task intervals", per_task_interval_rows, dict(grid=cfg.grid)))
    for prior in ((6.0, 4.0), (8.0, 1.0), "mixture"):
        for t in (10, 20, 30):
            reps = min(cfg.suite_reps, cfg.few_reps)  # below 60 tasks summarise's posterior: slower
            jobs.append(("suite intervals", suite_cell,
                         dict(kind="unclustered", prior=prior, units=t, reps=reps, seed=s)))
    for g in (5, 10, 30):
        jobs.append(("suite intervals", suite_cell,
                     dict(kind="clustered", prior=None, units=g, reps=cfg.suite_reps, seed=s)))
    for sizes in LOPSIDED:
        jobs.append(("suite intervals", suite_cell,
                     dict(kind="clustered", prior=None, units=len(sizes), reps=cfg.suite_reps, seed=s, sizes=sizes)))
    for mu_prior in HARD_AND_EASY:
        jobs.append(("suite intervals", suite_cell, dict(kind="clustered", prior=None, units=10, reps=cfg.suite_reps,
                                                         seed=s, cluster_prior=mu_prior)))
    jobs.append(("plan decisions", peeking_rows, {}))
    jobs.append(("gate", gate_rows, dict(grid=cfg.grid)))
    for name in PLAN_SCENARIOS:
        jobs.append(("plan power", plan_cell, dict(name=name, reps=cfg.reps, seed=s)))
    for prior in ((6.0, 4.0), (0.5, 0.5)):
        jobs.append(("planned", planned_cell, dict(prior=prior, reps=cfg.planned_reps, seed=s)))
    for tasks, k in FLOOR_DESIGNS:
        jobs.append(("noise floor", floor_cell, dict(tasks=tasks, k=k, reps=cfg.reps, seed=s)))
    return [job for job in jobs if not cfg.families or job[0] in cfg.families]


def _run_job(job: tuple[str, Callable[..., list[Row]], dict]) -> tuple[list[Row], float]:
    t0 = time.perf_counter()
    rows = job[1](**job[2])
    return rows, time.perf_counter() - t0


def run_all(cfg: Config, progress: bool = True) -> list[Row]:
    """Every job, in a pool of ``cfg.workers`` processes, the rows in job order."""
    jobs = build_jobs(cfg)
    # The slowest first, so the pool does not wait on one at the end.
    order = sorted(range(len(jobs)), key=lambda i: -_cost(jobs[i]))
    results: dict[int, list[Row]] = {}
    t0 = time.perf_counter()
    if cfg.workers > 1:
        with ProcessPoolExecutor(cfg.workers) as pool:
            futures = {i: pool.submit(_run_job, jobs[i]) for i in order}
            for done, i in enumerate(order, 1):
                results[i], took = futures[i].result()
                if progress:
                    _progress(done, len(jobs), jobs[i], took, t0)
    else:
        for done, i in enumerate(order, 1):
            results[i], took = _run_job(jobs[i])
            if progress:
                _progress(done, len(jobs), jobs[i], took, t0)
    return [row for i in range(len(jobs)) for row in results[i]]


def _cost(job: tuple[str, Callable[..., list[Row]], dict]) -> float:
    kw = job[2]
    reps = kw.get("reps", 1)
    if job[1] is comparison_cell:
        return reps * kw["tasks"] * 1.0
    if job[1] is baseline_cell:
        return reps * kw["tasks"] * 3.0
    if job[1] is pertask_cell:
        return reps * kw["tasks"] * 1.2
    if job[1] is plan_cell:
        return reps * 150.0
    if job[1] is planned_cell:
        return reps * 200.0
    if job[1] is floor_cell:
        return reps * kw["tasks"] * 2.0
    if job[1] is suite_cell and kw.get("kind") == "unclustered":
        return reps * 60.0
    if job[1] is suite_cell:
        return min(reps, WILD_REPS) * 8.0 * kw["units"] + reps
    return 1.0


def _progress(done: int, total: int, job: tuple[str, Callable[..., list[Row]], dict], took: float, t0: float) -> None:
    args = ", ".join(f"{k}={v}" for k, v in job[2].items() if k not in ("seed",))
    print(f"[{done:>2}/{total}] {time.perf_counter() - t0:6.0f} s  {job[0]}: {args} ({took:.1f} s)",
          file=sys.stderr, flush=True)


FAMILIES = {
    "compare": "1. `compare`: the verdict, the old sign-test rule and the mean-difference interval",
    "baseline": "2. `compare --baseline`: Holm across the comparisons",
    "per-task": "3. Per-task flips",
    "per-task intervals": "4. Per-task intervals (exact)",
    "suite intervals": "5. Suite intervals",
    "plan decisions": "6. `plan`'s decisions under peeking (exact)",
    "gate": "7. `gate --require-evidence` (exact)",
    "plan power": "8. `plan`'s power",
    "planned": "9. Designs that look at the data: `--planned-trials`",
    "noise floor": "10. The noise floor: power at the printed minimum detectable effect",
}

NOTES = {
    "compare": ("A winner is named when `evidence(cmp, 0.05).winner` is non-zero: the within-task permutation "
                "test rejects. The old rule named one when the sign test did. Null pairs share every task's true "
                "p; under the alternative B's p is min(A's p + 0.2, 1), so the mean gain is below 0.2 where p is "
                "near 1. The mean-difference interval's truth is 0 under the null; under the alternative it is "
                "reported for both targets: the superpopulation mean E[p_B − p_A] (what an interval over tasks "
                "estimates) and the mean of the true differences of the 50 tasks drawn."),
    "baseline": "One baseline and three other runs, all with the same true p per task; a winner in any comparison "
                "(Holm-adjusted primary p < 0.05) counts once.",
    "per-task": "A flip is a task whose Holm-adjusted Fisher p (over Tarone's family) is below 0.05; the figure is "
                "the chance of at least one among 50 null tasks.",
    "per-task intervals": "Exact coverage: Σ over c of Binomial(n, p)(c) · [the interval at (n, c) holds the truth], "
                          "the truth p for Wilson and p^k for the pass^k intervals.",
    "suite intervals": f"{SUITE_TRIALS} trials per task. The truth is the superpopulation mean over the generating "
                       f"distribution (E[p], E[p^{SUITE_K}]; by formula unclustered, by quadrature over μ "
                       f"clustered), not the mean of the drawn tasks' p: the tasks are a sample. pass^{SUITE_K} is "
                       f"the mean of the unbiased per-task estimate C(c, {SUITE_K})/C({SUITE_TRIALS}, {SUITE_K}). "
                       f"The interval is what `summarise` prints: below 30 unclustered tasks the beta-binomial "
                       f"posterior ({{few}} suites a cell) joined with the t interval, from 60 the t interval alone, "
                       f"clustered CR2 with Bell–McCaffrey degrees of freedom, formed on the logit scale of the "
                       f"mean. Each clustered cell shows beside it, for contrast, the same CR2 interval on the "
                       f"linear scale (used before) and the restricted wild cluster bootstrap with Webb's six-point "
                       f"weights ({WILD_DRAWS} draws, inverted by bisection; its first {WILD_REPS:,} suites), both "
                       f"with their mean widths; the lopsided suites (one cluster of 40 or 47 beside seven small "
                       f"ones) also show the CR1 + t(G − 1) interval used before that. The wild bootstrap's weights "
                       f"are symmetric, so on balanced clusters it cannot see the skew of the cluster sums and "
                       f"covers pass^{SUITE_K} about as the linear CR2 interval does, below 94% with 5–10 clusters; "
                       f"on the lopsided ones it holds, a little narrower than the logit-scale interval. The logit "
                       f"scale holds in every cell, at the linear interval's width on balanced clusters, with no "
                       f"draws and the same interval every time: it is what flaketui prints. Two more clustered "
                       f"cells move the cluster means, 10 clusters of 10 tasks each: a hard suite (μ ~ Beta(2, 6), "
                       f"mean pass rate 0.25) and an easy one (μ ~ Beta(8, 1)).",
    "plan decisions": "A task that fails 10.5% of the time is not stable-pass (margin 0.1); the figure is the chance "
                      "it is called so, by `decide` (nominal ≤ 5%) and, for contrast, by the fixed-n Wilson rule "
                      "the decisions used before (no claim under peeking).",
    "gate": "The chance a flaky task passes the flakiness cap 0.2 (a false pass). Without `require_evidence` the "
            "cap reads the point flakiness 4·p̂·(1 − p̂) and makes no claim; with it the task must also rule out "
            "flakiness above the cap at 95%, a false pass of at most 2.5% (one side of a two-sided Clopper-Pearson "
            "interval).",
    "plan power": "A's p ~ Beta(6, 4); B's p = min(A's p + d, 1) with d = 0.1 on every task or d ~ Uniform(−0.1, "
                  "0.3). σ²_between, σ²_within and δ are the generator's (from 2,000,000 draws), handed to "
                  "`tasks_paired_means(power=0.8, alpha=0.05)`; suites of the planned size are then simulated. "
                  "Nominal: the planned 80%, within 1 point either way.",
    "planned": (f"Every task gets {PLANNED_FIRST} trials; a plan then adds {PLANNED_EXTRA} to every task whose first "
                f"{PLANNED_FIRST} were mixed (what `plan --budget` does to uncertain tasks). The suite's pass@1 and "
                f"pass^{SUITE_K} as `report` prints them, from every trial and with `--planned-trials "
                f"{PLANNED_FIRST}` (the first {PLANNED_FIRST} of each task); bias is the mean estimate less the "
                f"superpopulation truth, ± its MC SE. Nominal: |bias| ≤ 0.005 and coverage ≥ 95% for "
                f"`--planned-trials`; every-trial figures are the contrast (no claim)."),
    "noise floor": ("`report`'s noise floor says a change below the MDE cannot be told from noise; at the MDE itself "
                    "(the same change on every task, the floor's own assumption) `compare` should find it about 80% "
                    "of the time. δ is computed from the generator's σ²_within; the printed floor (estimated from "
                    "run A) is shown beside it. Nominal: 80%, within 1 point either way."),
}


def markdown(rows: list[Row], cfg: Config, elapsed: float, command: str) -> str:
    out = [
        "# Calibration",
        "",
        "How often each test and interval flaketui prints does what it promises: the coverage of its "
        "intervals, the type-I error of its tests (the rate it names a difference that is not there) and "
        "their power. Generated by `benchmarks/bench_calibration.py`; do not edit by hand.",
        "",
        "- **Exact** figures sum over every binomial outcome (no simulation).",
        f"- **Monte Carlo** figures (MC) give ± one standard error and the number of simulated cases: "
        f"{cfg.null_reps:,} null pairs per `compare` cell, {cfg.reps:,} for power, `--baseline`, per-task and "
        f"`plan` cells, {cfg.suite_reps:,} suites per suite-interval cell ({cfg.few_reps:,} where the interval is "
        f"the beta-binomial posterior), {cfg.planned_reps:,} per `--planned-trials` cell. Seed {cfg.seed}; every "
        f"cell draws "
        f"from its own stream (the seed and the cell's name), so the figures do not depend on the number of "
        f"worker processes.",
        "- **Within 1 point?** A coverage may be at most 1 point below 95% (≥ 94%), a type-I error at most "
        "1 point above α = 5% (≤ 6%), a power at most 1 point below its target; `yes (conservative)` is more "
        "than 1 point on the safe side. The verdict reads the point estimate: with MC, mind its ± SE. A "
        "paragraph under each table explains every figure that misses.",
        f"- This run: `{command}`, {elapsed / 60:.1f} min with {cfg.workers} worker process(es).",
        "",
        "Rerun with `.venv/bin/python benchmarks/bench_calibration.py --write docs/calibration.md` "
        "(`--quick` for a smaller run, `--family NAME` for one section; `--help` for the counts).",
        "",
    ]
    for fam, title in FAMILIES.items():
        fam_rows = [r for r in rows if r.family == fam]
        if not fam_rows:
            continue
        out += [f"## {title}", "", NOTES[fam].replace("{few}", f"{cfg.few_reps:,}"), "",
                "| situation | figure | measured | nominal | within 1 point? |",
                "|---|---|---|---|---|"]
        out += [f"| {r.situation} | {r.figure} | {r.measured_text()} | {r.nominal_text()} | {r.verdict} |"
                for r in fam_rows]
        out.append("")
        misses = [r for r in fam_rows if r.missed]
        contrasts = [r for r in fam_rows if r.kind == "info" and r.why]
        for r in misses:
            shown = r.measured_text() if r.kind == "bias" else f"{r.measured:.2%}"
            out += [f"**{r.situation}, {r.figure}: {shown}** against {r.nominal_text()}. {r.why}", ""]
        if not misses:
            out += ["Every figure with a claim is within 1 point of it (or on the safe side).", ""]
        for r in contrasts:
            out += [r.why, ""]
    return "\n".join(out).rstrip() + "\n"


OTHER_SECTION = re.compile(r"(?ms)^(?:## [^\n]*\n(?:(?!## |<!-- generated: )[^\n]*\n)*)?"
                           r"<!-- generated: (?P<name>[^ ]+) -->.*?<!-- end generated: (?P=name) -->\n?")
"""A section another benchmark writes into the page (its heading, any lines, and its generated block)."""


def keep_other_sections(page: Path, text: str) -> str:
    """``text`` with the sections other benchmarks wrote into ``page`` (between their own
    ``<!-- generated: NAME -->`` markers: ``bench_classes.py``, ``bench_score_calibration.py``) kept at its
    end, each with the heading above it, so regenerating this page does not erase them."""
    try:
        old = page.read_text(encoding="utf-8")
    except FileNotFoundError:
        return text
    kept = [m.group(0).rstrip("\n") for m in OTHER_SECTION.finditer(old)]
    return text if not kept else text.rstrip("\n") + "\n\n" + "\n\n".join(kept) + "\n"


def replace_sections(old: str, new: str, families: tuple[str, ...]) -> str:
    """The page ``old`` with the sections of ``families`` taken from ``new`` (a page of those families
    alone, :func:`markdown`): a rerun of one family (``--family``) keeps every other section as it was,
    and the run line at the top says which sections it regenerated."""
    def section(text: str, fam: str) -> re.Match[str] | None:
        return re.search(rf"(?ms)^## {re.escape(FAMILIES[fam])}\n.*?(?=^## |^<!-- generated: |\Z)", text)

    out = old
    for fam in families:
        got, was = section(new, fam), section(out, fam)
        if got is None or was is None:
            continue
        text = got.group(0).rstrip("\n") + ("\n\n" if out[was.end():].strip() else "\n")
        out = out[:was.start()] + text + out[was.end():]
    rerun = re.search(r"(?m)^Rerun with .*$", new)
    if rerun is not None:
        out = re.sub(r"(?m)^Rerun with .*$", lambda _: rerun.group(0), out, count=1)
    run = re.search(r"(?m)^- This run: .*$", new)
    if run is not None:
        names = ", ".join(FAMILIES[f].split(" ", 1)[0].rstrip(".") for f in families)
        out = re.sub(r"(?m)^- This run: .*$", lambda _: run.group(0).rstrip(".") + f" (regenerated section(s) "
                     f"{names}; the others are from the last full run).", out, count=1)
    return out


def print_table(rows: list[Row]) -> None:
    for fam, title in FAMILIES.items():
        fam_rows = [r for r in rows if r.family == fam]
        if not fam_rows:
            continue
        print(f"\n{title}")
        for r in fam_rows:
            print(f"  {r.situation:<62} {r.figure:<70} {r.measured_text():>30} {r.nominal_text():>9} "
                  f"{r.verdict}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller run (about a minute): fewer reps, 10 and 50 tasks")
    ap.add_argument("--reps", type=int, default=None, help="Monte-Carlo pairs per power/baseline/per-task/plan cell "
                                                            "(default 1000; 150 with --quick)")
    ap.add_argument("--null-reps", type=int, default=None, help="null pairs per compare cell (default 2000; 300 quick)")
    ap.add_argument("--suite-reps", type=int, default=None,
                    help="suites per suite-interval cell (default 10000; 2000 with --quick)")
    ap.add_argument("--grid", type=int, default=999, help="values of p for the minimum coverage")
    ap.add_argument("--seed", type=int, default=20_261_201)
    ap.add_argument("--workers", type=int, default=2, help="worker processes")
    ap.add_argument("--write", type=Path, help="write the Markdown page here (docs/calibration.md)")
    ap.add_argument("--docs", action="store_true", help="write the manual's page: --write docs/calibration.md")
    ap.add_argument("--family", action="append", choices=list(FAMILIES), metavar="NAME",
                    help="run only this family (repeatable; one of: " + ", ".join(FAMILIES) + "); with --write, "
                         "only its section of the page is replaced")
    args = ap.parse_args(argv)
    cfg = Config(seed=args.seed, grid=args.grid, workers=args.workers)
    if args.quick:
        cfg.reps, cfg.null_reps, cfg.suite_reps, cfg.tasks = 150, 300, 2000, (10, 50)
        cfg.few_reps, cfg.planned_reps = 400, 400
    cfg.reps = args.reps if args.reps is not None else cfg.reps
    cfg.null_reps = args.null_reps if args.null_reps is not None else cfg.null_reps
    cfg.suite_reps = args.suite_reps if args.suite_reps is not None else cfg.suite_reps
    cfg.families = tuple(args.family or ())
    t0 = time.perf_counter()
    rows = run_all(cfg)
    elapsed = time.perf_counter() - t0
    print_table(rows)
    print(f"\n{elapsed:.0f} s")
    if args.docs or args.write:
        here = str(Path(__file__).resolve().parent)
        if here not in sys.path:
            sys.path.insert(0, here)  # docs_tables sits beside this script
        from docs_tables import DOCS, write_page

        page = args.write or DOCS / "calibration.md"
        command = "bench_calibration.py" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:])
                                                   if not a.startswith("--write") and not a.endswith(".md")
                                                   and a != "--docs")
        text = markdown(rows, cfg, elapsed, command.strip())
        if cfg.families and page.exists():  # the old page, other benchmarks' sections and all, keeps the rest
            write_page(page, replace_sections(page.read_text(encoding="utf-8"), text, cfg.families))
        else:
            write_page(page, keep_other_sections(page, text))
        print(f"wrote {page}")


if __name__ == "__main__":
    main()
