"""Per-task tests of a paired comparison: which tasks really flipped, and which only moved.

Every common task's p̂ may change from run A to run B by chance alone: 0.040 →
0.031 on 25 vs 96 trials says nothing. Each task gets Fisher's exact test of
A's passes/trials against B's, and the p-values are adjusted across the tasks
(Holm for the family-wise error, Benjamini–Hochberg q for the false discovery
rate). A task is **flipped** when its Holm-adjusted p < α and **moved** when
its p̂ changed without that. With one trial per task in both runs nothing can be
tested per task: a change is then only **changed**, never flipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from flaketui.stats.arrays import Bools, Floats, Ints
from flaketui.stats.exact import fisher_pvalue
from flaketui.stats.paired import PairedComparison

ALPHA = 0.05

UNTESTABLE_NOTE = (
    "one trial per task in both runs: nothing can be tested per task; a change of p̂ is marked changed, "
    "never flipped"
)


@dataclass(frozen=True)
class PerTaskTests:
    """Fisher's test per common task, with Holm and Benjamini–Hochberg adjustments.

    Arrays are aligned with ``tasks`` (the comparison's common tasks, in A's
    order). ``p_value``, ``p_adjusted`` and ``q_value`` are NaN for a task not
    tested: a run has no non-errored trial of it, or nothing is tested at all
    (``tested`` False: one trial per task in both runs).
    """

    comparison: PairedComparison
    """The comparison tested: its common tasks and each run's passes and trials of them."""
    p_value: Floats
    p_adjusted: Floats
    """Holm's step-down adjustment: the family-wise error rate stays below α."""
    q_value: Floats
    """Benjamini–Hochberg q: the expected share of false flips stays below q."""
    flipped: Bools
    changed: Bools
    """p̂ differs between the runs (both have a non-errored trial)."""
    alpha: float
    tested: bool
    """False when every common task has at most one trial in each run: a change is only changed."""
    family: int
    """How many tasks Holm's adjustment counts (Tarone's family: those that could reach significance)."""

    @property
    def tasks(self) -> list[str]:
        """The common tasks, in A's order."""
        return self.comparison.tasks

    @property
    def delta(self) -> Floats:
        """p̂_B − p̂_A per task (NaN when a run has no non-errored trial of it)."""
        a, b = self.comparison.a, self.comparison.b
        with np.errstate(divide="ignore", invalid="ignore"):
            return b.passes / np.where(b.n > 0, b.n, np.nan) - a.passes / np.where(a.n > 0, a.n, np.nan)

    @property
    def single_trial(self) -> bool:
        """Nothing tested because every task both runs have has one trial in each: say so."""
        return not self.tested and bool(np.any((self.comparison.a.n > 0) & (self.comparison.b.n > 0)))

    def _names(self, mask: Bools) -> list[str]:
        return [self.tasks[i] for i in np.flatnonzero(mask)]

    @property
    def flipped_fixed(self) -> list[str]:
        return self._names(self.flipped & (self.delta > 0))

    @property
    def flipped_broken(self) -> list[str]:
        return self._names(self.flipped & (self.delta < 0))

    @property
    def moved(self) -> Bools:
        """p̂ changed but the change is not significant after adjustment."""
        return self.changed & ~self.flipped

    @property
    def moved_fixed(self) -> list[str]:
        return self._names(self.moved & (self.delta > 0))

    @property
    def moved_broken(self) -> list[str]:
        return self._names(self.moved & (self.delta < 0))

    def flip_order(self) -> list[int]:
        """Indices of changed tasks: flipped first (smallest adjusted p first), then moved (smallest p first).

        Ties keep A's order; without tests (``tested`` False) the largest |Δ| comes first.
        """
        if not self.tested:
            idx = np.flatnonzero(self.changed)
            return idx[np.argsort(-np.abs(self.delta[idx]), kind="stable")].tolist()
        flipped = np.flatnonzero(self.flipped)
        moved = np.flatnonzero(self.moved)
        return (flipped[np.argsort(self.p_adjusted[flipped], kind="stable")].tolist()
                + moved[np.argsort(self.p_value[moved], kind="stable")].tolist())

    def to_json(self) -> dict[str, Any]:
        """``per_task`` rows and the ``flipped_fixed`` / ``flipped_broken`` lists for ``compare --format json``."""

        def num(x: float) -> float | None:
            return None if x != x else float(x)

        a, b = self.comparison.a, self.comparison.b
        rows = [
            {
                "task": t,
                "passes_a": int(ca), "n_a": int(na), "passes_b": int(cb), "n_b": int(nb),
                "p_value": num(p), "p_adjusted": num(padj), "q_value": num(q), "flipped": bool(f),
                "changed": bool(ch),
            }
            for t, ca, na, cb, nb, p, padj, q, f, ch in zip(
                self.tasks, a.passes.tolist(), a.n.tolist(), b.passes.tolist(), b.n.tolist(),
                self.p_value.tolist(), self.p_adjusted.tolist(), self.q_value.tolist(),
                self.flipped.tolist(), self.changed.tolist(), strict=True)
        ]
        out: dict[str, Any] = {
            "alpha": self.alpha,
            "per_task_test": "fisher-exact, holm (p_adjusted), benjamini-hochberg (q_value)"
            if self.tested else None,
            "per_task_tested": self.tested,
            "per_task_family": self.family,
            "per_task": rows,
            "flipped_fixed": self.flipped_fixed,
            "flipped_broken": self.flipped_broken,
        }
        if self.single_trial:
            out["per_task_note"] = UNTESTABLE_NOTE
        return out


def per_task_tests(cmp: PairedComparison, alpha: float = ALPHA) -> PerTaskTests:
    """Fisher's exact test of every common task, Holm and Benjamini–Hochberg across them.

    Each task's 2×2 table (A's passes and failures against B's) gets the exact
    two-sided p-value of :func:`flaketui.stats.exact.fisher_pvalue`, computed
    once per distinct (passes_a, n_a, passes_b, n_b): a suite of thousands of
    tasks with a few trials each has few distinct tables.

    Why Fisher and not Boschloo (measured on the generator's 2,000 tasks × 8
    trials, a candidate truly worse on 170 tasks): Boschloo's unconditional
    test gives smaller p-values per table (8/8 vs 2/8: 0.002 against Fisher's
    0.007), but it costs 10-55 ms a table in ``scipy.stats.boschloo_exact``
    (1.6 s for the 72 distinct tables, against milliseconds here) and, being
    unconditional, cannot leave out the tasks whose margins make a flip
    impossible: over all 2,000 tasks Holm names 0 flips with it, where Fisher
    with Tarone's family below names 35 (all true changes); BH names 61 either
    way (all true). It is not worth its cost here.

    The family adjusted over is chosen by Tarone's rule for discrete tests:
    given its margins (trials per run, total passes), a task's p-value cannot
    fall below some p_min (2/C(16, 8) = 0.00016 for 8 trials against 8), and a
    task that cannot reach the threshold cannot be a flip, so counting it only
    raises the bar for the rest. Holm's family is the tasks with p_min < α/K
    for the smallest K that is at least their number (tasks outside it get
    p_adjusted = 1); BH, whose bars rise to α, runs over every task whose
    margins admit more than one table (p_min < 1; the others keep q = 1). Both
    families depend on the margins only, never on the outcome of a test, so the
    error rates hold (Tarone 1990; Hommel and Krummenauer 1998). Without it,
    2,000 tasks of 8 trials each could name no flip at all: Holm's first bar,
    0.05/648, lies below the smallest p-value 8 trials can give. A task with
    no non-errored trial in a run is not tested (NaN).

    With at most one trial per task in both runs nothing can be tested per
    task: ``tested`` is False, the p-values are NaN and no task is flipped (a
    change of one trial against one is no evidence about that task); the changes
    are still ``changed``.

    References
    ----------
    .. [1] R. A. Fisher, *The Design of Experiments*, 1935 (the exact test).
    .. [2] S. Holm, "A Simple Sequentially Rejective Multiple Test Procedure",
       Scandinavian Journal of Statistics 6(2):65-70, 1979.
    .. [3] Y. Benjamini and Y. Hochberg, "Controlling the False Discovery Rate",
       J. R. Statist. Soc. B 57(1):289-300, 1995.
    .. [4] R. E. Tarone, "A Modified Bonferroni Method for Discrete Data",
       Biometrics 46(2):515-522, 1990.
    .. [5] G. Hommel and T. Krummenauer, "Improvements and Modifications of
       Tarone's Multiple Test Procedure for Discrete Data", Biometrics
       54(2):673-681, 1998.
    .. [6] R. D. Boschloo, "Raised conditional level of significance for the
       2×2-table when testing the equality of two probabilities", Statistica
       Neerlandica 24(1):1-9, 1970.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha = {alpha} must lie in (0, 1)")
    ca, cb = np.asarray(cmp.a.passes, dtype=np.int64), np.asarray(cmp.b.passes, dtype=np.int64)
    na, nb = np.asarray(cmp.a.n, dtype=np.int64), np.asarray(cmp.b.n, dtype=np.int64)
    both = (na > 0) & (nb > 0)
    eps = 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = cb / np.where(nb > 0, nb, 1) - ca / np.where(na > 0, na, 1)
    changed = both & (np.abs(delta) > eps)
    tested = bool(np.any(both & ((na > 1) | (nb > 1))))
    t = len(cmp.tasks)
    run = both if tested else np.zeros(t, dtype=bool)
    p, p_min = np.full(t, np.nan), np.ones(t)
    if run.any():
        p[run] = fisher_table_pvalues(ca[run], na[run], cb[run], nb[run])
        p_min[run] = fisher_min_pvalues(na[run], nb[run], (ca + cb)[run])
    p_holm, family_mask = holm_over_family(p, p_min, run, alpha)
    open_mask = run & (p_min < 1.0)
    q_bh = np.where(run, 1.0, np.nan)
    q_bh[open_mask] = benjamini_hochberg(p[open_mask])
    flipped = changed & (np.nan_to_num(p_holm, nan=1.0) < alpha)
    return PerTaskTests(
        comparison=cmp, p_value=p, p_adjusted=p_holm, q_value=q_bh,
        flipped=flipped, changed=changed, alpha=alpha, tested=tested, family=int(family_mask.sum()),
    )


def fisher_table_pvalues(ca: Ints, na: Ints, cb: Ints,
                         nb: Ints) -> Floats:
    """:func:`~flaketui.stats.exact.fisher_pvalue` per task, once per distinct table."""
    tables = np.stack([ca, na, cb, nb], axis=1).astype(np.int64)
    if tables.shape[0] == 0:
        return np.zeros(0)
    distinct, inverse = np.unique(tables, axis=0, return_inverse=True)
    values = np.array([fisher_pvalue(*row) for row in distinct.tolist()], dtype=np.float64)
    return values[np.ravel(inverse)]


def fisher_min_pvalues(na: Ints, nb: Ints, k: Ints) -> Floats:
    """The smallest two-sided Fisher p-value any table with these margins can give, per task.

    The hypergeometric law is unimodal, so the least likely table, and with it
    the smallest p-value, is one of the two extreme tables (as few or as many
    of the K passes in run A as the margins allow).
    """
    margins = np.stack([na, nb, k], axis=1).astype(np.int64)
    if margins.shape[0] == 0:
        return np.zeros(0)
    distinct, inverse = np.unique(margins, axis=0, return_inverse=True)
    values = []
    for a, b, kk in distinct.tolist():
        lo, hi = max(0, a - (a + b - kk)), min(kk, a)
        values.append(min(fisher_pvalue(lo, a, kk - lo, b), fisher_pvalue(hi, a, kk - hi, b)))
    return np.array(values, dtype=np.float64)[np.ravel(inverse)]


def tarone_family(p_min: Floats, alpha: float) -> Bools:
    """Tarone's family: the tests with p_min < α/K for the smallest K ≥ their number.

    M(K) = #{p_min < α/K} falls as K grows; K is the first with M(K) ≤ K.

    Examples
    --------
    >>> tarone_family(np.array([1e-4, 1e-4, 0.2, 1.0]), 0.05).tolist()
    [True, True, False, False]
    """
    p_min = np.asarray(p_min, dtype=np.float64)
    m = p_min.shape[0]
    if m == 0:
        return np.zeros(0, dtype=bool)
    ks = np.arange(1, m + 1)
    counts = np.searchsorted(np.sort(p_min), alpha / ks, side="left")
    k = int(ks[np.argmax(counts <= ks)])
    return p_min < alpha / k


def holm_over_family(p: Floats, p_min: Floats, tested: Bools,
                     alpha: float) -> tuple[Floats, Bools]:
    """Holm's adjusted p of each tested task over Tarone's family of them, and that family.

    A tested task outside the family (its smallest attainable p could not reach α/K) gets 1; an
    untested one NaN. Counting only the tasks that could reach significance keeps Holm's
    family-wise error while not spending α on tasks with too few trials to flip (Tarone 1990;
    Hommel and Krummenauer 1998).
    """
    family = np.zeros(p.shape, dtype=bool)
    family[tested] = tarone_family(p_min[tested], alpha)
    adjusted = np.where(tested, 1.0, np.nan)
    adjusted[family] = holm(p[family])
    return adjusted, family


def holm(p: Floats) -> Floats:
    """Holm's step-down adjusted p-values.

    Sorted ascending, p_(i) is multiplied by (m − i + 1), made non-decreasing
    by a running maximum and capped at 1 (Holm 1979; as
    ``statsmodels.stats.multitest.multipletests(method="holm")``).

    Examples
    --------
    >>> holm(np.array([0.01, 0.04, 0.03])).round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    return _in_order(p, lambda s, m: np.maximum.accumulate(s * (m - np.arange(m))))


def benjamini_hochberg(p: Floats) -> Floats:
    """Benjamini–Hochberg q-values (step-up false discovery rate).

    Sorted ascending, q_(i) = min_{j ≥ i} p_(j)·m/j, capped at 1 (Benjamini
    and Hochberg 1995; as ``multipletests(method="fdr_bh")``).

    Examples
    --------
    >>> benjamini_hochberg(np.array([0.01, 0.04, 0.03])).round(3).tolist()
    [0.03, 0.04, 0.04]
    """
    return _in_order(p, lambda s, m: np.minimum.accumulate((s * m / np.arange(1, m + 1))[::-1])[::-1])


def _in_order(p: Floats, adjust: Callable[[Floats, int], Floats]
              ) -> Floats:
    """``adjust`` applied to the p-values sorted ascending, capped at 1, in the original order."""
    p = np.asarray(p, dtype=np.float64)
    m = p.shape[0]
    order = np.argsort(p, kind="stable")
    out = np.empty(m)
    out[order] = np.minimum(1.0, adjust(p[order], m)) if m else p
    return out
