"""Paired permutation (sign-flip) test of the mean per-task difference between two runs.

The sign test counts only directions; this test uses the sizes of the per-task
differences p̂_B − p̂_A, the same quantity as the mean difference and its CI,
without the normal approximation. Pure numpy: no scipy import.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flaketui.stats.arrays import Floats

EXACT_MAX_UNITS = 16
"""Up to this many non-zero units, all 2^m sign patterns are enumerated (an exact p-value)."""

RESAMPLES = 20_000
"""Monte-Carlo sign patterns beyond :data:`EXACT_MAX_UNITS`; the p-value's SE is ≤ 0.0016 near 0.05."""

NORMAL_MIN_UNITS = 5_000
"""Beyond this many units (none carrying over 1% of Σu²) the sign-flip law is read from its normal limit."""

SEED = 20_241_130
"""Fixed seed: the same comparison gives the same p-value every time."""


@dataclass(frozen=True)
class PermutationTest:
    """Two-sided paired permutation test of the mean difference."""

    mean: float
    pvalue: float
    units: int
    """Tasks (or clusters of tasks) whose sign was flipped; zero differences are left out."""
    exact: bool
    """All sign patterns enumerated; else ``resamples`` random ones (0: the normal limit)."""
    resamples: int
    clustered: bool


def _monte_carlo_hits(units: Floats, threshold: float, resamples: int, seed: int) -> int:
    """How many of ``resamples`` random sign patterns give |Σ ±u| ≥ ``threshold``.

    Each pattern is drawn as random bytes; the sum of the units a byte covers
    is read from a 256-entry table per byte position, so a pattern costs m/8
    look-ups rather than m multiplications.
    """
    m = units.size
    width = (m + 7) // 8
    padded = np.zeros(width * 8)
    padded[:m] = units
    bit_of = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float64)  # 256 × 8
    tables = (bit_of @ padded.reshape(width, 8).T).T  # width × 256: Σ of the units whose bit is set
    positions = np.arange(width)
    total = float(units.sum())
    rng = np.random.default_rng(seed)
    chunk = max(1, 4_000_000 // width)
    hits = done = 0
    while done < resamples:
        rows = min(chunk, resamples - done)
        patterns = rng.integers(0, 256, size=(rows, width), dtype=np.uint8)
        sums = 2 * tables[positions, patterns].sum(axis=1) - total
        hits += int(np.sum(np.abs(sums) >= threshold))
        done += rows
    return hits


def paired_permutation_test(
    diff: Floats,
    groups: Sequence[str | None] | None = None,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    exact_max: int = EXACT_MAX_UNITS,
    normal_min: int = NORMAL_MIN_UNITS,
) -> PermutationTest:
    """Sign-flip test of "the per-task differences are symmetric about 0".

    Parameters
    ----------
    diff : ndarray
        p̂_B − p̂_A per task; NaN entries (a run has no outcome) are left out.
    groups : sequence, optional
        A cluster per task (None: its own). When tasks share clusters, each
        cluster's sum of differences is flipped as one unit, so tasks that move
        together are not counted as independent evidence (as the clustered SE
        of the mean difference does).

    Notes
    -----
    Under the null hypothesis each unit's difference is as likely +d as −d,
    so all 2^m patterns of signs are equally likely; the statistic is the sum
    of the units (the mean difference times the number of tasks), and the
    two-sided p-value is the share of sign patterns whose |sum| is at least the
    observed one (Fisher 1935, §21; Pitman 1937; Good 2005, ch. 3). Up to
    ``exact_max`` non-zero units every pattern is enumerated. Beyond, ``resamples``
    patterns are drawn with a fixed seed and p = (1 + hits)/(1 + resamples),
    which never reports p = 0 and keeps the test valid (Phipson and Smyth
    2010). Beyond ``normal_min`` units, when no unit carries more than 1% of
    Σu², the sum of sign-flipped units is normal to a fraction of a percent
    (mean 0, variance Σu² exactly; Lindeberg's condition) and
    p = erfc(|Σu| / √(2·Σu²)) (Lehmann and Romano 2005, §15.2). Flipping
    cluster sums is the cluster-level randomisation test of Canay, Romano and
    Shaikh (2017).

    References
    ----------
    .. [1] R. A. Fisher, *The Design of Experiments*, 1935, section 21.
    .. [2] E. J. G. Pitman, "Significance tests which may be applied to samples
       from any populations", Suppl. J. R. Statist. Soc. 4(1):119-130, 1937.
    .. [3] P. I. Good, *Permutation, Parametric, and Bootstrap Tests of
       Hypotheses*, 3rd ed., Springer, 2005.
    .. [4] B. Phipson and G. K. Smyth, "Permutation P-values Should Never Be
       Zero", Stat. Appl. Genet. Mol. Biol. 9(1), 2010.
    .. [5] E. L. Lehmann and J. P. Romano, *Testing Statistical Hypotheses*,
       3rd ed., Springer, 2005, section 15.2 (the large-sample permutation law).
    .. [6] I. A. Canay, J. P. Romano and A. M. Shaikh, "Randomization Tests
       Under an Approximate Symmetry Assumption", Econometrica 85(3):1013-1030, 2017.

    Examples
    --------
    Of the 16 sign patterns of (0.5, 0.25, 0.75, −0.25), six have |sum| ≥ 1.25:

    >>> paired_permutation_test(np.array([0.5, 0.25, 0.75, -0.25])).pvalue
    0.375
    """
    x = np.asarray(diff, dtype=np.float64)
    keep = ~np.isnan(x)
    x = x[keep]
    if x.size == 0:
        return PermutationTest(float("nan"), 1.0, 0, True, 0, False)
    mean = float(x.mean())
    clustered = False
    units = x
    if groups is not None:
        kept = [g for g, k in zip(groups, keep.tolist(), strict=True) if k]
        labels = np.array([g if g is not None else f"\0task{i}" for i, g in enumerate(kept)], dtype=object)
        _, cluster = np.unique(labels.astype(str), return_inverse=True)
        if int(cluster.max()) + 1 < x.size:
            clustered = True
            units = np.bincount(cluster, weights=x)
    units = units[np.abs(units) > 1e-12]
    m = units.size
    if m == 0:
        return PermutationTest(mean, 1.0, 0, True, 0, clustered)
    observed = abs(float(units.sum()))
    # The law of Σ ±u is that of Σ ±|u|: drawing signs for the sorted |u| makes the p-value the
    # same whichever run is A and whatever order the tasks come in (the Monte-Carlo draws too).
    units = np.sort(np.abs(units))
    # Sums equal in exact arithmetic may differ in the last bits: count them as ties.
    threshold = observed - 1e-9 * max(1.0, observed)
    if m <= exact_max:
        patterns = ((np.arange(1 << m)[:, None] >> np.arange(m)) & 1).astype(np.float64)
        sums = (2 * patterns - 1) @ units
        p = float(np.mean(np.abs(sums) >= threshold))
        return PermutationTest(mean, p, m, True, 0, clustered)
    if m > normal_min and float(np.max(units**2)) <= 0.01 * float(np.sum(units**2)):
        z = observed / math.sqrt(float(np.sum(units**2)))
        return PermutationTest(mean, math.erfc(z / math.sqrt(2)), m, False, 0, clustered)
    hits = _monte_carlo_hits(units, threshold, resamples, seed)
    return PermutationTest(mean, (1 + hits) / (1 + resamples), m, False, resamples, clustered)
