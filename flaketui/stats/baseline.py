"""Every other run against one baseline run, with Holm's adjustment across the comparisons.

With N runs and one baseline there are N − 1 paired comparisons; testing each
at α would name a difference by chance alone far more often than α. The primary
test's p-values (:func:`flaketui.stats.stratified.within_task_test`, the test
every verdict rests on) are adjusted with Holm's step-down procedure
(:func:`flaketui.stats.pertask.holm`), which keeps the family-wise error rate
across the N − 1 comparisons at α.

No Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flaketui.stats.paired import PairedComparison, compare_runs
from flaketui.stats.pertask import holm
from flaketui.stats.suite import TaskStats


@dataclass(frozen=True)
class BaselineComparisons:
    """Each other run compared with the baseline; ``p_adjusted`` aligned with ``comparisons``."""

    baseline: str
    comparisons: list[PairedComparison]
    p_adjusted: list[float]
    """The primary test's p-values, Holm-adjusted across the comparisons."""
    alpha: float

    def significant(self, i: int) -> bool:
        """Comparison ``i`` differs from the baseline after Holm's adjustment."""
        return self.p_adjusted[i] < self.alpha


def against_baseline(stats: Sequence[TaskStats], baseline: str, alpha: float = 0.05) -> BaselineComparisons:
    """Compare every run in ``stats`` other than ``baseline`` (as B) against it (as A).

    References
    ----------
    .. [1] S. Holm, "A Simple Sequentially Rejective Multiple Test Procedure",
       Scandinavian Journal of Statistics 6(2):65-70, 1979.
    """
    by_run = {st.run: st for st in stats}
    if baseline not in by_run:
        raise ValueError(f"no run named {baseline!r}")
    base = by_run[baseline]
    comps = [compare_runs(base, st) for st in stats if st.run != baseline]
    p = np.array([c.primary.pvalue for c in comps], dtype=np.float64)
    return BaselineComparisons(baseline, comps, holm(p).tolist() if comps else [], alpha)
