"""Suite pass@k and pass^k projected beyond the trials measured.

Pure numpy: no Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from flaketui.stats.estimators import CONFIDENCE, p_hat, pass_at_k, pass_hat_k, wilson_interval

LOW_TEMPERATURE = 0.3
"""At or below this sampling temperature trials are nearly identical (see :func:`projection`)."""

INDEPENDENCE_CAVEAT = (
    "projections assume independent trials: at low temperature trials are nearly "
    "identical, extra samples help little, and pass@k is overstated"
)
"""The caveat shown with every projection of pass@k and pass^k."""


@dataclass(frozen=True)
class ProjectionRow:
    """Suite pass@k and pass^k at one k, measured and projected."""

    k: int
    measured_pass_at_k: float
    """Unbiased estimate over tasks with at least k trials (NaN when none)."""
    measured_pass_hat_k: float
    measured_tasks: int
    pass_at_k: float
    """Projected under independence: mean of 1 − (1 − p̂)^k."""
    pass_hat_k: float
    """Projected under independence: mean of p̂^k."""
    pass_hat_k_low: float
    """Mean of (Wilson lower bound)^k: each task at its pessimistic pass rate."""


def projection(
    n: ArrayLike, c: ArrayLike, ks: Iterable[int], confidence: float = CONFIDENCE
) -> list[ProjectionRow]:
    """Project suite pass@k and pass^k to k beyond the trials measured.

    Per task, under independent trials with pass rate p̂: pass@k = 1 − (1 − p̂)^k
    and pass^k = p̂^k; the suite figure is the mean over tasks (never a mean
    rate raised to the power k). ``pass_hat_k_low`` puts every task at the
    lower bound of its Wilson interval instead, so a task seen passing 12 of
    12 is not projected to pass forever.

    Notes
    -----
    Independence is the whole assumption. At low temperature trials are
    nearly identical, so pass@k barely rises above pass@1 and the projected
    pass@k is too high; pass^k is then closer to pass@1 than to p̂^k.

    References
    ----------
    .. [1] M. Chen et al., "Evaluating Large Language Models Trained on
       Code", arXiv:2107.03374, 2021 (pass@k).
    .. [2] S. Yao, N. Shinn, P. Razavi, K. Narasimhan, "τ-bench: A Benchmark
       for Tool-Agent-User Interaction in Real-World Domains",
       arXiv:2406.12045, 2024 (pass^k).

    Examples
    --------
    >>> row = projection([10, 10], [10, 5], [2])[0]
    >>> round(row.pass_hat_k, 3), round(row.pass_at_k, 3)
    (0.625, 0.875)
    """
    n_arr = np.asarray(n, dtype=np.float64)
    c_arr = np.asarray(c, dtype=np.float64)
    has = n_arr > 0
    p = p_hat(n_arr, c_arr)[has]
    low = wilson_interval(n_arr, c_arr, confidence).low[has]
    rows = []
    for k in sorted(set(int(x) for x in ks)):
        if k < 1:
            raise ValueError(f"k ({k}) must be >= 1")
        enough = has & (n_arr >= k)
        if enough.any():
            m_at = float(np.mean(pass_at_k(n_arr[enough], c_arr[enough], k)))
            m_hat = float(np.mean(pass_hat_k(n_arr[enough], c_arr[enough], k)))
        else:
            m_at = m_hat = float("nan")
        if p.size:
            proj_at = float(np.mean(1 - (1 - p) ** k))
            proj_hat = float(np.mean(p**k))
            proj_low = float(np.mean(low**k))
        else:
            proj_at = proj_hat = proj_low = float("nan")
        rows.append(ProjectionRow(k, m_at, m_hat, int(enough.sum()), proj_at, proj_hat, proj_low))
    return rows
